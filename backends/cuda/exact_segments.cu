// Exact sums of rows and segments of device data (kernels/exact_segments.cuh) through the
// segments kernels of segments.cuh: f32, f16 and bf16, in one launch, each segment's sum rounded
// on the GPU.

#include "kernels/exact_segments.cuh"
#include "segments.cuh"

namespace xreduce::cuda {

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
    case DType::f16: return run(f16{});
    case DType::bf16: return run(bf16{});
    default:
      throw Error(ErrorCode::unsupported, "exact sums of rows and segments on the GPU are of f32, f16 and bf16, not " +
                                              std::string(to_string(dtype)));
  }
}

}  // namespace xreduce::cuda
