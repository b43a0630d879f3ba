// The xreduce Python package's extension: the library's reductions, validation, backends and
// configuration over arrays read in place (array_input.hpp).

#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "array_input.hpp"
#include "call.hpp"
#include "config_binding.hpp"
#include "distributed_binding.hpp"
#include "state.hpp"
#include "xreduce/backend/features.hpp"
#include "xreduce/backend/registry.hpp"
#include "xreduce/version.hpp"
#include "xreduce/xreduce.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace xreduce::python {

nb::object to_python(const Scalar& s) {
  return visit_dtype(s.dtype(), [&](auto tag) -> nb::object {
    using T = decltype(tag);
    if constexpr (is_float_v<T>)
      return nb::float_(static_cast<double>(s.get<T>()));
    else if constexpr (std::is_same_v<T, bool>)
      return nb::bool_(s.get<T>());
    else
      return nb::int_(s.get<T>());
  });
}

nb::object value_of(const Scalar& value, const std::vector<Scalar>& columns) {
  if (columns.empty()) return to_python(value);
  nb::list out;
  for (const Scalar& c : columns) out.append(to_python(c));
  return out;
}

nb::object rows_of(const std::vector<std::uint64_t>& indices) {
  if (indices.empty()) return nb::none();
  nb::list rows;
  for (std::uint64_t i : indices) rows.append(i);
  return rows;
}

Op parse_op_or_throw(const std::string& name) {
  if (auto op = parse_op(name)) return *op;
  std::string names;
  for (Op op : all_ops) names += (names.empty() ? "" : ", ") + std::string(to_string(op));
  throw nb::value_error(("xreduce: unknown op '" + name + "'; choose one of " + names).c_str());
}

Options options_of(const CallOptions& c) {
  Options o;
  if (c.backend) o.backend = *c.backend;
  if (c.accuracy) {
    o.accuracy = parse_accuracy(*c.accuracy);
    if (!o.accuracy)
      throw nb::value_error(("xreduce: unknown accuracy '" + *c.accuracy + "'; choose standard or exact").c_str());
  }
  if (c.threads < 0) throw nb::value_error("xreduce: threads must be 0 (all) or more");
  if (c.block_size < 0) throw nb::value_error("xreduce: block_size must be 0 (the backend's default) or more");
  o.threads = c.threads;
  if (c.block_size != 0) {
    // The old spelling of the CUDA setting: still read, for the backends that take it.
    if (PyErr_WarnEx(PyExc_DeprecationWarning,
                     "xreduce: block_size= is the CUDA backends' setting now: settings={'block_size': '256'}", 1) < 0)
      throw nb::python_error();  // warnings turned into errors
    o.block_size = c.block_size;
  }
  for (const auto& [key, value] : c.settings) o.settings.set(key, value, "settings=");
  o.result_dtype = c.result_dtype;
  return o;
}

//! dtype=: a name ("float32", "f32", "float64", "double", numpy's and torch's integer names...), a
//! numpy dtype or scalar type, a torch dtype, or Python's float (float64, as numpy reads it); None:
//! unset.
std::optional<DType> result_dtype_of(nb::handle d) {
  if (d.is_none()) return std::nullopt;
  std::string name;
  if (nb::isinstance<nb::str>(d)) name = nb::cast<std::string>(d);
  else if (PyType_Check(d.ptr())) name = nb::cast<std::string>(d.attr("__name__"));  // numpy.float32, float
  else name = nb::cast<std::string>(nb::str(d));  // numpy.dtype('float32'), torch.float32
  if (name.rfind("torch.", 0) == 0) name = name.substr(6);
  for (DType t : all_dtypes)
    if (name == numpy_name(t)) return t;
  // numpy's and torch's other spellings of the float types (Python's float is float64, as numpy reads it).
  static const std::map<std::string, DType> aliases{{"half", DType::f16},   {"single", DType::f32}, {"float", DType::f64},
                                                    {"double", DType::f64}, {"f2", DType::f16},     {"f4", DType::f32},
                                                    {"f8", DType::f64}};
  if (auto it = aliases.find(name); it != aliases.end()) return it->second;
  if (auto t = parse_dtype(name)) return t;
  throw nb::value_error(("xreduce: dtype " + name + " is not an element type; a float sum's result can be float32 or float64").c_str());
}

// --- results of axis= --------------------------------------------------------------------------

//! A fresh numpy array of `shape` for values of `t` (bfloat16 in uint16 storage: numpy has no
//! bfloat16 of its own), and where its elements are.
std::pair<nb::object, void*> numpy_empty(const std::vector<std::int64_t>& shape, DType t) {
  nb::list extents;
  for (std::int64_t e : shape) extents.append(e);
  nb::object array = nb::module_::import_("numpy").attr("empty")(nb::tuple(extents), t == DType::bf16 ? "uint16" : numpy_name(t).c_str());
  return {array, reinterpret_cast<void*>(nb::cast<std::uintptr_t>(array.attr("ctypes").attr("data")))};
}

