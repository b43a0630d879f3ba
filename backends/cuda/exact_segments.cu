// Exact sums of rows and segments of device data (kernels/exact_segments.cuh) through the
// segments kernels of segments.cuh: f32, f16 and bf16, each segment's sum rounded on the GPU.

#include "kernels/exact_segments.cuh"
#include "segments.cuh"

namespace xreduce::cuda {

void enqueue_exact_segments(const void* data, const SegmentBounds& bounds, DType dtype, void* out, Workspace& ws,
                            unsigned long long** bad) {
  auto run = [&](auto tag) {
    using T = decltype(tag);
    // Two blocks an SM (StatsSegmentPolicy): registers for the double sums and their errors, which
    // the f32 short-segment kernel spilled (504 bytes) under the plain policy's four.
    static_assert(StatsSegmentPolicy::block == ExactSegmentSum<T>::kBlock, "the lanes' shared digits are laid out for its blocks");
    shuffle_segments<StatsSegmentPolicy>(static_cast<const T*>(data), bounds, ExactSegmentSum<T>{}, static_cast<T*>(out),
                                         nullptr, ws, bad);
  };
  switch (dtype) {
    case DType::f32: return run(float{});
    case DType::f16: return run(f16{});
    case DType::bf16: return run(bf16{});
    default:
      throw Error(ErrorCode::unsupported, "exact sums of rows and segments on the GPU are of f32, f16 and bf16, not " +
                                              std::string(to_string(dtype)));
  }
}

}  // namespace xreduce::cuda
