// The checks every backend gets for free: Reducer::reduce is the only way into do_reduce.

#include "xreduce/reducer.hpp"

#include <cstdint>
#include <limits>
#include <memory>
#include <string>

#include "aligned_input.hpp"
#include "xreduce/error.hpp"

namespace xreduce {
namespace {

std::string combination(const Request& q) {
  std::string text = std::string(to_string(q.op)) + " of " + std::string(to_string(q.dtype));
  if (q.width > 1) text += " records of width " + std::to_string(q.width);
  return text;
}

Result empty_result(const Request& q, std::string_view backend) {
  DType out = result_dtype(q.dtype, q.op);
  if (!(q.op == Op::sum || q.op == Op::prod))
    throw Error(ErrorCode::empty_input, std::string(to_string(q.op)) + " of an empty array has no value");
  int identity = q.op == Op::sum ? 0 : 1;
  Scalar value = visit_dtype(out, [&](auto tag) { return Scalar(static_cast<decltype(tag)>(identity)); });
  Result r{value, std::nullopt, std::string(backend)};
  if (q.width > 1) r.values.assign(q.width, value);
  return r;
}

void check_width(const Request& q, const Capabilities& caps, const std::string& backend) {
  if (q.width == 0) throw Error(ErrorCode::invalid_argument, "request has width 0: records need at least one value");
  if (q.width == 1) return;
  if (returns_index(q.op))
    throw Error(ErrorCode::unsupported, std::string(to_string(q.op)) + " of records (width " + std::to_string(q.width) +
                                            ") is not defined: records reduce column by column with sum, prod, min or max");
  if (q.count > std::numeric_limits<std::size_t>::max() / q.width / size_of(q.dtype))
    throw Error(ErrorCode::invalid_argument, std::to_string(q.count) + " records of width " + std::to_string(q.width) +
                                                 " overflow the address space");
  if (!caps.records()) throw Error(ErrorCode::unsupported, "backend '" + backend + "' does not reduce records (width > 1)");
}

//! Rounds the backend's exact partials into the result: the one place any exact sum is rounded.
void round_exact(const Request& q, Result& r, const std::string& backend) {
  if (r.exact.size() != q.width)
    throw Error(ErrorCode::internal, "backend '" + backend + "' returned " + std::to_string(r.exact.size()) +
                                         " exact partials for an exact " + combination(q));
  r.values.clear();
  for (const ExactSum& s : r.exact)
    r.values.push_back(q.dtype == DType::f32 ? Scalar(s.round<float>()) : Scalar(s.round<double>()));
  r.value = r.values.front();
  if (q.width == 1) r.values.clear();
}

}  // namespace

Result Reducer::reduce(const Request& q, const Options& options) {
  if (static_cast<unsigned>(q.dtype) >= all_dtypes.size() || static_cast<unsigned>(q.op) >= all_ops.size() ||
      static_cast<unsigned>(q.memory) > static_cast<unsigned>(Memory::device))
    throw Error(ErrorCode::invalid_argument, "request has an out-of-range dtype, op or memory value");
  if (q.count > 0 && q.data == nullptr)
    throw Error(ErrorCode::invalid_argument, "request has null data and count " + std::to_string(q.count));

  const std::string backend(name());
  Capabilities caps = capabilities();
  check_width(q, caps, backend);
  if (caps.support(q.dtype, q.op) == Support::none)
    throw Error(ErrorCode::unsupported, "backend '" + backend + "' does not support " + combination(q));
  const Accuracy accuracy = options.accuracy.value_or(Accuracy::standard);
  const bool exact = exact_sum(q.dtype, q.op, accuracy);
  if (accuracy == Accuracy::exact && q.op == Op::prod && is_floating(q.dtype))
    throw Error(ErrorCode::unsupported, "accuracy 'exact' is for sums: no backend rounds a " + combination(q) + " once");
  if (exact && !caps.exact_sums(q.width > 1))
    throw Error(ErrorCode::unsupported, "backend '" + backend + "' does not do exact " + combination(q) +
                                            " (accuracy 'exact'); `xreduce list` shows which backends do");
  if (!caps.accepts(q.memory))
    throw Error(ErrorCode::unsupported, "backend '" + backend + "' does not read " +
                                            std::string(to_string(q.memory)) + " memory");
  if (!options.settings.empty()) options.settings.check_keys(settings(), "backend '" + backend + "'");
  if (Availability a = available(); !a)
    throw Error(ErrorCode::unavailable, "backend '" + backend + "' is unavailable: " + a.reason);
  if (q.count == 0) {
    Result r = empty_result(q, backend);
    if (exact) r.exact.assign(q.width, ExactSum{});
    return r;
  }

  // Misaligned host data is copied to aligned memory; device data is the device module's business.
  const bool host_data = q.memory == Memory::host || (q.memory == Memory::automatic && caps.engine() != Engine::gpu);
  std::unique_ptr<std::uint64_t[]> aligned_copy;
  Result r = do_reduce(host_data ? detail::with_aligned_data(q, aligned_copy) : q, options);
  if (exact) round_exact(q, r, backend);
  const DType expected = result_dtype(q.dtype, q.op);
  if (q.width > 1) {
    bool typed = r.values.size() == q.width;
    for (const Scalar& v : r.values) typed = typed && v.dtype() == expected;
    if (!typed)
      throw Error(ErrorCode::internal, "backend '" + backend + "' returned " + std::to_string(r.values.size()) +
                                           " column results of the wrong type for " + combination(q));
    r.value = r.values.front();
  } else {
    r.values.clear();
  }
  if (r.value.dtype() != expected || r.index.has_value() != returns_index(q.op))
    throw Error(ErrorCode::internal, "backend '" + backend + "' returned a " + std::string(to_string(r.value.dtype())) +
                                         (r.index ? " with" : " without") + " an index for " + combination(q));
  r.backend = backend;
  return r;
}

}  // namespace xreduce
