#include "distributed_binding.hpp"

#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "array_input.hpp"
#include "call.hpp"
#include "partials.hpp"
#include "state.hpp"
#include "xreduce/exact.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace xreduce::python {
namespace {

using Words = nb::ndarray<const std::int64_t, nb::c_contig, nb::device::cpu>;

//! The partials in `words` (C order, the last axis of ExactSum::kWords), and the shape before it.
template <class Array>
std::vector<std::int64_t> leading_shape(const Array& words, const char* what) {
  if (words.ndim() < 1 || words.shape(words.ndim() - 1) != ExactSum::kWords)
    throw nb::value_error((std::string("xreduce: ") + what + ": exact partials are arrays whose last axis has " +
                           std::to_string(ExactSum::kWords) + " int64 words")
                              .c_str());
  std::vector<std::int64_t> shape;
  for (std::size_t i = 0; i + 1 < words.ndim(); ++i) shape.push_back(static_cast<std::int64_t>(words.shape(i)));
  return shape;
}

std::size_t elements(const std::vector<std::int64_t>& shape) {
  std::size_t n = 1;
  for (std::int64_t e : shape) n *= static_cast<std::size_t>(e);
  return n;
}

template <class Array>
ExactSum partial_at(const Array& words, std::size_t i) {
  ExactSum s;
  std::memcpy(s.words, words.data() + i * ExactSum::kWords, sizeof s.words);
  return s;
}

//! The float result type named by `dtype` (f16, bf16, f32 or f64).
DType float_type(nb::handle dtype, const char* what) {
  const std::optional<DType> t = result_dtype_of(dtype);
  if (!t || !is_floating(*t))
    throw nb::value_error((std::string("xreduce: ") + what + " rounds to a float type: float16, bfloat16, float32 or float64").c_str());
  return *t;
}

//! An array of `shape` of type `t`, each element `value_at(i)` (a double holding a value of t).
template <class ValueAt>
nb::object rounded_array(const std::vector<std::int64_t>& shape, DType t, ValueAt value_at) {
  auto [array, at] = numpy_empty(shape, t);
  const std::size_t n = elements(shape);
  visit_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_float_v<T>)
      for (std::size_t i = 0; i < n; ++i) static_cast<T*>(at)[i] = value_at(tag, i);
  });
  return array;
}

//! `exact_sums`: the exact partials of x's sum (width 1: one; records: one a column), and with
//! `squares` (width 1 only) those of its squares after them, as an int64 array (k, 72).
nb::object exact_sums(nb::handle x, std::size_t width, bool squares, std::optional<std::string> backend, int threads) {
  if (squares && width != 1) throw nb::value_error("xreduce: the exact partials of squares are of flat arrays (width 1)");
  ArrayInput in = read_array(x, squares ? Op::var : Op::sum, width, /*copy=*/false);
  if (!is_floating(in.request.dtype))
    throw nb::type_error("xreduce: exact partials are of float arrays (an integer sum is exact already)");
  Options options;
  options.accuracy = Accuracy::exact;
  if (backend) options.backend = *backend;
  options.threads = threads;
  double seconds = 0;
  Result r = reduce_released(*State::get().context(), in.request, options, &seconds);
  std::vector<ExactSum> partials = std::move(r.exact);
  if (squares && partials.size() == 1) partials.emplace_back();  // an empty array: no squares either
  auto [array, at] = numpy_empty({static_cast<std::int64_t>(partials.size()), ExactSum::kWords}, DType::i64);
  for (std::size_t i = 0; i < partials.size(); ++i) {
    partials[i].normalize();
    std::memcpy(static_cast<std::int64_t*>(at) + i * ExactSum::kWords, partials[i].words, sizeof partials[i].words);
  }
  return array;
}

// --- the MPI wire format -----------------------------------------------------------------------

//! One rank's partials, their bytes open to mpi4py as a writable numpy array.
struct RankPartials {
  mpi::detail::LocalPartials local;
  double seconds = 0;
  double correction = 0;  //!< var and std: the whole's divisor is n - correction
  bool view = false;       //!< axis= or keepdims=: the results are an array of the whole's result shape
};