namespace {

//! `array` (numpy, of element type `t`) as a JAX array on x's device. Without jax_enable_x64
//! (JAX's default) JAX holds no 64-bit integers, and its own sums and argmax give 32-bit ones:
//! 64-bit sums and indices come back as int32 (uint32) where every value fits, and raise
//! OverflowError where one does not, instead of wrapping as asarray would. f64 results are JAX's
//! to narrow (it warns).
nb::object as_jax(nb::handle x, nb::object array, DType t) {
  nb::module_ jax = nb::module_::import_("jax");
  if (!is_floating(t) && size_of(t) == 8 && !nb::cast<bool>(jax.attr("config").attr("jax_enable_x64"))) {
    const bool is_signed = is_signed_integer(t);
    const char* narrow = is_signed ? "int32" : "uint32";
    bool fits = true;
    if (nb::cast<std::size_t>(array.attr("size")) > 0) {
      if (is_signed)
        fits = nb::cast<std::int64_t>(array.attr("min")()) >= std::numeric_limits<std::int32_t>::min() &&
               nb::cast<std::int64_t>(array.attr("max")()) <= std::numeric_limits<std::int32_t>::max();
      else
        fits = nb::cast<std::uint64_t>(array.attr("max")()) <= std::numeric_limits<std::uint32_t>::max();
    }
    if (!fits) {
      const std::string message = std::string("xreduce: a result past ") + narrow +
                                  ", the widest integer JAX holds without jax_enable_x64: "
                                  "jax.config.update('jax_enable_x64', True) gives it as " +
                                  (is_signed ? "int64" : "uint64");
      PyErr_SetString(PyExc_OverflowError, message.c_str());
      throw nb::python_error();
    }
    array = array.attr("astype")(narrow);
  }
  // On x's device (JAX would put it on its default one, a GPU where it sees one).
  nb::object devices = x.attr("devices")();
  if (nb::len(devices) == 1) return jax.attr("device_put")(array, devices.attr("pop")());  // a set of its own
  return nb::module_::import_("jax.numpy").attr("asarray")(array);
}

//! `array` (numpy, of element type `t`) as the library of `x` holds arrays: a PyTorch tensor on
//! x's device, a CuPy array, a JAX array, else numpy's own (bfloat16 as ml_dtypes' type where it
//! is installed, else its uint16 bits).
nb::object like_input(nb::handle x, nb::object array, DType t) {
  const std::string module = nb::cast<std::string>(nb::handle(x.type()).attr("__module__"));
  auto from = [&](const char* library) { return module.rfind(library, 0) == 0; };
  if (from("torch")) {
    nb::module_ torch = nb::module_::import_("torch");
    nb::object tensor = t == DType::bf16 ? torch.attr("from_numpy")(array.attr("view")("int16")).attr("view")(torch.attr("bfloat16"))
                                         : torch.attr("from_numpy")(array);
    return nb::cast<bool>(x.attr("is_cuda")) ? tensor.attr("to")(x.attr("device")) : tensor;
  }
  if (t == DType::bf16) {
    try {
      array = array.attr("view")(nb::module_::import_("ml_dtypes").attr("bfloat16"));
    } catch (nb::python_error&) {
      // no ml_dtypes: the bits, as uint16
    }
  }
  if (from("cupy")) return nb::module_::import_("cupy").attr("asarray")(array);
  if (from("jax")) return as_jax(x, array, t);
  return array;
}

//! Writes the results `values` (each of `bytes`) into the numpy array at `data`.
}  // namespace

ResultArrays::ResultArrays(const std::vector<std::int64_t>& shape, DType type, bool index) : value_bytes(size_of(type)) {
  std::tie(values, values_at) = numpy_empty(shape, type);
  if (index) {
    void* at = nullptr;
    std::tie(indices, at) = numpy_empty(shape, DType::i64);
    indices_at = static_cast<std::uint64_t*>(at);
  }
}

void ResultArrays::put(const std::vector<Scalar>& values, const std::vector<std::uint64_t>& indices) const {
  for (std::size_t i = 0; i < values.size(); ++i)
    std::memcpy(static_cast<unsigned char*>(values_at) + i * value_bytes, values[i].bytes(), value_bytes);
  if (indices_at) std::copy(indices.begin(), indices.end(), indices_at);
}

