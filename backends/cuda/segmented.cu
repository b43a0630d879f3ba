// Rows and segments on the GPU (layouts inner and ragged): the arrays put where the kernels can
// read them, the launches (segments.cuh), the results brought to where the caller wants them, and
// the offsets' check.

#include <cstring>
#include <string>

#include "kernels/segmented.cuh"
#include "techniques.hpp"

namespace xreduce::cuda {
namespace {

std::size_t round16(std::size_t bytes) { return (bytes + 15) / 16 * 16; }

//! The message for the first bad offset the kernels found (`offsets` on the device).
std::string bad_offsets(std::uint64_t first_bad, const std::uint64_t* offsets, const Request& q) {
  std::uint64_t pair[2] = {};
  const std::uint64_t s = first_bad, count = q.segments.count;
  XREDUCE_CUDA(cudaMemcpy(pair, offsets + s, (s < count ? 2 : 1) * sizeof(std::uint64_t), cudaMemcpyDeviceToHost));
  if (s == count)
    return "segment offsets end at " + std::to_string(pair[0]) + ", past the " + std::to_string(q.count) + " elements";
  return "segment offsets decrease: offsets[" + std::to_string(s) + "] = " + std::to_string(pair[0]) + " > offsets[" +
         std::to_string(s + 1) + "] = " + std::to_string(pair[1]);
}

}  // namespace

Result reduce_segments(Technique t, const Request& q, bool data_on_device, bool out_on_device, int device, bool exact) {
  WorkspaceLease ws(device);
  // Equal rows are a view (rows, length); segments carry their offsets.
  const bool rows = !q.segments.segmented();
  const std::size_t count = rows ? static_cast<std::size_t>(q.view.shape[0]) : q.segments.count;
  const std::size_t data_bytes = q.count * size_of(q.dtype);
  const std::size_t offset_bytes = q.segments.offsets ? (count + 1) * sizeof(std::uint64_t) : 0;
  const void* data = q.data;
  const std::uint64_t* offsets = q.segments.offsets;
  // Host input, and device input misaligned to its element size, go through the staging buffer.
  const bool misaligned = data && reinterpret_cast<std::uintptr_t>(data) % size_of(q.dtype) != 0;
  if (!data_on_device || misaligned) {
    auto* staging = static_cast<unsigned char*>(ws->staging.reserve(round16(data_bytes) + offset_bytes + 16, "segmented input"));
    if (data_bytes)
      XREDUCE_CUDA(cudaMemcpyAsync(staging, data, data_bytes, data_on_device ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice,
                                   ws->stream));
    data = staging;
    if (!data_on_device && offsets) {
      auto* copied = reinterpret_cast<std::uint64_t*>(staging + round16(data_bytes));
      XREDUCE_CUDA(cudaMemcpyAsync(copied, offsets, offset_bytes, cudaMemcpyHostToDevice, ws->stream));
      offsets = copied;
    }
  }
  // Where the results go: one op's `out` and `out_index`, or each asked stat's pair (Request::ops).
  // Results meant for the host are written to the device first, and cross after.
  OpsOut wanted, written;
  std::size_t value_bytes[all_ops.size()] = {}, index_bytes[all_ops.size()] = {};
  auto want = [&](int k, void* values, std::uint64_t* indices, DType type, bool index) {
    wanted.values[k] = values, wanted.indices[k] = indices;
    value_bytes[k] = count * size_of(type);
    index_bytes[k] = index ? count * sizeof(std::uint64_t) : 0;
  };
  if (q.ops.empty()) want(0, q.out, q.out_index, result_dtype(q.dtype, q.op), returns_index(q.op));
  for (Op s : all_ops)
    if (q.ops.contains(s))
      want(static_cast<int>(s), q.ops_out->values[static_cast<int>(s)], q.ops_out->indices[static_cast<int>(s)],
           result_dtype(q.dtype, s), returns_index(s));
  if (out_on_device) {
    written = wanted;
  } else {
    std::size_t total = 16;
    for (std::size_t k = 0; k < all_ops.size(); ++k) total += round16(value_bytes[k]) + round16(index_bytes[k]);
    auto* cursor = static_cast<unsigned char*>(ws->columns.reserve(total, "segment results"));
    for (std::size_t k = 0; k < all_ops.size(); ++k) {
      if (value_bytes[k] == 0 && !wanted.values[k]) continue;
      written.values[k] = cursor;
      cursor += round16(value_bytes[k]);
      if (wanted.indices[k]) written.indices[k] = reinterpret_cast<std::uint64_t*>(cursor);
      cursor += round16(index_bytes[k]);
    }
  }
  const SegmentBounds bounds{offsets, rows ? static_cast<std::uint64_t>(q.view.shape[1]) : 0, count, q.count};
  unsigned long long* bad = nullptr;
  if (exact) enqueue_exact_segments(data, bounds, q.dtype, written.values[0], *ws, &bad);
  else visit_dtype(q.dtype, [&](auto tag) {
    using T = decltype(tag);
    if (!q.ops.empty()) enqueue_segment_stats_typed<T>(static_cast<const T*>(data), bounds, q.ops, written, *ws, &bad);
    else if (is_core_op(q.op))
      enqueue_segments_typed<T>(t, static_cast<const T*>(data), bounds, q.op, written.values[0], written.indices[0], *ws, &bad);
    else enqueue_segment_statistic(data, bounds, q.dtype, q.op, q.correction, written.values[0], written.indices[0], *ws, &bad);
  });
  XREDUCE_CUDA(cudaMemcpyAsync(ws->host_result, bad, sizeof *bad, cudaMemcpyDeviceToHost, ws->stream));
  for (std::size_t k = 0; !out_on_device && k < all_ops.size(); ++k) {
    if (value_bytes[k])
      XREDUCE_CUDA(cudaMemcpyAsync(wanted.values[k], written.values[k], value_bytes[k], cudaMemcpyDeviceToHost, ws->stream));
    if (index_bytes[k])
      XREDUCE_CUDA(cudaMemcpyAsync(wanted.indices[k], written.indices[k], index_bytes[k], cudaMemcpyDeviceToHost, ws->stream));
  }
  XREDUCE_CUDA(cudaStreamSynchronize(ws->stream));
  std::uint64_t first_bad = 0;
  std::memcpy(&first_bad, ws->host_result, sizeof first_bad);
  if (first_bad != ~std::uint64_t{0}) throw Error(ErrorCode::invalid_argument, bad_offsets(first_bad, offsets, q));
  return Result{};
}

}  // namespace xreduce::cuda