//! The element type of an object that could not be read, for identity partials of the size the
//! other ranks send: its `dtype` if it names one, else f64.
DType fallback_dtype(nb::handle x) {
  try {
    if (nb::hasattr(x, "dtype"))
      if (auto t = result_dtype_of(x.attr("dtype"))) return *t;
  } catch (const nb::python_error&) {
  } catch (const nb::builtin_exception&) {
  }
  return DType::f64;
}

RankPartials rank_partials(nb::handle x, const std::string& op_name, int rank, bool with_message, const CallOptions& call) {
  const Op op = parse_op_or_throw(op_name);  // the same on every rank: refused before any collective
  const Options options = options_of(call);
  std::shared_ptr<Context> context = State::get().context();
  const Accuracy accuracy = options.accuracy.value_or(context->config().accuracy);
  RankPartials out{{mpi::detail::Partials(fallback_dtype(x), op, call.width, accuracy, with_message), "(none)", {}}, 0, call.correction};
  // An array this rank cannot read: the others still combine, and learn why.
  auto unreadable = [&](const char* why) {
    out.local.reason = why;
    out.local.partials.set_error(rank, ErrorCode::invalid_argument, out.local.reason);
    return out;
  };
  // axis= or keepdims=: an N-D shard, split along axis 0 with the other ranks' (the wire takes
  // views whose reduced axes include it).
  const bool view = !call.axis.is_none() || call.keepdims;
  if (view && call.width > 1) return unreadable("width= cuts a flat array into records; an N-D array takes axis= instead");
  out.view = view;
  ArrayInput in;
  try {
    in = view ? read_view(x, op, call.axis, call.keepdims) : read_array(x, op, call.width, call.copy);
  } catch (const nb::python_error& e) {
    return unreadable(e.what());
  } catch (const nb::builtin_exception& e) {
    return unreadable(e.what());
  }
  in.request.correction = call.correction;
  nb::gil_scoped_release release;
  const auto start = std::chrono::steady_clock::now();
  out.local = mpi::detail::local_partials(rank, in.request, options, *context, with_message);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

nb::ndarray<nb::numpy, std::uint8_t, nb::ndim<1>> bytes_of(void* data, std::size_t n, nb::handle owner) {
  return nb::ndarray<nb::numpy, std::uint8_t, nb::ndim<1>>(data, {n}, owner);
}

}  // namespace

