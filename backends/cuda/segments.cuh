#pragma once
// enqueue_segments_typed<T>: a segmented request's launches for one element type, with
// cuda.shuffle's length-binned kernels (kernels/segmented.cuh) or cub::DeviceSegmentedReduce; and
// enqueue_segment_stats_typed<T>, several ops of each segment with the same kernels. Included by
// the per-type translation units enqueue_<dtype>.cu, which instantiate it.

#include <cub/device/device_segmented_reduce.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include "kernels/segmented.cuh"
#include "techniques.hpp"

namespace xreduce::cuda {

//! The type a segment's result is written in: result_dtype's C++ type.
template <class F>
using segment_out_t = typename F::result_t;

//! `count` A's at 16-byte alignment from `*cursor` on, which moves past them.
template <class A>
A* carve(unsigned char*& cursor, std::uint64_t count) {
  A* p = reinterpret_cast<A*>(cursor);
  cursor += (count * sizeof(A) + 15) / 16 * 16;
  return p;
}

//! The check word (~0: all good), set before a launch that may write the first bad offset, into
//! `*bad`: true, this pass checks the offsets. Where `*bad` is already set (a second pass over
//! the same segments, in the same scratch: exact sums), that word is kept with what the first
//! pass found: false, the offsets need no second check.
inline bool check_word(unsigned char*& cursor, Workspace& ws, unsigned long long** bad) {
  auto* word = carve<unsigned long long>(cursor, 1);
  if (*bad) return false;
  *bad = word;
  XREDUCE_CUDA(cudaMemsetAsync(word, 0xff, sizeof *word, ws.stream));
  return true;
}

//! Blocks that keep every SM busy for a grid-stride kernel of `P`, or fewer for less work.
template <class P>
unsigned filling_grid(const Workspace& ws, std::uint64_t work) {
  return static_cast<unsigned>(std::max<std::uint64_t>(1, std::min<std::uint64_t>(work, std::uint64_t(ws.sm_count) * P::min_blocks)));
}

//! The long segments' launches: a block per chunk, then a warp per segment of several chunks.
template <class P, class F, class Out>
void enqueue_long_segments(const typename F::In* x, const SegmentBounds& b, const LongSegments<typename F::acc_t>& L,
                           std::uint64_t max_chunks, std::uint64_t max_segments, bool several_chunks, F f, Out* out,
                           std::uint64_t* out_index, Workspace& ws) {
  long_segments_kernel<P><<<filling_grid<P>(ws, max_chunks), P::block, 0, ws.stream>>>(x, b, L, f, out, out_index);
  XREDUCE_CUDA(cudaGetLastError());
  if (several_chunks) {  // some segment may have more than one chunk
    long_segment_totals_kernel<P><<<filling_grid<P>(ws, ceil_div(max_segments, P::warps)), P::block, 0, ws.stream>>>(b, L, f, out, out_index);
    XREDUCE_CUDA(cudaGetLastError());
  }
}

inline std::uint64_t round16(std::uint64_t bytes) { return (bytes + 15) / 16 * 16; }

//! Rows long enough to be cut into chunks (a block each).
template <class P, class In>
bool chunked_rows(const SegmentBounds& b) {
  return !b.offsets && b.row_length * sizeof(In) >= 2 * P::chunk_bytes && b.count > 0;
}

//! Offsets: the most long segments and chunks the data can hold. A long segment has long_bytes
//! at least, and each of its chunks as much.
struct LongRoom {
  std::uint64_t segments, chunks;
};
template <class P, class In>
LongRoom long_room(const SegmentBounds& b) {
  const std::uint64_t chunks = b.n * sizeof(In) / P::long_bytes;
  if (chunks >= (std::uint64_t{1} << 32))  // the chunks are counted in 32 bits (LongSegments::listed)
    throw Error(ErrorCode::unsupported, "cuda.shuffle reduces segments of up to 2^45 bytes of data in one call");
  return {std::min<std::uint64_t>(b.count, chunks), chunks};
}

//! The scratch shuffle_segments<P> carves for partials A of segments of In: the check word,
//! then the chunks' partials of long rows, or the lists of long segments and their partials.
template <class P, class A, class In>
std::uint64_t segments_scratch_bytes(const SegmentBounds& b) {
  if (!b.offsets)
    return 16 + (chunked_rows<P, In>(b) ? round16(b.count * chunks_of<P>(b.row_length * sizeof(In)) * sizeof(A)) : 0);
  const LongRoom room = long_room<P, In>(b);
  return 32 + round16(room.segments * sizeof(LongPiece)) + round16(room.chunks * sizeof(LongPiece)) + round16(room.chunks * sizeof(A));
}

template <class P = SegmentPolicy, class F, class Out>
void shuffle_segments(const typename F::In* x, const SegmentBounds& b, F f, Out* out, std::uint64_t* out_index,
                      Workspace& ws, unsigned long long** bad) {
  using In = typename F::In;
  using A = typename F::acc_t;
  unsigned char* cursor = static_cast<unsigned char*>(
      ws.scratch.reserve(segments_scratch_bytes<P, A, In>(b), b.offsets ? "segment lists" : "segment partials"));
  if (!b.offsets) {
    const std::uint64_t row_bytes = b.row_length * sizeof(In);
    const std::uint64_t row_chunks = chunks_of<P>(row_bytes);
    const bool chunked = chunked_rows<P, In>(b);
    check_word(cursor, ws, bad);
    if (b.count == 0) return;
    if (b.row_length == 0) {
      segment_identities_kernel<<<static_cast<unsigned>(ceil_div(b.count, 256)), 256, 0, ws.stream>>>(b.count, f, out, out_index);
      XREDUCE_CUDA(cudaGetLastError());
      return;
    }
    if (chunked) {  // rows of two chunks or more: each in chunks, so that few rows still fill the GPU
      LongSegments<A> L{};
      L.row_chunks = row_chunks;
      L.room_segments = b.count, L.room_chunks = b.count * row_chunks;
      L.partial = carve<A>(cursor, b.count * row_chunks);
      enqueue_long_segments<P>(x, b, L, b.count * row_chunks, b.count, true, f, out, out_index, ws);
      return;
    }
    const int group = row_bytes < P::long_bytes ? group_for<P>(row_bytes) : P::block;
    const std::uint64_t blocks = std::min<std::uint64_t>(ceil_div(b.count, P::block / group), std::uint64_t{1} << 20);
    if (group < vector_width<In>())  // short rows: fewer threads a row than a vector has elements
      rows_kernel<P, true><<<static_cast<unsigned>(blocks), P::block, 0, ws.stream>>>(x, b, group, f, out, out_index);
    else
      rows_kernel<P, false><<<static_cast<unsigned>(blocks), P::block, 0, ws.stream>>>(x, b, group, f, out, out_index);
    XREDUCE_CUDA(cudaGetLastError());
    return;
  }
  const std::uint64_t bytes = b.n * sizeof(In);
  const auto [max_long, max_chunks] = long_room<P, In>(b);
  const bool check = check_word(cursor, ws, bad);
  LongSegments<A> L{};
  L.listed = carve<unsigned long long>(cursor, 1);
  L.segments = carve<LongPiece>(cursor, max_long);
  L.chunks = carve<LongPiece>(cursor, max_chunks);
  L.partial = carve<A>(cursor, max_chunks);
  L.room_segments = max_long, L.room_chunks = max_chunks;
  XREDUCE_CUDA(cudaMemsetAsync(L.listed, 0, sizeof *L.listed, ws.stream));
  // A block per 256 segments, whatever the policy. A grid that fills the GPU, round them (as the
  // rows take for a policy that reads only some), left the hardware no blocks to balance: on an
  // H200 the exact sums of wide power-law data took 20.6x the plain sums against 17.3x, for 1.42x
  // against 1.45x on uniform data (bench/results/nvidia-h200/logs/segments-device-4ad768a.md).
  short_segments_kernel<P><<<static_cast<unsigned>(ceil_div(b.count + 1, P::block)), P::block, 0, ws.stream>>>(
      x, b, L, check ? *bad : nullptr, f, out, out_index);
  XREDUCE_CUDA(cudaGetLastError());
  if (max_long > 0) enqueue_long_segments<P>(x, b, L, max_chunks, max_long, bytes >= 2 * P::chunk_bytes, f, out, out_index, ws);
}

//! Segment s's bounds for CUB, kept inside the data whatever the offsets say.
struct SegmentBegin {
  SegmentBounds b;
  __device__ std::uint64_t operator()(std::uint64_t s) const { return b.begin(s); }
};
struct SegmentEnd {
  SegmentBounds b;
  __device__ std::uint64_t operator()(std::uint64_t s) const {
    const std::uint64_t a = b.begin(s), e = b.begin(s + 1);
    return e < a ? a : e;
  }
};

//! Segment results through CUB: accumulators first (argmin/argmax: pairs with global indices),
//! then each written as write_segment writes it (an index made relative to its segment).
template <class F, class Out>
__global__ void finish_segments_kernel(SegmentBounds b, const typename F::acc_t* pairs, F f, Out* out,
                                       std::uint64_t* out_index) {
  const std::uint64_t s = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x;
  if (s < b.count) write_segment(f, pairs[s], s, b.begin(s), out, out_index);
}

template <class F, class Out>
void cub_segments(const typename F::In* x, const SegmentBounds& b, F f, Out* out, std::uint64_t* out_index, Workspace& ws,
                  unsigned long long** bad) {
  using A = typename F::acc_t;
  unsigned char* cursor = static_cast<unsigned char*>(ws.scratch.reserve(16 + b.count * sizeof(A) + 64, "segment pairs"));
  check_word(cursor, ws, bad);
  if (b.offsets) {
    segment_offsets_check_kernel<<<static_cast<unsigned>(ceil_div(b.count + 1, 256)), 256, 0, ws.stream>>>(b, *bad);
    XREDUCE_CUDA(cudaGetLastError());
  }
  if (b.count == 0) return;
  auto begins = thrust::make_transform_iterator(thrust::counting_iterator<std::uint64_t>(0), SegmentBegin{b});
  auto ends = thrust::make_transform_iterator(thrust::counting_iterator<std::uint64_t>(0), SegmentEnd{b});
  const auto segments = static_cast<std::int64_t>(b.count);
  auto run = [&](auto in, auto result, auto op) {
    std::size_t temp_bytes = 0;
    XREDUCE_CUDA(cub::DeviceSegmentedReduce::Reduce(nullptr, temp_bytes, in, result, segments, begins, ends, op, f.identity(), ws.stream));
    void* temp = ws.cub_temp.reserve(temp_bytes, "cub temporary storage");
    XREDUCE_CUDA(cub::DeviceSegmentedReduce::Reduce(temp, temp_bytes, in, result, segments, begins, ends, op, f.identity(), ws.stream));
  };
  // CUB writes a segment's accumulator to `out` itself where it converts implicitly; a 16-bit
  // float's rounding is explicit, and an index needs its segment's start.
  if constexpr (is_arg_op<F> || !std::is_convertible_v<A, Out>) {
    A* acc = carve<A>(cursor, b.count);
    if constexpr (is_arg_op<F>) run(thrust::make_transform_iterator(thrust::counting_iterator<index_t>(0), LiftAt<F>{x, f}), acc, f);
    else run(x, acc, MixedOp<F>{f});
    finish_segments_kernel<<<static_cast<unsigned>(ceil_div(b.count, 256)), 256, 0, ws.stream>>>(b, acc, f, out, out_index);
    XREDUCE_CUDA(cudaGetLastError());
  } else {
    run(x, out, MixedOp<F>{f});
  }
}

//! Several ops of each segment (Request::ops): StatsOp, and where each asked stat goes.
template <class T>
struct SegmentStatsOp : StatsOp<T> {
  OpSet ops;
  void* values[all_ops.size()];
  std::uint64_t* indices[all_ops.size()];
};

//! Its accumulator is StatsOp's, with the vector path of kernels/vector_loads.cuh.
template <class T>
struct Accumulator<SegmentStatsOp<T>> : Accumulator<StatsOp<T>> {};
template <class T>
__device__ inline void add_vector(Accumulator<SegmentStatsOp<T>>& acc, const SegmentStatsOp<T>& f, const Vec<T>& r,
                                  std::size_t first) {
  add_vector(static_cast<Accumulator<StatsOp<T>>&>(acc), static_cast<const StatsOp<T>&>(f), r, first);
}

//! Segment s's stats, each asked one to its own array (found by argument-dependent lookup from
//! the kernels, over the one-op write_segment: `out` and `out_index` are not used).
template <class T, class Out>
__device__ inline void write_segment(const SegmentStatsOp<T>& f, const StatsAcc<T>& a, std::uint64_t s, std::uint64_t start,
                                     Out*, std::uint64_t*) {
  using Sum = ops::widened_t<T>;
  auto put = [&](Op k, auto value) {
    if (f.ops.contains(k)) static_cast<decltype(value)*>(f.values[static_cast<int>(k)])[s] = value;
  };
  put(Op::sum, static_cast<Sum>(a.sum));
  put(Op::sumsq, static_cast<Sum>(a.squares));
  put(Op::min, a.lo.value);
  put(Op::max, a.hi.value);
  put(Op::argmin, a.lo.value);
  put(Op::argmax, a.hi.value);
  auto relative = [&](index_t i) { return i == ~index_t{0} ? i : i - start; };  // an empty segment: no_index
  if (f.ops.contains(Op::argmin)) f.indices[static_cast<int>(Op::argmin)][s] = relative(a.lo.index);
  if (f.ops.contains(Op::argmax)) f.indices[static_cast<int>(Op::argmax)][s] = relative(a.hi.index);
}

template <class T>
void enqueue_segment_stats_typed(const T* x, const SegmentBounds& b, OpSet ops, const OpsOut& out, Workspace& ws,
                                 unsigned long long** bad) {
  SegmentStatsOp<T> f{};
  f.ops = ops;
  for (std::size_t k = 0; k < all_ops.size(); ++k) f.values[k] = out.values[k], f.indices[k] = out.indices[k];
  shuffle_segments<StatsSegmentPolicy>(x, b, f, static_cast<unsigned char*>(nullptr), nullptr, ws, bad);
}

template <class T>
void enqueue_segments_typed(Technique t, const T* x, const SegmentBounds& b, Op op, void* out, std::uint64_t* out_index,
                            Workspace& ws, unsigned long long** bad) {
  visit_op<T>(op, [&](auto f) {
    using F = decltype(f);
    auto* typed = static_cast<segment_out_t<F>*>(out);
    if (t == Technique::cub) cub_segments(x, b, f, typed, out_index, ws, bad);
    else shuffle_segments(x, b, f, typed, out_index, ws, bad);
  });
}

}  // namespace xreduce::cuda
