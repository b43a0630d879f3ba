#pragma once
// enqueue_segments_typed<T>: a segmented request's launches for one element type, with
// cuda.shuffle's tiled kernels (kernels/segmented.cuh) or cub::DeviceSegmentedReduce; and
// enqueue_segment_stats_typed<T>, several ops of each segment with the tiled kernels. Included by
// the per-type translation units enqueue_<dtype>.cu, which instantiate it.

#include <cub/device/device_segmented_reduce.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include "kernels/segmented.cuh"
#include "techniques.hpp"

namespace xreduce::cuda {

//! The type a segment's result is written in: result_dtype's C++ type.
template <class F>
using segment_out_t = std::conditional_t<
    F::op != Op::sum && F::op != Op::prod || std::is_floating_point_v<typename F::In>, typename F::In,
    std::conditional_t<std::is_signed_v<typename F::In>, std::int64_t, std::uint64_t>>;

//! `count` A's at 16-byte alignment from `*cursor` on, which moves past them.
template <class A>
A* carve(unsigned char*& cursor, std::uint64_t count) {
  A* p = reinterpret_cast<A*>(cursor);
  cursor += (count * sizeof(A) + 15) / 16 * 16;
  return p;
}

//! The offsets' check word (~0: all good) and, for tiles, own[]: one launch over count + 1 offsets.
template <class A>
void check_offsets(const SegmentBounds& b, const SegmentTiles<A>& t, Workspace& ws) {
  XREDUCE_CUDA(cudaMemsetAsync(t.bad, 0xff, sizeof *t.bad, ws.stream));
  if (!b.offsets) return;
  const std::uint64_t threads = b.count + 1;
  segment_owners_kernel<<<static_cast<unsigned>(ceil_div(threads, 256)), 256, 0, ws.stream>>>(b, t);
  XREDUCE_CUDA(cudaGetLastError());
}

template <class P = SegmentPolicy, class F, class Out>
void shuffle_segments(const typename F::In* x, const SegmentBounds& b, F f, Out* out, std::uint64_t* out_index,
                      Workspace& ws, unsigned long long** bad) {
  using A = typename F::acc_t;
  SegmentTiles<A> t{};
  t.tile = P::tile_bytes / sizeof(typename F::In);
  t.tiles = ceil_div(b.n, t.tile);
  // Equal rows, enough of them to fill the GPU or to give more blocks than the tiles would:
  // rows shorter than 2048 a group of lanes with about four 16-byte loads each (a warp a row of
  // 256 f32 read 62% of the probe, two loads a lane); longer ones a block each. (The tiles, whose
  // groups were then a warp at least, took 2^18 rows of 1 from host data in 1 ms on an H200.)
  if (!b.offsets && b.count > 0 && b.row_length > 0) {
    int group = P::block;
    if (b.row_length < 2048) {
      const std::uint64_t loads = b.row_length * sizeof(typename F::In) / 16;
      for (group = 32; group > 1 && static_cast<std::uint64_t>(group) * 4 > loads; group /= 2) {
      }
    }
    const std::uint64_t per_block = P::block / group;
    const std::uint64_t row_blocks = ceil_div(b.count, per_block);
    if (b.count >= static_cast<std::uint64_t>(ws.sm_count) * 8 * per_block || row_blocks >= t.tiles) {
      unsigned long long* word = static_cast<unsigned long long*>(ws.scratch.reserve(16, "segment check"));
      *bad = word;
      XREDUCE_CUDA(cudaMemsetAsync(word, 0xff, sizeof *word, ws.stream));
      const std::uint64_t blocks = std::min<std::uint64_t>(row_blocks, std::uint64_t{1} << 20);
      if (group < vector_width<typename F::In>())  // short rows: fewer threads a row than a vector has elements
        rows_kernel<P, true><<<static_cast<unsigned>(blocks), P::block, 0, ws.stream>>>(x, b, group, f, out, out_index);
      else
        rows_kernel<P, false><<<static_cast<unsigned>(blocks), P::block, 0, ws.stream>>>(x, b, group, f, out, out_index);
      XREDUCE_CUDA(cudaGetLastError());
      return;
    }
  }
  auto round16 = [](std::uint64_t bytes) { return (bytes + 15) / 16 * 16; };
  const std::uint64_t bytes = 16 + round16(t.tiles * 8) * (b.offsets ? 3 : 2) + 2 * round16(t.tiles * sizeof(A));
  unsigned char* cursor = static_cast<unsigned char*>(ws.scratch.reserve(bytes, "segment tiles"));
  t.bad = carve<unsigned long long>(cursor, 1);
  t.own = b.offsets ? carve<std::uint64_t>(cursor, t.tiles) : nullptr;
  t.carry = carve<A>(cursor, t.tiles);
  t.tail = carve<A>(cursor, t.tiles);
  t.carried = carve<long long>(cursor, t.tiles);
  t.tail_of = carve<long long>(cursor, t.tiles);
  *bad = t.bad;
  check_offsets(b, t, ws);
  if (t.tiles == 0) {  // no elements: every segment is empty
    if (b.count > 0)
      segment_identities_kernel<<<static_cast<unsigned>(ceil_div(b.count, 256)), 256, 0, ws.stream>>>(b.count, f, out, out_index);
    XREDUCE_CUDA(cudaGetLastError());
    return;
  }
  segments_kernel<P><<<static_cast<unsigned>(t.tiles), P::block, 0, ws.stream>>>(x, b, t, f, out, out_index);
  XREDUCE_CUDA(cudaGetLastError());
  // Equal rows that tile evenly never leave a tail.
  if (b.offsets || t.tile % b.row_length != 0) {
    segment_tails_kernel<<<static_cast<unsigned>(ceil_div(t.tiles * 32, 256)), 256, 0, ws.stream>>>(b, t, f, out, out_index);
    XREDUCE_CUDA(cudaGetLastError());
  }
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

//! argmin/argmax through CUB: pairs with global indices, then each made relative to its segment.
template <class F, class Out>
__global__ void finish_arg_segments_kernel(SegmentBounds b, const typename F::acc_t* pairs, F f, Out* out,
                                           std::uint64_t* out_index) {
  const std::uint64_t s = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x;
  if (s < b.count) write_segment(f, pairs[s], s, b.begin(s), out, out_index);
}

template <class F, class Out>
void cub_segments(const typename F::In* x, const SegmentBounds& b, F f, Out* out, std::uint64_t* out_index, Workspace& ws,
                  unsigned long long** bad) {
  using A = typename F::acc_t;
  unsigned char* cursor = static_cast<unsigned char*>(ws.scratch.reserve(16 + b.count * sizeof(A) + 64, "segment pairs"));
  SegmentTiles<A> t{};
  t.bad = carve<unsigned long long>(cursor, 1);
  *bad = t.bad;
  check_offsets(b, t, ws);
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
  if constexpr (is_arg_op<F>) {
    A* pairs = carve<A>(cursor, b.count);
    run(thrust::make_transform_iterator(thrust::counting_iterator<index_t>(0), LiftAt<F>{x, f}), pairs, f);
    finish_arg_segments_kernel<<<static_cast<unsigned>(ceil_div(b.count, 256)), 256, 0, ws.stream>>>(b, pairs, f, out, out_index);
    XREDUCE_CUDA(cudaGetLastError());
  } else {
    run(x, out, MixedOp<F>{f});
  }
}

//! Several ops of each segment (Request::ops): StatsOp, and where each asked stat goes.
template <class T>
struct SegmentStatsOp : StatsOp<T> {
  Stats ops;
  void* values[all_stats.size()];
  std::uint64_t* indices[all_stats.size()];
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
  using Sum = std::conditional_t<std::is_floating_point_v<T>, T, std::conditional_t<std::is_signed_v<T>, std::int64_t, std::uint64_t>>;
  auto put = [&](Stat k, auto value) {
    if (f.ops.contains(k)) static_cast<decltype(value)*>(f.values[static_cast<int>(k)])[s] = value;
  };
  put(Stat::sum, static_cast<Sum>(a.sum));
  put(Stat::sum_of_squares, static_cast<Sum>(a.squares));
  put(Stat::min, a.lo.value);
  put(Stat::max, a.hi.value);
  put(Stat::argmin, a.lo.value);
  put(Stat::argmax, a.hi.value);
  auto relative = [&](index_t i) { return i == ~index_t{0} ? i : i - start; };  // an empty segment: no_index
  if (f.ops.contains(Stat::argmin)) f.indices[static_cast<int>(Stat::argmin)][s] = relative(a.lo.index);
  if (f.ops.contains(Stat::argmax)) f.indices[static_cast<int>(Stat::argmax)][s] = relative(a.hi.index);
}

template <class T>
void enqueue_segment_stats_typed(const T* x, const SegmentBounds& b, Stats ops, const StatsOut& out, Workspace& ws,
                                 unsigned long long** bad) {
  SegmentStatsOp<T> f{};
  f.ops = ops;
  for (std::size_t k = 0; k < all_stats.size(); ++k) f.values[k] = out.values[k], f.indices[k] = out.indices[k];
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