void bind_distributed(nb::module_& m) {
  m.def("_exact_sums", &exact_sums, nb::arg("x").none(), nb::kw_only(), "width"_a = 1, "squares"_a = false,
        "backend"_a = nb::none(), "threads"_a = 0,
        "The exact partials (ExactSum, 72 int64 words each, normalized) of x's sum: one for a flat x, one a\n"
        "column for records of width; with squares (flat only), then the partial of the squares. An int64\n"
        "array (k, 72). For xreduce.dask; combine by adding word by word, then _exact_normalize.");
  m.def("_exact_normalize",
        [](nb::ndarray<std::int64_t, nb::c_contig, nb::device::cpu> words) {
          const std::size_t n = elements(leading_shape(words, "_exact_normalize"));
          for (std::size_t i = 0; i < n; ++i) {
            ExactSum s = partial_at(words, i);
            s.normalize();
            std::memcpy(words.data() + i * ExactSum::kWords, s.words, sizeof s.words);
          }
        },
        "words"_a, "Propagates the carries of exact partials (int64, last axis 72), in place: the values are unchanged.");
  m.def("_exact_round",
        [](Words words, nb::handle dtype) {
          const DType t = float_type(dtype, "_exact_round");
          return rounded_array(leading_shape(words, "_exact_round"), t, [&](auto tag, std::size_t i) {
            return partial_at(words, i).round<decltype(tag)>();
          });
        },
        "words"_a, "dtype"_a, "Exact partials (int64, last axis 72) rounded once each to dtype: an array of the leading shape.");
  m.def("_exact_moment",
        [](const std::string& op, Words sums, std::optional<Words> squares, double correction, nb::handle dtype) {
          const DType t = float_type(dtype, "_exact_moment");
          const std::vector<std::int64_t> shape = leading_shape(sums, "_exact_moment");
          if (op != "mean" && op != "var" && op != "std") throw nb::value_error("xreduce: _exact_moment: op is mean, var or std");
          if (op != "mean" && (!squares || leading_shape(*squares, "_exact_moment") != shape))
            throw nb::value_error("xreduce: _exact_moment: var and std take the partials of the squares, of the sums' shape");
          return rounded_array(shape, t, [&](auto tag, std::size_t i) {
            using T = decltype(tag);
            const ExactSum s = partial_at(sums, i);
            return op == "mean" ? exact_mean<T>(s) : exact_variance<T>(s, partial_at(*squares, i), correction, op == "std");
          });
        },
        "op"_a, "sums"_a, "squares"_a.none(), "correction"_a, "dtype"_a,
        "The exact mean, var or std from exact partials of x (and of x squared), rounded once to dtype; n is each sum's count.");

  nb::class_<RankPartials>(m, "_RankPartials", "One rank's partials in xreduce_mpi's wire format (xreduce.mpi).")
      .def_prop_ro("buffer", [](nb::handle self) {
            auto& p = nb::cast<RankPartials&>(self);
            return bytes_of(p.local.partials.data(), p.local.partials.bytes(), self);
          }, nb::rv_policy::reference_internal, "The bytes that cross the wire (a writable uint8 view).")
      .def_prop_ro("backend", [](const RankPartials& p) { return p.local.backend; })
      .def_prop_ro("reason", [](const RankPartials& p) { return p.local.reason; }, "Why this rank failed; empty if it did not.")
      .def_prop_ro("error_code", [](const RankPartials& p) { return p.local.partials.header().error_code; })
      .def_prop_ro("error_rank", [](const RankPartials& p) { return p.local.partials.header().error_rank; })
      .def("copy", [](const RankPartials& p) { return p; })
      .def("result",
           [](const RankPartials& p, const std::string& reason, nb::handle dtype) {
             const std::optional<DType> asked = result_dtype_of(dtype);
             Result r = p.local.partials.result(reason, asked, p.correction, p.local.result_shape);
             if (!p.view || p.local.result_shape.empty())  // flat or records: a value, or a list a column
               return PyResult{value_of(r.value, r.values), r.index, rows_of(r.indices), p.local.backend, p.seconds};
             // A view's results (axis=): numpy arrays of the whole's result shape.
             const mpi::detail::Header& h = p.local.partials.header();
             const Op op = static_cast<Op>(h.op);
             const ResultArrays arrays(p.local.result_shape, result_dtype(static_cast<DType>(h.dtype), op, asked), returns_index(op));
             arrays.put(r.values, r.indices);
             return PyResult{arrays.values, std::nullopt, arrays.indices, p.local.backend, p.seconds};
           },
           "reason"_a, "dtype"_a.none(),
           "The whole's Result after the combine; raises xreduce.Error with the failing rank's reason if any rank failed.");
  m.def("_rank_partials",
        [](nb::handle x, const std::string& op, int rank, bool with_message, std::optional<std::string> backend,
           std::optional<std::string> accuracy, nb::handle dtype, std::size_t width, int threads,
           std::optional<std::map<std::string, std::string>> settings, double correction, nb::object axis, bool keepdims) {
          CallOptions call{backend, accuracy, result_dtype_of(dtype), width, threads, 0,
                           settings.value_or(std::map<std::string, std::string>{})};
          call.correction = correction;
          call.axis = std::move(axis);
          call.keepdims = keepdims;
          return rank_partials(x, op, rank, with_message, call);
        },
        nb::arg("x").none(), "op"_a, "rank"_a, "with_message"_a, nb::kw_only(), "backend"_a = nb::none(), "accuracy"_a = nb::none(),
        "dtype"_a = nb::none(), "width"_a = 1, "threads"_a = 0, "settings"_a = nb::none(), "correction"_a = 0.0,
        "axis"_a = nb::none(), "keepdims"_a = false,
        "This rank's shard reduced into its partials (xreduce.mpi); a failure is carried in them, not raised.");
  m.def("_combine_partials",
        [](nb::ndarray<const std::uint8_t, nb::ndim<1>, nb::device::cpu> in, nb::ndarray<std::uint8_t, nb::ndim<1>, nb::device::cpu> inout) {
          if (in.shape(0) != inout.shape(0)) throw nb::value_error("xreduce: partial buffers of different sizes");
          mpi::detail::Partials::combine(in.data(), inout.data(), in.shape(0));
        },
        "in_"_a, "inout"_a, "The MPI operator: combines the lower ranks' partials `in_` into `inout`.");
}

}  // namespace xreduce::python
