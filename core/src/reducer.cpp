// The checks every backend gets for free: Reducer::reduce is the only way into do_reduce.

#include "xreduce/backend/reducer.hpp"

#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

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
  if (!accumulates(q.op))
    throw Error(ErrorCode::empty_input, std::string(to_string(q.op)) + " of an empty array has no value");
  int identity = q.op == Op::prod ? 1 : 0;
  Scalar value = visit_dtype(out, [&](auto tag) { return Scalar(static_cast<decltype(tag)>(identity)); });
  Result r{value, std::nullopt, std::string(backend)};
  if (q.width > 1) r.values.assign(q.width, value);
  return r;
}

//! The checks of a segmented request that need no look at its offsets (the backend checks those,
//! where they are, as it reads them).
void check_segments(const Request& q, const Capabilities& caps, const std::string& backend, bool exact) {
  if (!q.segments.segmented()) return;
  if (!caps.segments()) throw Error(ErrorCode::unsupported, "backend '" + backend + "' does not reduce segments");
  if (exact && !caps.exact_segments())
    throw Error(ErrorCode::unsupported, "backend '" + backend + "' does not do exact sums of segments (accuracy 'exact')");
  if (!q.segments.offsets && q.count % q.segments.count != 0)
    throw Error(ErrorCode::invalid_argument, std::to_string(q.segments.count) + " equal rows do not divide " +
                                                 std::to_string(q.count) + " elements");
  if (q.out && returns_index(q.op) && !q.out_index)
    throw Error(ErrorCode::invalid_argument, std::string(to_string(q.op)) + " of segments into `out` needs `out_index` too");
}

//! `n` packed values of type t. Typed once, not per value: a million segments' results took
//! 17 ns each through Scalar::from_bytes, six times the reduction of their rows of 16.
std::vector<Scalar> unpack(DType t, const std::vector<std::uint64_t>& words, std::size_t n) {
  std::vector<Scalar> values;
  values.reserve(n);
  visit_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    const auto* bytes = reinterpret_cast<const unsigned char*>(words.data());
    for (std::size_t s = 0; s < n; ++s) {
      T v;
      std::memcpy(&v, bytes + s * sizeof(T), sizeof v);
      values.emplace_back(v);
    }
  });
  return values;
}

//! A segmented request without Request::out gets its results in host arrays the core owns, and
//! back as Result::values and Result::indices.
template <class Run>
Result reduce_segments(const Request& q, Run&& run) {
  if (q.out) {
    Result r = run(q);
    r.values.clear();
    r.indices.clear();
    return r;
  }
  const std::size_t n = q.segments.count;
  const DType out_type = result_dtype(q.dtype, q.op);
  std::vector<std::uint64_t> words(n);  // packed values of out_type: 8 bytes hold two 4-byte ones
  std::vector<std::uint64_t> indices(returns_index(q.op) ? n : 0);
  Request with_out = q;
  with_out.out = words.data();
  with_out.out_index = indices.empty() ? nullptr : indices.data();
  Result r = run(with_out);
  r.values = unpack(out_type, words, n);
  r.indices = std::move(indices);
  if (n > 0) {
    r.value = r.values.front();
    if (returns_index(q.op)) r.index = r.indices.front();
  }
  return r;
}

//! The checks of a request with several ops (Request::ops).
void check_ops(const Request& q, const Capabilities& caps, const std::string& backend, Accuracy accuracy) {
  const bool segmented = q.segments.segmented();
  if (q.width > 1)
    throw Error(ErrorCode::invalid_argument, "several ops in one pass are for single values, not records (width " +
                                                 std::to_string(q.width) + ")");
  if (q.out || q.out_index)
    throw Error(ErrorCode::invalid_argument, "a request with several ops writes to `ops_out`, not `out`");
  if (q.ops_out && !segmented)
    throw Error(ErrorCode::invalid_argument, "`ops_out` is for segmented requests: the results of one array come back in Result::stats");
  if (q.ops.contains(Op::prod))
    throw Error(ErrorCode::unsupported, "prod is not among the ops computed together in one pass (sum, min, max, argmin, argmax, sumsq)");
  if (!caps.ops(segmented))
    throw Error(ErrorCode::unsupported, "backend '" + backend + "' does not compute several ops in one pass" +
                                            (segmented && caps.ops() ? " of segments" : ""));
  if (accuracy == Accuracy::exact && is_floating(q.dtype) && (q.ops.contains(Op::sum) || q.ops.contains(Op::sumsq)))
    throw Error(ErrorCode::unsupported, "accuracy 'exact' is for one op at a time: ask for the exact sum alone");
  for (Op s : all_ops) {
    if (!q.ops.contains(s) || !q.ops_out) continue;
    if (!q.ops_out->values[static_cast<int>(s)] || (returns_index(s) && !q.ops_out->indices[static_cast<int>(s)]))
      throw Error(ErrorCode::invalid_argument, "`ops_out` has no place for the " + std::string(to_string(s)) +
                                                   (returns_index(s) ? " values and indices" : " values"));
  }
}