Result reduce_released(Context& context, const Request& q, const Options& options, double* seconds) {
  nb::gil_scoped_release release;  // other Python threads run while this one reduces
  const auto start = std::chrono::steady_clock::now();
  Result r = context.reduce(q, options);
  *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

namespace {

//! correction= is var's and std's: refused for ops without either rather than ignored.
void check_correction(OpSet ops, double correction) {
  if (correction == 0 || ops.contains(Op::var) || ops.contains(Op::std) || ops.contains(Op::nanvar) || ops.contains(Op::nanstd)) return;
  std::string names;
  for (Op op : all_ops)
    if (ops.contains(op)) names += (names.empty() ? "" : ", ") + std::string(to_string(op));
  throw nb::value_error(("xreduce: correction= is for var and std (and nanvar, nanstd), not " + names).c_str());
}

//! x read for `op` as the call asks: a view with axis= or keepdims=, else flat or in records of width=.
ArrayInput read_for_call(nb::handle x, Op op, const CallOptions& call) {
  const bool view = !call.axis.is_none() || call.keepdims;
  if (view && call.width > 1)
    throw nb::value_error("xreduce: width= cuts a flat array into records; an N-D array takes axis= instead");
  ArrayInput in = view ? read_view(x, op, call.axis, call.keepdims) : read_array(x, op, call.width, call.copy);
  in.request.correction = call.correction;
  return in;
}

//! nanargmin and nanargmax of an all-NaN slice have no index: numpy's ValueError.
void check_all_nan(Op op, bool any_without_index) {
  if ((op == Op::nanargmin || op == Op::nanargmax) && any_without_index)
    throw nb::value_error(("xreduce: " + std::string(to_string(op)) + ": All-NaN slice encountered").c_str());
}

//! One op's results in a view's arrays (written there by the backend, or put there from a device
//! result) as a PyResult in x's own library; an all-NaN slice of nanargmin/nanargmax refused.
PyResult arrays_result(nb::handle x, Op op, const ResultArrays& arrays, DType type, std::size_t count) {
  const std::uint64_t* at = arrays.indices_at;
  if (at) check_all_nan(op, std::find(at, at + count, no_index) != at + count);
  return {like_input(x, arrays.values, type), std::nullopt, at ? like_input(x, arrays.indices, DType::i64) : nb::none()};
}

//! One op's results of a flat array or of records as a PyResult; an all-NaN array refused as above.
PyResult scalar_result(Op op, const Scalar& value, std::optional<std::uint64_t> index, const std::vector<Scalar>& values,
                       const std::vector<std::uint64_t>& indices) {
  check_all_nan(op, index == no_index || std::find(indices.begin(), indices.end(), no_index) != indices.end());
  return {value_of(value, values), index, rows_of(indices)};
}

//! What op's own function (xreduce.sum, xreduce.argmax, ...) returns: the value, or for argmin
//! and argmax the index (the indices' list or array where there are several).
nb::object function_value(Op op, const PyResult& r) {
  if (!returns_index(op)) return r.value;
  return r.indices.is_none() ? nb::cast(*r.index) : r.indices;
}

PyResult run(nb::handle x, const std::string& op_name, const CallOptions& call) {
  const Op op = parse_op_or_throw(op_name);
  check_correction(OpSet{op}, call.correction);
  const Options options = options_of(call);
  ArrayInput in = read_for_call(x, op, call);
  std::shared_ptr<Context> context = State::get().context();
  double seconds = 0;
  // A view's results: an array of `shape`, or (empty) one result. Flat and record calls skip it.
  const std::vector<std::int64_t> shape = in.view ? result_shape(in.request) : std::vector<std::int64_t>{};
  PyResult out;
  if (!shape.empty()) {
    // An array of results, in x's own library. Host data: written by the backend straight into
    // the numpy arrays; device data: come back in Result::values and are copied there.
    const DType type = result_dtype(in.request.dtype, op, options.result_dtype);
    const ResultArrays arrays(shape, type, returns_index(op));
    if (!in.device) {
      in.request.out = arrays.values_at;
      in.request.out_index = arrays.indices_at;
    }
    Result r = reduce_released(*context, in.request, options, &seconds);
    if (in.device) arrays.put(r.values, r.indices);
    out = arrays_result(x, op, arrays, type, result_count(in.request));
    out.backend = std::move(r.backend);
  } else {
    Result r = reduce_released(*context, in.request, options, &seconds);
    out = scalar_result(op, r.value, r.index, r.values, r.indices);
    out.backend = std::move(r.backend);
  }
  out.seconds = seconds;
  return out;
}

//! reduce_ops' `ops`: a sequence of op names, or one string of them separated by commas (as the
//! command's --ops), each named once.
std::vector<Op> ops_of(nb::handle names) {
  std::vector<std::string> items;
  if (nb::isinstance<nb::str>(names)) {
    for (nb::handle item : names.attr("split")(",")) items.push_back(nb::cast<std::string>(item.attr("strip")()));
  } else {
    try {
      for (nb::handle item : names) {
        if (!nb::isinstance<nb::str>(item))
          throw nb::type_error(("xreduce.reduce_ops: ops are names of ops (str), got " + std::string(nb::type_name(item.type()).c_str())).c_str());
        items.push_back(nb::cast<std::string>(item));
      }
    } catch (nb::python_error& e) {
      if (!e.matches(PyExc_TypeError)) throw;
      throw nb::type_error(("xreduce.reduce_ops: ops is a sequence of op names or one string of them, got " +
                            std::string(nb::type_name(names.type()).c_str()))
                               .c_str());
    }
  }
  if (items.empty() || (items.size() == 1 && items[0].empty())) throw nb::value_error("xreduce.reduce_ops: name at least one op");
  std::vector<Op> ops;
  OpSet seen;
  for (const std::string& name : items) {
    const Op op = parse_op_or_throw(name);
    if (seen.contains(op)) throw nb::value_error(("xreduce.reduce_ops: " + name + " is named twice").c_str());
    seen.add(op);
    ops.push_back(op);
  }
  return ops;
}

//! Several ops in one read of x (Request::ops): a dict of each op's name to what its own function
//! (xreduce.sum, xreduce.argmax, ...) returns, in the order named.
nb::dict run_ops(nb::handle x, nb::handle names, const CallOptions& call) {
  const std::vector<Op> order = ops_of(names);
  OpSet ops;
  for (Op op : order) ops.add(op);
  check_correction(ops, call.correction);
  const Options options = options_of(call);
  ArrayInput in = read_for_call(x, ops.first(), call);
  in.request.ops = ops;
  std::shared_ptr<Context> context = State::get().context();
  double seconds = 0;
  const std::vector<std::int64_t> shape = in.view ? result_shape(in.request) : std::vector<std::int64_t>{};
  nb::dict out;
  if (!shape.empty()) {
    // Each op's results in an array of its own: written there by the backend (host data) or
    // copied from Result::ops (device data), as run does for one op.
    auto type_of = [&](Op op) { return result_dtype(in.request.dtype, op, options.result_dtype); };
    std::vector<ResultArrays> arrays;
    arrays.reserve(order.size());
    OpsOut into;
    for (Op op : order) {
      const ResultArrays& a = arrays.emplace_back(shape, type_of(op), returns_index(op));
      into.values[static_cast<int>(op)] = a.values_at;
      into.indices[static_cast<int>(op)] = a.indices_at;
    }
    if (!in.device) in.request.ops_out = &into;
    const Result r = reduce_released(*context, in.request, options, &seconds);
    for (std::size_t k = 0; k < order.size(); ++k) {
      const Op op = order[k];
      if (in.device) arrays[k].put(r.of(op).values, r.of(op).indices);
      out[std::string(to_string(op)).c_str()] = function_value(op, arrays_result(x, op, arrays[k], type_of(op), result_count(in.request)));
    }
    return out;
  }
  const Result r = reduce_released(*context, in.request, options, &seconds);
  for (Op op : order) {
    const OpResult& o = r.of(op);
    out[std::string(to_string(op)).c_str()] = function_value(op, scalar_result(op, o.value, o.index, o.values, o.indices));
  }
  return out;
}

std::string result_repr(const PyResult& r) {
  std::string s = "Result(value=" + nb::cast<std::string>(nb::repr(r.value));
  if (r.index) s += ", index=" + std::to_string(*r.index);
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.3g", r.seconds);
  return s + ", backend='" + r.backend + "', seconds=" + seconds + ")";
}

// --- validate ----------------------------------------------------------------------------------

struct PyRow {
  std::string backend;
  bool ran = false;
  bool promises = true;
  nb::object value = nb::none();
  std::optional<std::uint64_t> index;
  bool agrees = false;
  double error = 0;
  double seconds = 0;
  std::optional<std::string> failure;
  std::optional<std::string> code;
};

struct PyReport {
  nb::object reference;
  std::optional<std::uint64_t> reference_index;
  std::vector<PyRow> rows;
  bool ok = false;
};

PyReport validate_array(nb::handle x, const std::string& op_name, std::optional<std::vector<std::string>> backends,
                        const CallOptions& call) {
  const Op op = parse_op_or_throw(op_name);
  const Options options = options_of(call);
  check_correction(OpSet{op}, call.correction);
  ArrayInput in = read_array(x, op, call.width, call.copy);
  in.request.correction = call.correction;
  if (in.device)
    throw nb::value_error("xreduce.validate: the exact reference is computed from host memory; pass a host copy "
                          "(x.cpu() for PyTorch, x.get() for CuPy)");
  std::shared_ptr<Context> context = State::get().context();
  ValidationReport report;
  {
    nb::gil_scoped_release release;
    report = validate(*context, in.request, options, backends.value_or(std::vector<std::string>{}));
  }
  PyReport out;
  std::vector<Scalar> columns;
  for (const Reference& c : report.reference.results) columns.push_back(c.value);
  out.reference = value_of(report.reference.value, columns);
  out.reference_index = report.reference.index;
  out.ok = report.ok();
  for (const ValidationRow& row : report.rows) {
    PyRow r;
    r.backend = row.backend;
    r.ran = row.ran;
    r.promises = row.exact;
    if (row.result) {
      r.value = value_of(row.result->value, row.result->values);
      r.index = row.result->index;
    }
    r.agrees = row.agrees;
    r.error = row.error;
    r.seconds = row.seconds;
    if (!row.ran) {
      r.failure = row.failure;
      r.code = std::string(to_string(row.failure_code));
    }
    out.rows.push_back(std::move(r));
  }
  return out;
}

std::string report_text(const PyReport& report) {
  std::string s = "reference " + nb::cast<std::string>(nb::repr(report.reference));
  if (report.reference_index) s += " at index " + std::to_string(*report.reference_index);
  s += "\n";
  for (const PyRow& r : report.rows) {
    char line[512];
    if (r.ran)
      std::snprintf(line, sizeof line, "  %-24s %-26s agrees=%-5s error=%-10.3g %.3g s%s\n", r.backend.c_str(),
                    nb::cast<std::string>(nb::repr(r.value)).c_str(), r.agrees ? "yes" : "NO", r.error, r.seconds,
                    r.promises ? "" : " (makes no accuracy promise)");
    else
      std::snprintf(line, sizeof line, "  %-24s did not run: %s\n", r.backend.c_str(), r.failure->c_str());
    s += line;
  }
  return s + (report.ok ? "ok" : "FAILED");
}

// --- backends ----------------------------------------------------------------------------------

struct PyBackend {
  std::string name, engine, origin, reason;
  int priority = 0;
  bool available = false, host_memory = false, device_memory = false, records = false, exact_sums = false;
  std::map<std::string, std::string> settings;  // key -> default
  std::map<std::string, std::map<std::string, std::string>> support;  // dtype -> op -> exact | inexact
};

std::vector<PyBackend> list_backends() {
  std::shared_ptr<Context> context = State::get().context();
  std::vector<PyBackend> out;
  for (const Registry::Entry& e : context->registry().entries()) {
    const Capabilities c = e.reducer->capabilities();
    const Availability a = e.reducer->available();
    PyBackend b{std::string(e.reducer->name()), std::string(to_string(c.engine())), e.origin, a.reason, e.priority,
                a.ok, c.reads(Memory::host), c.reads(Memory::device), c.takes(Layout::outer), c.takes_exact_sums(), {}, {}};
    for (const SettingInfo& s : e.reducer->settings()) b.settings[s.key] = s.default_value;
    for (DType t : all_dtypes)
      for (Op op : all_ops)
        if (const Support s = c.support(t, op); s != Support::none)
          b.support[numpy_name(t)][std::string(to_string(op))] = std::string(to_string(s));
    out.push_back(std::move(b));
  }
  return out;
}

// --- errors ------------------------------------------------------------------------------------

PyObject* error_type = nullptr;  // xreduce.Error; never released (an object destroyed after the interpreter would crash it)

void translate_errors(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const Error& e) {
    nb::object exception = nb::handle(error_type)(e.what());
    exception.attr("code") = std::string(to_string(e.code()));
    PyErr_SetObject(error_type, exception.ptr());
  }
}

// Keyword arguments every reducing call takes (after backend=, which validate has not), in one place.
auto how_arguments() {
  return std::make_tuple("axis"_a = nb::none(), "keepdims"_a = false, "accuracy"_a = nb::none(), "dtype"_a = nb::none(), "width"_a = 1,
                         "threads"_a = 0, "block_size"_a = 0, "settings"_a = nb::none(), "copy"_a = false, "correction"_a = 0.0);
}

CallOptions call_options(std::optional<std::string> backend, nb::handle axis, bool keepdims, std::optional<std::string> accuracy,
                         nb::handle dtype, std::size_t width, int threads, int block_size,
                         std::optional<std::map<std::string, std::string>> settings, bool copy, double correction) {
  return {std::move(backend), std::move(accuracy), result_dtype_of(dtype), width, threads, block_size,
          settings.value_or(std::map<std::string, std::string>{}), copy, nb::borrow(axis), keepdims, correction};
}

constexpr const char* kCallArgumentsDoc = R"(
    backend: a backend name (``xreduce.backends()``) or ``"auto"``; None: ``xreduce.config.backend``
        (validate takes ``backends``, a list of names; None: every backend that can take x).
    axis: the axes to reduce, as numpy's: an int or a tuple of ints, negative from the end; None:
        every axis. With axis (or keepdims), the result is an array of the kept axes (argmin and
        argmax: int64 indices along the reduced axes, flattened in C order where there are
        several), in x's own library: numpy for numpy, a tensor on x's device for PyTorch, a
        CuPy or JAX array for those. Without them, a Python float or int (argmin and argmax: the
        index into x flattened in C order). Any strides are read in place (transposes, slices,
        negative steps) on the host; on a GPU, the layouts its backends have (``xreduce.backends()``).
    keepdims: the reduced axes stay in the result's shape, with extent 1 (numpy's keepdims).
    accuracy: ``"exact"``: a float sum, mean or variance is the exact value rounded once (the
        same bits on every backend; std is the square root of that variance, rounded once more);
        ``"standard"``: within the documented tolerance, fast; None: the config's.
    dtype: sums, products, sums of squares and float statistics (mean, var, std, the norms,
        logsumexp) of floats: the result's type, float32 or float64 as wide as x's or wider (a
        name, a numpy or torch dtype); the value is rounded once to it: the float32 sum of a
        million float16 values is finite where their float16 sum is not. None: x's own type
        (ints and bools: int64 or uint64 sums, float64 statistics).
    width: records of this many values reduced column by column (a C-contiguous (n, width)
        array); the result is then a list of ``width`` values. Not with axis.
    threads: CPU threads for the parallel backends; 0: all.
    block_size: deprecated: ``settings={"block_size": "256"}`` (the CUDA backends' setting).
    settings: the running backend's own settings for this call (``Backend.settings``).
    copy: reduce a C-order copy of a non-contiguous device array, or of a host array cut into
        records by width (made once), instead of refusing it (other host arrays are read in place
        whatever their strides).
    correction: var and std (nanvar, nanstd): the divisor is n - correction (the Array API's
        correction, numpy's ddof): 0 the population's variance, 1 the sample's.

    x is read in place: any object with ``__dlpack__`` (PyTorch, CuPy, JAX, numpy) or the buffer
    protocol, in host memory or in CUDA device memory on its own device. The GIL is released
    while it is reduced.)";

std::string doc(const char* head) { return std::string(head) + "\n" + kCallArgumentsDoc; }

}  // namespace
}  // namespace xreduce::python

