// Exact sums of rows and segments of device data (kernels/exact_segments.cuh) through the
// segments kernels of segments.cuh: f32, f16 and bf16, each segment's sum rounded on the GPU. Two
// passes: the first finishes the segments a pair of doubles holds exactly and marks the rest,
// which the second reads alone.

#include "kernels/exact_segments.cuh"
#include "segments.cuh"

namespace xreduce::cuda {

void enqueue_exact_segments(const void* data, const SegmentBounds& bounds, DType dtype, void* out, Workspace& ws,
                            unsigned long long** bad) {
  auto run = [&](auto tag) {
    using T = decltype(tag);
    // The second pass's own policy (ExactSegmentPolicy): more elements a lane, and two blocks an
    // SM for the registers of its partials (under the plain policy's four, the f32 short-segment
    // kernel spilled 504 bytes with the earlier TwoSum accumulator; it takes 84 registers now).
    // The first pass's partial is 32 bytes: the plain policy.
    static_assert(ExactSegmentPolicy::block == ExactSegmentSum<T>::kBlock, "the lanes' shared bins are laid out for its blocks");
    // Both passes carve the scratch from its start (the check word first, which the second
    // keeps): reserved for the larger at once, so that it is not reallocated between them.
    ws.scratch.reserve(std::max(segments_scratch_bytes<SegmentPolicy, WindowSum, T>(bounds),
                                segments_scratch_bytes<ExactSegmentPolicy, FloatDigits, T>(bounds)),
                       "segment lists");
    // The marks (a byte a segment, each written by the first pass) and their summary word, in
    // the buffer for results' partials, which no other part of an exact segment sum uses.
    auto* cursor = static_cast<unsigned char*>(ws.result_partials.reserve(16 + round16(bounds.count), "exact segment marks"));
    auto* any_marked = carve<unsigned>(cursor, 1);
    auto* marks = carve<unsigned char>(cursor, bounds.count);
    XREDUCE_CUDA(cudaMemsetAsync(any_marked, 0, sizeof *any_marked, ws.stream));
    auto* typed = static_cast<T*>(out);
    shuffle_segments<SegmentPolicy>(static_cast<const T*>(data), bounds, SegmentWindowSum<T>{marks, any_marked}, typed, nullptr,
                                    ws, bad);
    ExactSegmentSum<T> second;
    second.marks = marks, second.any_marked = any_marked;
    shuffle_segments<ExactSegmentPolicy>(static_cast<const T*>(data), bounds, second, typed, nullptr, ws, bad);
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