//! Runs a request with several ops: the backend writes each stat's results to Request::ops_out,
//! the caller's or host arrays the core owns, which come back as Result::stats.
template <class Run>
Result reduce_ops(const Request& q, Run&& run) {
  if (q.ops_out) {
    Result r = run(q);
    r.ops.clear();
    return r;
  }
  const std::size_t n = q.segments.segmented() ? q.segments.count : 1;
  std::vector<std::uint64_t> words[all_ops.size()], indices[all_ops.size()];
  OpsOut out;
  for (Op s : all_ops) {
    if (!q.ops.contains(s)) continue;
    const int k = static_cast<int>(s);
    words[k].assign(n, 0);
    out.values[k] = words[k].data();
    if (returns_index(s)) {
      indices[k].assign(n, 0);
      out.indices[k] = indices[k].data();
    }
  }
  Request with_out = q;
  with_out.ops_out = &out;
  Result r = run(with_out);
  r.ops.clear();
  for (Op s : all_ops) {
    if (!q.ops.contains(s)) continue;
    const int k = static_cast<int>(s);
    OpResult one{s, {}, std::nullopt, unpack(result_dtype(q.dtype, s), words[k], n), std::move(indices[k])};
    if (n > 0) {
      one.value = one.values.front();
      if (returns_index(s)) one.index = one.indices.front();
    }
    if (!q.segments.segmented()) {
      one.values.clear();
      one.indices.clear();
    }
    r.ops.push_back(std::move(one));
  }
  r.value = r.ops.front().value;
  r.index = r.ops.front().index;
  return r;
}

//! Several ops of an empty array (not segmented): sums of nothing are 0, the rest have no value.
Result empty_ops_result(const Request& q, std::string_view backend) {
  if (q.ops.needs_elements())
    throw Error(ErrorCode::empty_input, "min, max, argmin and argmax of an empty array have no value");
  Result r;
  r.backend = std::string(backend);
  for (Op s : all_ops)
    if (q.ops.contains(s))
      r.ops.push_back({s, visit_dtype(result_dtype(q.dtype, s), [](auto tag) { return Scalar(decltype(tag){0}); }), std::nullopt});
  r.value = r.ops.front().value;
  return r;
}

void check_width(const Request& q, const Capabilities& caps, const std::string& backend) {
  if (q.width == 0) throw Error(ErrorCode::invalid_argument, "request has width 0: records need at least one value");
  if (q.width == 1) return;
  if (q.segments.segmented())
    throw Error(ErrorCode::invalid_argument, "a request is either records (width " + std::to_string(q.width) +
                                                 ") or segmented, not both");
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
  if (static_cast<unsigned>(q.dtype) >= all_dtypes.size() || static_cast<unsigned>(q.op) >= all_ops.size() ||
      static_cast<unsigned>(q.memory) > static_cast<unsigned>(Memory::device))
    throw Error(ErrorCode::invalid_argument, "request has an out-of-range dtype, op or memory value");
  if (q.count > 0 && q.data == nullptr)
    throw Error(ErrorCode::invalid_argument, "request has null data and count " + std::to_string(q.count));

  const std::string backend(name());
  Capabilities caps = capabilities();
  const bool several = !q.ops.empty();
  check_width(q, caps, backend);
  if (several) check_ops(q, caps, backend, options.accuracy.value_or(Accuracy::standard));
  else if (caps.support(q.dtype, q.op) == Support::none)
    throw Error(ErrorCode::unsupported, "backend '" + backend + "' does not support " + combination(q));
  const Accuracy accuracy = options.accuracy.value_or(Accuracy::standard);
  const bool exact = !several && exact_sum(q.dtype, q.op, accuracy);
  if (!several && accuracy == Accuracy::exact && (q.op == Op::prod || q.op == Op::sumsq) && is_floating(q.dtype))
    throw Error(ErrorCode::unsupported, "accuracy 'exact' is for sums: no backend rounds a " + combination(q) + " once");
  if (exact && !caps.exact_sums(q.width > 1))
    throw Error(ErrorCode::unsupported, "backend '" + backend + "' does not do exact " + combination(q) +
                                            " (accuracy 'exact'); `xreduce list` shows which backends do");
  if (!caps.accepts(q.memory))
    throw Error(ErrorCode::unsupported, "backend '" + backend + "' does not read " +
                                            std::string(to_string(q.memory)) + " memory");
  check_segments(q, caps, backend, exact);
  if (!options.settings.empty()) options.settings.check_keys(settings(), "backend '" + backend + "'");
  if (Availability a = available(); !a)
    throw Error(ErrorCode::unavailable, "backend '" + backend + "' is unavailable: " + a.reason);
  const bool host_data = q.memory == Memory::host || (q.memory == Memory::automatic && caps.engine() != Engine::gpu);
  std::unique_ptr<std::uint64_t[]> aligned_copy;
  if (several) {
    if (q.count == 0 && !q.segments.segmented()) return empty_ops_result(q, backend);
    const Request aligned = host_data && q.count > 0 ? detail::with_aligned_data(q, aligned_copy) : q;
    Result r = reduce_ops(aligned, [&](const Request& w) { return do_reduce(w, options); });
    r.backend = backend;
    return r;
  }
  if (q.segments.segmented()) {
    // Even with no elements: the segments still each get a result. The backend reads Request::out
    // (and rounds exact sums itself: a partial per segment would be 576 bytes each).
    const Request aligned = host_data && q.count > 0 ? detail::with_aligned_data(q, aligned_copy) : q;
    Result r = reduce_segments(aligned, [&](const Request& w) { return do_reduce(w, options); });
    r.exact.clear();
    r.backend = backend;
    return r;
  }
  if (q.count == 0) {
    Result r = empty_result(q, backend);
    if (exact) r.exact.assign(q.width, ExactSum{});
    return r;
  }

  // Misaligned host data is copied to aligned memory; device data is the device module's business.
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