NB_MODULE(_core, m) {
  using namespace xreduce;
  using namespace xreduce::python;
  m.doc() = "xreduce: reductions of large arrays on the best engine (CPU loop, oneTBB, OpenMP, CUDA).";
  m.attr("__version__") = XREDUCE_VERSION_STRING;

  error_type = PyErr_NewExceptionWithDoc(
      "xreduce.Error",
      "A failure the library reports. ``code`` names its kind: invalid_argument, empty_input, unsupported, "
      "unavailable, unknown_backend, config, plugin, io, out_of_memory or internal.",
      PyExc_RuntimeError, nullptr);
  if (!error_type) throw nb::python_error();
  m.attr("Error") = nb::handle(error_type);
  nb::register_exception_translator(translate_errors);

  nb::class_<PyResult>(m, "Result", "The outcome of one reduction.")
      .def_prop_ro("value", [](const PyResult& r) { return r.value; }, nb::sig("def value(self) -> float | int | list[float | int]"),
                   "The result: a float or an int (a list of them for width > 1).")
      .def_ro("index", &PyResult::index, "argmin and argmax: the lowest index of the extreme (of the first column for width > 1); else None.")
      .def_prop_ro("indices", [](const PyResult& r) { return r.indices; }, nb::sig("def indices(self) -> list[int] | None"),
                   "argmin and argmax with width > 1: the row of each column's extreme; else None.")
      .def_ro("backend", &PyResult::backend, "The backend that ran (never \"auto\").")
      .def_ro("seconds", &PyResult::seconds, "Wall time of the reduction alone, in seconds.")
      .def("__repr__", &result_repr);

  const auto reduce_fn = [](nb::handle x, const std::string& op, std::optional<std::string> backend, nb::handle axis, bool keepdims,
                            std::optional<std::string> accuracy, nb::handle dtype, std::size_t width, int threads,
                            int block_size, std::optional<std::map<std::string, std::string>> settings, bool copy, double correction) {
    return run(x, op, call_options(backend, axis, keepdims, accuracy, dtype, width, threads, block_size, settings, copy, correction));
  };
  std::apply([&](auto... args) {
    m.def("reduce", reduce_fn, nb::arg("x").none(), "op"_a, nb::kw_only(), "backend"_a = nb::none(), args...,
          doc("Reduces x with op (a name of xreduce.ops: \"sum\", \"mean\", \"nanmax\", ...) and returns a Result\n"
              "(with axis: value an array, and indices an array for argmin and argmax).\n"
              "Raises xreduce.Error (with .code), TypeError or ValueError.").c_str());
  }, how_arguments());

  const auto reduce_ops_fn = [](nb::handle x, nb::handle ops, std::optional<std::string> backend, nb::handle axis, bool keepdims,
                                std::optional<std::string> accuracy, nb::handle dtype, std::size_t width, int threads, int block_size,
                                std::optional<std::map<std::string, std::string>> settings, bool copy, double correction) {
    return run_ops(x, ops, call_options(backend, axis, keepdims, accuracy, dtype, width, threads, block_size, settings, copy, correction));
  };
  std::apply([&](auto... args) {
    m.def("reduce_ops", reduce_ops_fn, nb::arg("x").none(), "ops"_a, nb::kw_only(), "backend"_a = nb::none(), args...,
          nb::sig("def reduce_ops(x: object, ops: str | collections.abc.Sequence[str], *, backend: str | None = None, "
                  "axis: int | tuple[int, ...] | None = None, keepdims: bool = False, accuracy: str | None = None, "
                  "dtype: object = None, width: int = 1, threads: int = 0, block_size: int = 0, "
                  "settings: collections.abc.Mapping[str, str] | None = None, copy: bool = False, "
                  "correction: float = 0.0) -> dict[str, object]"),
          doc("Several ops of x in one read of its elements: ops is a sequence of op names (or one string of them\n"
              "separated by commas, as the command's --ops), every op but prod, each named once. Returns a dict\n"
              "of each name to what that op's own function returns (xreduce.sum, xreduce.argmax, ...), in the\n"
              "order named; each value is the bits that op gives alone for a flat array on the CPU backends,\n"
              "and within that op's own bound otherwise.\n"
              "dtype= is refused (each op's own result type); accuracy=\"exact\" is for the extremes, their\n"
              "indices, counts, any and all (an exact sum, mean or variance is one op at a time). The GPU\n"
              "backends take sum, min, max, argmin, argmax and sumsq together; a statistic among several ops\n"
              "of device data is refused (xreduce.Error, code 'unsupported').").c_str());
  }, how_arguments());

  // One function per operation: the value (the index for argmin and argmax).
  for (Op op : all_ops) {
    const std::string name(to_string(op));
    const auto fn = [op](nb::handle x, std::optional<std::string> backend, nb::handle axis, bool keepdims,
                         std::optional<std::string> accuracy, nb::handle dtype, std::size_t width, int threads, int block_size,
                         std::optional<std::map<std::string, std::string>> settings, bool copy, double correction) -> nb::object {
      return function_value(op, run(x, std::string(to_string(op)), call_options(backend, axis, keepdims, accuracy, dtype, width,
                                                                                 threads, block_size, settings, copy, correction)));
    };
    static constexpr std::array<const char*, all_ops.size()> what{
        "sum", "product", "minimum", "maximum", "minimum", "maximum", "sum of squares", "mean (arithmetic)",
        "variance (divided by n - correction)", "standard deviation (divided by n - correction)", "vector 1-norm (sum of abs(x))",
        "vector 2-norm (Euclidean, without overflow or underflow)", "vector inf-norm (largest abs(x))",
        "log of the sum of exponentials", "number of elements that are not zero (NaN counts)", "truth of any element",
        "truth of every element", "sum, NaN skipped,", "product, NaN skipped,", "minimum, NaN skipped (NaN if all are),",
        "maximum, NaN skipped (NaN if all are),", "minimum, NaN skipped,", "maximum, NaN skipped,", "mean, NaN skipped,",
        "variance, NaN skipped,", "standard deviation, NaN skipped,"};
    static_assert(what.back() != nullptr, "every op needs its description here");
    const std::string nan_note = skips_nan(op) ? " An all-NaN slice has no index: ValueError, as numpy's." : "";
    const std::string head = returns_index(op) ? "The index of the first " + std::string(what[static_cast<int>(op)]) +
                                                     " of x" + (skips_nan(op) ? "" : " (of the first NaN, if any)") +
                                                     "; with axis, an array of them." + nan_note
                                               : "The " + std::string(what[static_cast<int>(op)]) +
                                                     " of x: a float, an int or a bool (a list for width > 1, an array with axis).";
    // The signature spelt out for the stubs, whose return type nanobind cannot infer from nb::object.
    const std::string signature =
        "def " + name + "(x: object, *, backend: str | None = None, axis: int | tuple[int, ...] | None = None, keepdims: bool = False, "
        "accuracy: str | None = None, dtype: object = None, width: int = 1, "
        "threads: int = 0, block_size: int = 0, settings: collections.abc.Mapping[str, str] | None = None, "
        "copy: bool = False, correction: float = 0.0) -> object";
    std::apply([&](auto... args) {
      m.def(name.c_str(), fn, nb::arg("x").none(), nb::kw_only(), "backend"_a = nb::none(), args...,
            nb::sig(signature.c_str()), doc(head.c_str()).c_str());
    }, how_arguments());
  }

  nb::class_<PyRow>(m, "ValidationRow", "One backend's outcome in xreduce.validate.")
      .def_ro("backend", &PyRow::backend)
      .def_ro("ran", &PyRow::ran, "False: failure says why (unsupported, unavailable, an error).")
      .def_ro("promises", &PyRow::promises, "Whether the backend promises the semantics for this combination.")
      .def_ro("value", &PyRow::value, "Its result (None if it did not run).")
      .def_ro("index", &PyRow::index)
      .def_ro("agrees", &PyRow::agrees, "Within the tolerance of the exact reference (bit for bit with accuracy=\"exact\").")
      .def_ro("error", &PyRow::error, "The absolute difference ``abs(value - reference)``.")
      .def_ro("seconds", &PyRow::seconds)
      .def_ro("failure", &PyRow::failure, "Why it did not run.")
      .def_ro("code", &PyRow::code, "The error code of the failure (xreduce.Error.code).")
      .def("__repr__", [](const PyRow& r) {
        return "ValidationRow(backend='" + r.backend + "', " +
               (r.ran ? "value=" + nb::cast<std::string>(nb::repr(r.value)) + ", agrees=" + (r.agrees ? "True" : "False")
                      : "failure=" + nb::cast<std::string>(nb::repr(nb::cast(*r.failure)))) + ")";
      });
  nb::class_<PyReport>(m, "ValidationReport", "Every backend's result against the exact reference.")
      .def_ro("reference", &PyReport::reference, "The exact reference value (a list for width > 1).")
      .def_ro("reference_index", &PyReport::reference_index, "argmin and argmax: the reference index.")
      .def_ro("rows", &PyReport::rows)
      .def_ro("ok", &PyReport::ok,
              "True unless a backend that promises exactness disagreed, or failed for a reason other than being "
              "unavailable here.")
      .def("__bool__", [](const PyReport& r) { return r.ok; })
      .def("__str__", &report_text)
      .def("__repr__", [](const PyReport& r) {
        return "ValidationReport(ok=" + std::string(r.ok ? "True" : "False") + ", rows=" + std::to_string(r.rows.size()) + ")";
      });
  std::apply([&](auto... args) {
    m.def("validate",
          [](nb::handle x, const std::string& op, std::optional<std::vector<std::string>> backends, nb::handle axis,
             bool keepdims, std::optional<std::string> accuracy, nb::handle dtype, std::size_t width, int threads, int block_size,
             std::optional<std::map<std::string, std::string>> settings, bool copy, double correction) {
            if (!dtype.is_none())
              throw nb::value_error("xreduce.validate checks each backend against the exact reference in x's own type: "
                                    "dtype= is for the reducing calls");
            if (!axis.is_none() || keepdims)
              throw nb::value_error("xreduce.validate checks one result a backend: axis= and keepdims= are for the reducing calls");
            return validate_array(x, op, std::move(backends),
                                  call_options(std::nullopt, nb::none(), false, accuracy, nb::none(), width, threads, block_size,
                                               settings, copy, correction));
          },
          nb::arg("x").none(), "op"_a, "backends"_a = nb::none(), nb::kw_only(), args...,
          doc("Runs x through every backend that can take it (or those named in backends) and checks each\n"
              "against the exact reference of host data. Returns a ValidationReport (true if ok).").c_str());
  }, how_arguments());

  nb::class_<PyBackend>(m, "Backend", "A registered backend.")
      .def_ro("name", &PyBackend::name)
      .def_ro("engine", &PyBackend::engine, "cpu-serial, cpu-parallel, gpu or cpu+gpu.")
      .def_ro("priority", &PyBackend::priority, "Higher is preferred by \"auto\" among equals.")
      .def_ro("origin", &PyBackend::origin, "\"built-in\" or the plugin's path.")
      .def_ro("available", &PyBackend::available, "Whether it can run here.")
      .def_ro("reason", &PyBackend::reason, "Why not, when it cannot.")
      .def_ro("host_memory", &PyBackend::host_memory)
      .def_ro("device_memory", &PyBackend::device_memory)
      .def_ro("records", &PyBackend::records, "Whether it reduces records (width > 1).")
      .def_ro("exact_sums", &PyBackend::exact_sums, "Whether it does accuracy=\"exact\".")
      .def_ro("settings", &PyBackend::settings, "Its own settings: key -> default.")
      .def_ro("support", &PyBackend::support,
              "What it reduces: dtype (\"float32\", ...) -> op -> \"exact\" (to the semantics table) or "
              "\"inexact\" (runs, promises no accuracy); others are refused with code 'unsupported'.")
      .def("__repr__", [](const PyBackend& b) {
        return "Backend('" + b.name + "', engine='" + b.engine + "', available=" + (b.available ? "True" : "False") + ")";
      });
  m.def("backends", &list_backends, "Every registered backend, highest priority first.");
  nb::list op_list;
  for (Op op : all_ops) op_list.append(std::string(to_string(op)));
  m.attr("ops") = nb::tuple(op_list);

  bind_config(m);
  bind_distributed(m);
}
