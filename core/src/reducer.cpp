// The checks every backend gets for free: Reducer::reduce is the only way into do_reduce.

#include "xreduce/backend/reducer.hpp"

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>

#include "aligned_input.hpp"
#include "exact_statistics.hpp"
#include "results.hpp"
#include "xreduce/error.hpp"

namespace xreduce {
namespace {

[[noreturn]] void invalid(const std::string& why) { throw Error(ErrorCode::invalid_argument, why); }

//! What no backend does, and what a request may not ask, whichever backend runs it.
void check_request(const Request& q, const Request& c, Accuracy accuracy) {
  if (static_cast<unsigned>(q.dtype) >= all_dtypes.size() || static_cast<unsigned>(q.op) >= all_ops.size() ||
      static_cast<unsigned>(q.memory) > static_cast<unsigned>(Memory::device))
    invalid("request has an out-of-range dtype, op or memory value");
  if (c.count > 0 && q.data == nullptr) invalid("request has null data and " + std::to_string(c.count) + " elements");
  if (q.segments.count > 0 && !q.segments.offsets)
    invalid("segments without offsets: equal rows are a view now (Request::rows)");
  const bool several = !q.ops.empty();
  const bool results = detail::returns_values(q, c);
  if (q.out_strides && !q.out) invalid("`out_strides` says where in `out` results go, but there is no `out`");
  if (q.out_strides && c.segments.segmented()) invalid("`out_strides` is for a view's results, not segments'");
  if (several) {
    if (q.out || q.out_index) invalid("a request with several ops writes to `ops_out`, not `out`");
    if (q.ops_out && !results) invalid("`ops_out` is for requests with more than one result: one comes back in Result::ops");
    for (Op op : all_ops)
      if (q.ops.contains(op) && q.ops_out &&
          (!q.ops_out->values[static_cast<int>(op)] || (returns_index(op) && !q.ops_out->indices[static_cast<int>(op)])))
        invalid("`ops_out` has no place for the " + std::string(to_string(op)) + (returns_index(op) ? " values and indices" : " values"));
  } else {
    if ((q.out || q.out_index) && !results) invalid("`out` is for requests with more than one result: one comes back in Result::value");
    if (q.out && returns_index(q.op) && !q.out_index) invalid(std::string(to_string(q.op)) + " into `out` needs `out_index` too");
  }
  if (!(q.correction >= 0) || q.correction == std::numeric_limits<double>::infinity())
    invalid("correction " + std::to_string(q.correction) + ": the divisor of var and std is n - correction, with a finite correction of 0 or more");
  if (accuracy != Accuracy::exact || !is_floating(q.dtype)) return;
  // The ops that round a float result (sums, products, sums of squares, the float statistics); of
  // them the sum, mean, var and std have an exact form, one op at a time.
  auto rounds = [](Op op) { return accumulates(op) || returns_float(op); };
  auto has_exact_form = [](Op op) { return op == Op::sum || exact_statistic(op); };
  if (several)
    for (Op op : all_ops)
      if (q.ops.contains(op) && rounds(op))
        throw Error(ErrorCode::unsupported,
                    "accuracy 'exact' among several ops is for extremes, indices, counts and any/all: " +
                        (has_exact_form(op) ? "ask for the exact " + std::string(to_string(op)) + " alone, one op at a time"
                                            : "no backend rounds a " + std::string(to_string(op)) + " once"));
  if (!several && rounds(q.op) && !has_exact_form(q.op))
    throw Error(ErrorCode::unsupported, "accuracy 'exact' is for sums, mean, var and std: no backend rounds a " +
                                            std::string(to_string(q.op)) + " of " + std::string(to_string(q.dtype)) + " once");
}

//! Options::result_dtype, if set: a type the request's op may return (result_dtype_allowed), for
//! a request of one op whose results the core rounds to it.
void check_result_dtype(const Request& q, const Request& c, const Features& f, std::optional<DType> asked) {
  if (!asked) return;
  if (static_cast<unsigned>(*asked) >= all_dtypes.size()) invalid("result_dtype is out of range");
  if (!q.ops.empty()) invalid("result_dtype is for a request of one op: several ops in one pass keep their own result types");
  const DType own = result_dtype(q.dtype, q.op);
  if (!result_dtype_allowed(q.dtype, q.op, *asked)) {
    std::string choices(to_string(own));
    for (DType t : {DType::f32, DType::f64})
      if (t != own && result_dtype_allowed(q.dtype, q.op, t)) choices += " or " + std::string(to_string(t));
    invalid("result_dtype " + std::string(to_string(*asked)) + " for the " + std::string(to_string(q.op)) + " of " +
            std::string(to_string(q.dtype)) + ": it can be " + choices);
  }
  // An exact sum's partials are rounded by the core to the type asked where the backend hands
  // them on: flat arrays and columns; other layouts round each result in the backend.
  if (*asked != own && f.accuracy == Accuracy::exact && f.layout != Layout::all && f.layout != Layout::outer && c.count > 0)
    throw Error(ErrorCode::unsupported, "an exact sum in another type than the element type (result_dtype " +
                                            std::string(to_string(*asked)) + "): flat arrays and columns (layouts all and outer), not " +
                                            to_string(f));
}

//! A layout-all result of one op: the type `type` (the op's own, or the one asked for), an index
//! exactly for argmin/argmax, an exact sum's partial or a wide result rounded once.
void finish_value(const Features& f, DType type, Op op, double correction, Result& r, const std::string& backend) {
  if (f.accuracy == Accuracy::exact && exact_statistic(op)) {
    r.value = detail::exact_statistic(op, r.exact, correction, type);  // r.exact stays: S (and Q), Result::exact
  } else if (f.accuracy == Accuracy::exact) {
    if (r.exact.size() != 1)
      throw Error(ErrorCode::internal, "backend '" + backend + "' returned " + std::to_string(r.exact.size()) +
                                           " exact partials for an exact sum");
    r.value = detail::rounded(type, r.exact.front());
  } else if (f.wide && r.value.dtype() == DType::f64) {
    r.value = detail::rounded(type, r.value.get<double>());
  }
  r.values.clear();
  if (r.value.dtype() != type || r.index.has_value() != returns_index(op))
    throw Error(ErrorCode::internal, "backend '" + backend + "' returned a " + std::string(to_string(r.value.dtype())) +
                                         (r.index ? " with" : " without") + " an index for " + to_string(f));
}

}  // namespace

Result Reducer::reduce(const Request& q, const Options& options) {
  // Options::block_size, the old spelling of the CUDA module's setting: that setting for a
  // backend that declares it (and unless the settings name it), ignored by the others as before.
  if (options.block_size != 0) {
    Options o = options;
    o.block_size = 0;
    bool declared = false;
    for (const SettingInfo& s : settings()) declared = declared || s.key == "block_size";
    if (declared && !o.settings.find("block_size"))
      o.settings.set("block_size", std::to_string(options.block_size), "Options::block_size");
    return reduce(q, o);
  }
  const Accuracy accuracy = options.accuracy.value_or(Accuracy::standard);
  // A view's canonical form; a flat or ragged request is its own (and is not copied: the small
  // calls' path).
  std::unique_ptr<Request> viewed;
  if (q.view.rank > 0) viewed = std::make_unique<Request>(canonical(q));
  const Request& c = viewed ? *viewed : q;
  check_request(q, c, accuracy);

  const std::string backend(name());
  const Features f = features_of(c, accuracy, options.result_dtype);
  check_result_dtype(q, c, f, options.result_dtype);
  const Capabilities caps = capabilities();
  if (caps.support(f) == Support::none)
    throw Error(ErrorCode::unsupported, "backend '" + backend + "' does not do " + to_string(f) + "; `xreduce list` shows what each backend does");
  if (!options.settings.empty()) options.settings.check_keys(settings(), "backend '" + backend + "'");
  if (Availability a = available(); !a)
    throw Error(ErrorCode::unavailable, "backend '" + backend + "' is unavailable: " + a.reason);

  // Nothing to read: the core answers, but for segments, which each get a result from the
  // backend, and rows of nothing whose results go to device memory, which only a GPU backend
  // writes (each the op's identity).
  const bool device_results = q.memory == Memory::device && (q.out || q.ops_out);
  if (c.count == 0 && !c.segments.segmented()) {
    if (!(device_results && f.layout == Layout::inner)) {
      Result r = detail::empty_result(q, c, f, options.result_dtype);
      r.backend = backend;
      return r;
    }
    detail::check_extremes_of_empty(q, c, f);
  }
  // Misaligned host data is copied to aligned memory; device data is the device module's business.
  const bool host_data = c.memory == Memory::host || (c.memory == Memory::automatic && caps.engine() != Engine::gpu);
  std::unique_ptr<std::uint64_t[]> aligned_copy;
  std::unique_ptr<Request> aligned;
  if (host_data && reinterpret_cast<std::uintptr_t>(c.data) % size_of(c.dtype) != 0)
    aligned = std::make_unique<Request>(detail::with_aligned_data(c, aligned_copy));
  const Request& w = aligned ? *aligned : c;
  // What the backend is told of the result's type: f64 where it returns wide results, else
  // nothing (a type asked for is the core's to round to). Copied only where one was asked for.
  std::optional<Options> told;
  if (options.result_dtype) {
    told = options;
    told->result_dtype = f.wide ? std::optional<DType>(DType::f64) : std::nullopt;
    told->accuracy = f.accuracy == Accuracy::exact ? Accuracy::exact : accuracy;  // device sums run exactly (features_of)
  }
  const Options& run_options = told ? *told : options;
  if (f.layout == Layout::all && !f.several) {
    Result r = do_reduce(w, run_options);
    finish_value(f, result_dtype(c.dtype, c.op, options.result_dtype), c.op, c.correction, r, backend);
    r.backend = backend;
    return r;
  }
  Result r = detail::run_for_results(q, w, f, [&](const Request& with_places) { return do_reduce(with_places, run_options); },
                                     options.result_dtype);
  if (f.layout != Layout::outer) r.exact.clear();  // only flat and column sums hand their partials on
  r.backend = backend;
  return r;
}

}  // namespace xreduce
