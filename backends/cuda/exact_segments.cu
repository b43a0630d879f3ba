// Exact sums of rows and segments of device data through the segments kernels of segments.cuh:
// f32, f16 and bf16 in one launch (kernels/exact_segments.cuh); f64 in a launch with a pair of
// doubles a lane, then two that sum again, in digits, the segments the pair did not settle: long
// ones a block a chunk, short ones a warp each (kernels/exact_segments_f64.cuh). Each segment's
// sum is rounded on the GPU.

#include <algorithm>

#include "kernels/exact_segments.cuh"
#include "kernels/exact_segments_f64.cuh"
#include "segments.cuh"

namespace xreduce::cuda {
namespace {

void enqueue_exact_f64_segments(const double* x, const SegmentBounds& bounds, double* out, Workspace& ws,
                                unsigned long long** bad) {
  // Room for every listing the first launch may make: each segment a short one, or a long one's
  // chunks (one per kRetryChunk elements, and one more per long segment), and a slot per segment
  // of more than kRetryChunk elements. The counts, the slots' counts and their words are zeroed
  // here (the workspace's buffer serves other calls between); the lists need not be.
  const std::uint64_t n = bounds.n, long_segments = std::min<std::uint64_t>(bounds.count, n / (kWarpRetryMost + 1));
  const std::uint64_t chunks = long_segments + n / kRetryChunk + 1, slots = n / kRetryChunk + 1;
  const std::size_t zeroed = F64RetryLists::kCounts * sizeof(unsigned long long) + slots * sizeof(unsigned) +
                             (slots * sizeof(unsigned) % 8) + slots * ExactSum::kWords * sizeof(long long);
  const std::size_t bytes = zeroed + bounds.count * sizeof(std::uint64_t) + chunks * sizeof(RetryChunk);
  auto* base = static_cast<unsigned char*>(ws.result_partials.reserve(bytes, "exact f64 segments to sum again"));
  F64RetryLists retry{};
  retry.counts = reinterpret_cast<unsigned long long*>(base);
  retry.chunks_summed = reinterpret_cast<unsigned*>(retry.counts + F64RetryLists::kCounts);
  retry.totals = reinterpret_cast<long long*>(base + (zeroed - slots * ExactSum::kWords * sizeof(long long)));
  retry.warp_segments = reinterpret_cast<std::uint64_t*>(base + zeroed);
  retry.chunks = reinterpret_cast<RetryChunk*>(retry.warp_segments + bounds.count);
  retry.room_chunks = chunks, retry.room_slots = slots;
  XREDUCE_CUDA(cudaMemsetAsync(base, 0, zeroed, ws.stream));
  shuffle_segments<SegmentPolicy>(x, bounds, ExactSegmentSumF64{{}, bounds, retry}, out, nullptr, ws, bad);
  if (bounds.count == 0) return;
  // How much is listed is known on the device alone: grids that fill the GPU once, whose blocks
  // find no work where none is listed.
  const auto grid = [&](int per_sm) { return static_cast<unsigned>(static_cast<std::uint64_t>(ws.sm_count) * per_sm); };
  exact_f64_chunk_retry_kernel<<<grid(blocks_per_sm<exact_f64_chunk_retry_kernel, exact::kDigitBlock, kRetryLaneDigitBytes>()),
                                 exact::kDigitBlock, kRetryLaneDigitBytes, ws.stream>>>(x, bounds, retry, out);
  XREDUCE_CUDA(cudaGetLastError());
  exact_f64_warp_retry_kernel<<<grid(blocks_per_sm<exact_f64_warp_retry_kernel, kWarpRetryBlock, 0>()), kWarpRetryBlock, 0,
                                ws.stream>>>(x, bounds, retry, out);
  XREDUCE_CUDA(cudaGetLastError());
}

}  // namespace

void enqueue_exact_segments(const void* data, const SegmentBounds& bounds, DType dtype, void* out, Workspace& ws,
                            unsigned long long** bad) {
  auto run = [&](auto tag) {
    using T = decltype(tag);
    static_assert(SegmentPolicy::block == ExactSegmentSum<T>::kBlock, "the lanes' shared bins are laid out for its blocks");
    shuffle_segments<SegmentPolicy>(static_cast<const T*>(data), bounds, ExactSegmentSum<T>{}, static_cast<T*>(out), nullptr, ws,
                                    bad);
  };
  switch (dtype) {
    case DType::f32: return run(float{});
    case DType::f64: return enqueue_exact_f64_segments(static_cast<const double*>(data), bounds, static_cast<double*>(out), ws, bad);
    case DType::f16: return run(f16{});
    case DType::bf16: return run(bf16{});
    default:
      throw Error(ErrorCode::unsupported, "exact sums of rows and segments on the GPU are of f32, f64, f16 and bf16, not " +
                                              std::string(to_string(dtype)));
  }
}

}  // namespace xreduce::cuda
