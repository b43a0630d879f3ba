// Exact sums of rows and segments of device data through the segments kernels of segments.cuh:
// f32, f16 and bf16 in one launch (kernels/exact_segments.cuh); f64 in a launch with a pair of
// doubles a lane and one that sums again, in digits, the segments the pair did not settle
// (kernels/exact_segments_f64.cuh). Each segment's sum is rounded on the GPU.

#include <algorithm>

#include "kernels/exact_segments.cuh"
#include "kernels/exact_segments_f64.cuh"
#include "segments.cuh"

namespace xreduce::cuda {
namespace {

void enqueue_exact_f64_segments(const double* x, const SegmentBounds& bounds, double* out, Workspace& ws,
                                unsigned long long** bad) {
  // The count of segments to sum again, then their list: room for every segment.
  auto* retry_count = static_cast<unsigned long long*>(
      ws.result_partials.reserve(16 + bounds.count * sizeof(std::uint64_t), "exact f64 segments to sum again"));
  auto* retry = reinterpret_cast<std::uint64_t*>(retry_count + 2);
  XREDUCE_CUDA(cudaMemsetAsync(retry_count, 0, sizeof *retry_count, ws.stream));
  shuffle_segments<SegmentPolicy>(x, bounds, ExactSegmentSumF64{bounds, retry_count, retry}, out, nullptr, ws, bad);
  if (bounds.count == 0) return;
  // How many segments are listed is known on the device alone: a grid that fills the GPU once,
  // whose blocks find no work where none is listed.
  const int per_sm = blocks_per_sm<exact_f64_retry_kernel, exact::kDigitBlock, kRetryLaneDigitBytes>();
  const auto blocks = static_cast<unsigned>(std::min<std::uint64_t>(bounds.count, static_cast<std::uint64_t>(ws.sm_count) * per_sm));
  exact_f64_retry_kernel<<<blocks, exact::kDigitBlock, kRetryLaneDigitBytes, ws.stream>>>(x, bounds, retry_count, retry, out);
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
