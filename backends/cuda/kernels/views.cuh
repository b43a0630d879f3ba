#pragma once
// The N-D views of GPU data that neither the flat, the records nor the rows kernels take, read
// in place (no transpose copy), in two forms chosen by the layout class:
//
// - Columns (layout middle: a batch of column reductions, (batch, rows, width) over axis 1;
//   records whose rows are whole vectors are the batch of one). A block lies across a row: X
//   threads over its 16-byte vectors and Y = block / X rows at a time, so a warp reads 512
//   consecutive bytes of a row and a thread keeps one accumulator per element of its vector. The
//   Y rows are folded in shared memory. Columns of many rows are cut into splits until the blocks
//   fill the GPU; a second launch folds the splits' partials. X and the splits' target are
//   ViewTuning (techniques.hpp). A block per column, or a thread per column down all the rows,
//   would read a few bytes of each row at a time.
// - Strided (any other view). The reduced axis of the smallest step is walked as runs, and the
//   other reduced axes count the runs; a block reduces one result (or one split of its runs), X
//   threads along a run and Y runs at a time, with vector loads where the runs are contiguous and
//   aligned: axes (0, 2) of a C-order (a, b, c) array read as runs of c. Any strides are correct;
//   where the smallest reduced step is not 1 the loads are scattered and slow.
//
// Both hand each result's whole partial to a writer: the core ops' writes its final value
// (F::finish), as the segments kernels do, and for argmin and argmax its index along the reduced
// axes, flattened in C order (the row of a column; in a strided view, the run's index and the
// position in it, weighted as the axes they walk); the statistics keep the partials, which a
// small kernel of each op then finishes with the count and the correction (statistics.cuh), or
// the host folds (host records' chunks).

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <type_traits>

#include "../techniques.hpp"
#include "vector_loads.cuh"
#include "xreduce/request.hpp"

namespace xreduce::cuda {

struct ViewsPolicy {
  static constexpr int block = 256;
  static constexpr int unroll = 4;     //!< rows (runs) a thread has in flight
  static constexpr int min_loads = 8;  //!< loads a thread makes at least, before a column is split further
};

//! `kVec` elements of one load: 16 bytes, or one element where the view is not aligned to them.
template <class In, int kVec>
struct alignas(sizeof(In) * kVec) Pack {
  In e[kVec];
};

//! The block over a row of `vectors` loads: X threads (a power of two, at most the block), Y rows.
struct Tile {
  int x = 1, y = 1;
};
inline Tile tile_for(std::uint64_t vectors, int block, int max_x) {
  Tile t;
  while (t.x < std::min(block, max_x) && static_cast<std::uint64_t>(t.x) < vectors) t.x *= 2;
  t.y = block / t.x;
  return t;
}

//! Cuts `length` rows (runs) into splits: as many as keep `pieces` times the splits within
//! `target` blocks (one where the pieces alone reach it), but none so short that a thread makes
//! fewer than `min_loads` loads. Returns the rows a split has.
inline std::uint64_t rows_per_split(std::uint64_t length, std::uint64_t pieces, std::uint64_t target, int tile_y, int min_loads) {
  const std::uint64_t wanted = target / std::max<std::uint64_t>(pieces, 1);
  const std::uint64_t most = std::max<std::uint64_t>(1, length / (static_cast<std::uint64_t>(tile_y) * min_loads));
  const std::uint64_t splits = std::max<std::uint64_t>(1, std::min(wanted, most));
  return std::max<std::uint64_t>(1, (length + splits - 1) / splits);
}

//! A batch of column reductions: `batch` blocks of `rows` rows of `width` elements, contiguous.
struct ColumnsShape {
  std::uint64_t batch = 0, rows = 0, width = 0;
  std::uint64_t tiles = 0;       //!< blocks of X vectors across a row
  std::uint64_t splits = 1, split_rows = 0;
  int tile_x = 1, tile_y = 1;
};

//! What the kernels do with result o's partial, once it is whole: the core ops' writer puts its
//! value (F::finish) in `values` and, for argmin/argmax, its index in `indices`; the statistics'
//! (PartialResults) keeps the partial, for a finish that needs the count and the correction
//! (statistics.cuh), or for the host's fold of host records' chunks.
template <class F>
struct FinishedResults {
  typename F::result_t* values;
  std::uint64_t* indices;
  __device__ void operator()(const typename F::acc_t& a, std::uint64_t o) const {
    values[o] = F::finish(a);
    if constexpr (is_arg_op<F>) indices[o] = a.index;
  }
};
template <class A>
struct PartialResults {
  A* partials;
  __device__ void operator()(const A& a, std::uint64_t o) const { partials[o] = a; }
};

//! Whether F's accumulator takes several elements of one result at once (add_together): the
//! exact sums' (exact_views.cuh), whose test of the elements' range is per call. The others take
//! them one at a time, each with its index.
template <class F>
struct adds_together : std::false_type {};

//! The doubles of shared memory each of F's accumulators keeps as its own (use_bins, given the
//! block's: its thread's are every block-th from its index), after the columns kernel's slots:
//! the exponent bins of the exact sums of f32, f16 and bf16 (exact_views.cuh). None by default.
template <class F>
struct lane_bins : std::integral_constant<int, 0> {};

//! The dynamic shared memory of a block of the views kernels under F: `slots` slots a thread (the
//! columns kernel's, an accumulator each), then the bins of `accumulators` a thread (lane_bins).
template <class P, class F>
constexpr std::size_t views_shared_bytes(int slots, int accumulators) {
  return std::size_t(P::block) * (slots * sizeof(typename F::acc_t) + accumulators * lane_bins<F>::value * sizeof(double));
}
//! The bins of a block's accumulators (lane_bins<F> doubles a thread each), after `slots` slots a
//! thread in its dynamic shared memory (views_shared_bytes): accumulator j's at j * lane_bins * block.
template <class P, class F>
__device__ inline double* views_lane_bins(int slots) {
  return reinterpret_cast<double*>(shared_array<typename F::acc_t>() + std::size_t(P::block) * slots);
}

//! Rows a thread of the columns kernel has in flight: P::unroll, or where F takes a column's
//! elements together and its loads are cut short of a 16-byte vector (column_vector, below: the
//! exact sums' partials fill the block's slots), as many more as keep a thread's bytes in flight
//! those of P::unroll vectors, with one test of the range for all of a column's. (On an H100, with
//! four rows: f32 over axis 0 of (16384, 16384) 1.22x the plain kernel on uniform data, 2.14-2.30x
//! on wide; bf16 over a middle axis 1.87x on uniform. So: 1.03x, 1.72x, 1.71x. Random-bit data over
//! a middle axis, whose elements then went to the partial one at a time, lost: f32 1.80x to 1.99x,
//! bf16 3.32x to 3.55x; bench/results/nvidia-h100/logs/run-73ba103. They go to bins now.)
template <class P, class F, int kVec>
constexpr int columns_rows() {
  return adds_together<F>::value ? P::unroll * vector_width<typename F::In>() / kVec : P::unroll;
}

template <class P, int kVec, class F, class Write>
__global__ __launch_bounds__(P::block) void view_columns_kernel(const typename F::In* __restrict__ x, ColumnsShape s, F f,
                                                                typename F::acc_t* __restrict__ partials, Write write) {
  using In = typename F::In;
  using A = typename F::acc_t;
  A* slots = shared_array<A>();
  const int tx = threadIdx.x % s.tile_x, ty = threadIdx.x / s.tile_x;
  const std::uint64_t row_vectors = s.width / kVec, items = s.batch * s.tiles * s.splits, step = s.tile_y;
  for (std::uint64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const std::uint64_t split = item % s.splits, tile = item / s.splits % s.tiles, b = item / s.splits / s.tiles;
    const std::uint64_t v = tile * s.tile_x + tx;  // this thread's load of each row
    Accumulator<F> acc[kVec];
#pragma unroll
    for (int j = 0; j < kVec; ++j) acc[j].init(f);
    if constexpr (lane_bins<F>::value > 0) {
#pragma unroll
      for (int j = 0; j < kVec; ++j) acc[j].use_bins(views_lane_bins<P, F>(kVec) + j * lane_bins<F>::value * P::block);
    }
    if (v < row_vectors) {
      const In* column = x + b * s.rows * s.width + v * kVec;
      const std::uint64_t end = std::min(s.rows, (split + 1) * s.split_rows);
      std::uint64_t r = split * s.split_rows + ty;
      constexpr int kRows = columns_rows<P, F, kVec>();
      for (; r + (kRows - 1) * step < end; r += kRows * step) {
        Pack<In, kVec> l[kRows];
#pragma unroll
        for (int u = 0; u < kRows; ++u) l[u] = *reinterpret_cast<const Pack<In, kVec>*>(column + (r + u * step) * s.width);
        if constexpr (adds_together<F>::value) {  // column j's elements of the rows in flight together
#pragma unroll
          for (int j = 0; j < kVec; ++j) {
            In e[kRows];
#pragma unroll
            for (int u = 0; u < kRows; ++u) e[u] = l[u].e[j];
            acc[j].add_together(f, e);
          }
        } else {
#pragma unroll
          for (int u = 0; u < kRows; ++u)
#pragma unroll
            for (int j = 0; j < kVec; ++j) acc[j].add(f, f.lift(l[u].e[j], r + u * step));  // the index: the row
        }
      }
      for (; r < end; r += step) {
        const Pack<In, kVec> l = *reinterpret_cast<const Pack<In, kVec>*>(column + r * s.width);
#pragma unroll
        for (int j = 0; j < kVec; ++j) acc[j].add(f, f.lift(l.e[j], r));
      }
    }
    // Slot (ty, tx, j) is threadIdx.x * kVec + j: a row of the tile is tile_x * kVec slots.
#pragma unroll
    for (int j = 0; j < kVec; ++j) slots[threadIdx.x * kVec + j] = acc[j].value(f);
    __syncthreads();
    const int row_slots = s.tile_x * kVec;
    for (int e = threadIdx.x; e < row_slots; e += P::block) {
      A a = slots[e];
      for (int y = 1; y < s.tile_y; ++y) a = f(a, slots[y * row_slots + e]);
      const std::uint64_t c = tile * row_slots + e;
      if (c < s.width) {
        if (s.splits == 1) write(a, b * s.width + c);
        else partials[(b * s.splits + split) * s.width + c] = a;
      }
    }
    __syncthreads();  // the slots are the next item's
  }
}

//! Any view: `results` results, each over `runs` runs of `run_length` elements `run_step` apart.
struct StridedShape {
  int kept_rank = 0, run_rank = 0;
  std::int64_t kept_extent[kMaxRank] = {}, kept_stride[kMaxRank] = {};  //!< the results' axes, C order
  std::int64_t run_extent[kMaxRank] = {}, run_stride[kMaxRank] = {};    //!< the reduced axes but the runs'
  //! argmin/argmax: the weight of a reduced axis in the index is the product of the extents of
  //! the reduced axes after it, in the view's order; those of the axes counting the runs, and of
  //! the runs' own axis.
  std::int64_t run_weight[kMaxRank] = {};
  std::int64_t run_axis_weight = 1;
  std::uint64_t results = 0, runs = 0, run_length = 0;
  std::int64_t run_step = 1;
  std::uint64_t splits = 1, split_runs = 0;
  int tile_x = 1, tile_y = 1;
};

//! The geometry of canonical request `c` (any view) for view_strided_kernel: its kept axes in
//! order; the reduced axis of the smallest step as the runs (the later of equal ones), the other
//! reduced axes counting them.
inline StridedShape strided_shape(const Request& c) {
  StridedShape s;
  int run_axis = -1;
  for (std::size_t k = 0; k < c.view.rank; ++k)
    if (c.axes.empty() || c.axes.contains(k))
      if (run_axis < 0 || std::llabs(c.view.strides[k]) <= std::llabs(c.view.strides[run_axis])) run_axis = static_cast<int>(k);
  s.results = s.runs = 1;
  std::int64_t weights[kMaxRank] = {}, weight = 1;  // of each reduced axis, in the view's order
  for (std::size_t k = c.view.rank; k-- > 0;)
    if (c.axes.empty() || c.axes.contains(k)) weights[k] = weight, weight *= c.view.shape[k];
  for (std::size_t k = 0; k < c.view.rank; ++k) {
    const std::int64_t extent = c.view.shape[k], stride = c.view.strides[k];
    if (static_cast<int>(k) == run_axis) {
      s.run_length = static_cast<std::uint64_t>(extent), s.run_step = stride, s.run_axis_weight = weights[k];
    } else if (c.axes.empty() || c.axes.contains(k)) {
      s.run_extent[s.run_rank] = extent, s.run_stride[s.run_rank] = stride, s.run_weight[s.run_rank++] = weights[k];
      s.runs *= static_cast<std::uint64_t>(extent);
    } else {
      s.kept_extent[s.kept_rank] = extent, s.kept_stride[s.kept_rank++] = stride;
      s.results *= static_cast<std::uint64_t>(extent);
    }
  }
  return s;
}

//! Where element i (C order over `rank` axes) of a view lies, in elements from its first.
__device__ inline std::int64_t offset_of(std::uint64_t i, const std::int64_t* extent, const std::int64_t* stride, int rank) {
  std::int64_t at = 0;
  for (int k = rank - 1; k > 0; --k) {
    const std::uint64_t e = static_cast<std::uint64_t>(extent[k]);
    at += static_cast<std::int64_t>(i % e) * stride[k];
    i /= e;
  }
  return rank > 0 ? at + static_cast<std::int64_t>(i) * stride[0] : at;
}

template <class P, int kVec, class F, class Write>
__global__ __launch_bounds__(P::block) void view_strided_kernel(const typename F::In* __restrict__ x, StridedShape s, F f,
                                                                typename F::acc_t* __restrict__ partials, Write write) {
  using In = typename F::In;
  const int tx = threadIdx.x % s.tile_x, ty = threadIdx.x / s.tile_x;
  const std::uint64_t loads = s.run_length / kVec, items = s.results * s.splits, step = s.tile_y;
  // The index of run r's first element (argmin/argmax; 0 for the other ops, which take none).
  auto first_of = [&](std::uint64_t r) -> std::uint64_t {
    if constexpr (is_arg_op<F>) return static_cast<std::uint64_t>(offset_of(r, s.run_extent, s.run_weight, s.run_rank));
    else return 0;
  };
  const auto along = static_cast<std::uint64_t>(s.run_axis_weight);
  // One load of a run: kVec contiguous elements, or one element run_step from the last.
  auto load = [&](const In* run, std::uint64_t v) {
    Pack<In, kVec> l;
    if constexpr (kVec > 1) l = *reinterpret_cast<const Pack<In, kVec>*>(run + v * kVec);
    else l.e[0] = run[static_cast<std::int64_t>(v) * s.run_step];
    return l;
  };
  auto add = [&](Accumulator<F>& acc, const Pack<In, kVec>& l, std::uint64_t first, std::uint64_t v) {
    if constexpr (kVec > 1 && adds_together<F>::value) {
      acc.add_together(f, l.e);
    } else {
#pragma unroll
      for (int j = 0; j < kVec; ++j) acc.add(f, f.lift(l.e[j], first + (v * kVec + j) * along));
    }
  };
  for (std::uint64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const std::uint64_t split = item % s.splits, o = item / s.splits;
    const In* base = x + offset_of(o, s.kept_extent, s.kept_stride, s.kept_rank);
    Accumulator<F> acc;
    acc.init(f);
    if constexpr (lane_bins<F>::value > 0) acc.use_bins(views_lane_bins<P, F>(0));
    const std::uint64_t end = std::min(s.runs, (split + 1) * s.split_runs);
    std::uint64_t r = split * s.split_runs + ty;
    for (; r + (P::unroll - 1) * step < end; r += P::unroll * step) {
      const In* run[P::unroll];
      std::uint64_t first[P::unroll];
#pragma unroll
      for (int u = 0; u < P::unroll; ++u)
        run[u] = base + offset_of(r + u * step, s.run_extent, s.run_stride, s.run_rank), first[u] = first_of(r + u * step);
      // Every run's load first, then their additions: an accumulator with a branch (the exact
      // sums') would otherwise wait for each load in turn, the next one issued past the branch.
      // (The exact f32 and bf16 kernels had one load in flight a thread, sm_90 SASS: on an H100,
      // bf16 over two outer axes took 1.85x the plain kernel on uniform data so, 1.16x now.)
      for (std::uint64_t v = tx; v < loads; v += s.tile_x) {
        Pack<In, kVec> l[P::unroll];
#pragma unroll
        for (int u = 0; u < P::unroll; ++u) l[u] = load(run[u], v);
#pragma unroll
        for (int u = 0; u < P::unroll; ++u) add(acc, l[u], first[u], v);
      }
    }
    for (; r < end; r += step) {
      const In* run = base + offset_of(r, s.run_extent, s.run_stride, s.run_rank);
      const std::uint64_t first = first_of(r);
      for (std::uint64_t v = tx; v < loads; v += s.tile_x) add(acc, load(run, v), first, v);
    }
    const typename F::acc_t a = block_reduce<P::block>(acc.value(f), f);
    if (threadIdx.x == 0) {
      if (s.splits == 1) write(a, o);
      else partials[o * s.splits + split] = a;
    }
    __syncthreads();  // block_reduce's shared slots are the next item's
  }
}

//! Result o (of `results`, `width` to a batch) from its `splits` partials, which lie `width`
//! apart in the batch's rows of partials: partials[(b * splits + k) * width + c]. A block folds
//! `group` consecutive results, its other threads (lanes) going down their splits, then a tree in
//! shared memory: a few results of many splits (narrow columns) still spread over the GPU.
template <int kBlock, class F, class Write>
__global__ __launch_bounds__(kBlock) void fold_splits_kernel(const typename F::acc_t* __restrict__ partials, std::uint64_t results,
                                                             std::uint64_t splits, std::uint64_t width, int group, F f, Write write) {
  using A = typename F::acc_t;
  A* slots = shared_array<A>();
  const int g = threadIdx.x % group, lane = threadIdx.x / group, lanes = kBlock / group;
  for (std::uint64_t first = blockIdx.x * static_cast<std::uint64_t>(group); first < results;
       first += static_cast<std::uint64_t>(gridDim.x) * group) {
    const std::uint64_t o = first + g;
    A a = f.identity();
    if (o < results) {
      const A* column = partials + o / width * splits * width + o % width;
      for (std::uint64_t k = lane; k < splits; k += lanes) a = f(a, column[k * width]);
    }
    slots[threadIdx.x] = a;
    __syncthreads();
    for (int half = lanes / 2; half > 0; half /= 2) {
      if (lane < half) slots[threadIdx.x] = f(slots[threadIdx.x], slots[threadIdx.x + half * group]);
      __syncthreads();
    }
    if (lane == 0 && o < results) write(slots[threadIdx.x], o);
    __syncthreads();  // the slots are the next results'
  }
}

//! Elements of a columns kernel's load: a 16-byte vector's, or fewer where the block's slots in
//! shared memory (one accumulator an element) would pass the 48 KiB a block has without asking:
//! argmin/argmax of bytes (16-byte index pairs) take 8-byte loads (and the exact sums' 72-byte
//! partials, exact_views.cuh, 8-byte loads of f32: 16-byte ones, in 72 KiB of slots a block, took
//! 1.25-1.6x the time on an H200).
template <class F>
constexpr int column_vector() {
  constexpr std::size_t limit = 48 * 1024 / (std::size_t(ViewsPolicy::block) * sizeof(typename F::acc_t));
  int v = vector_width<typename F::In>();
  while (v > 1 && static_cast<std::size_t>(v) > limit) v /= 2;
  return v;
}

struct Views {
  //! Enqueues (batch, rows, width) over axis 1 at device pointer x (aligned to its element size):
  //! batch * width results, result o handed to `write` (FinishedResults or PartialResults) as
  //! batch-major, column-minor o.
  template <class F, class Write>
  static void columns(const typename F::In* x, std::uint64_t batch, std::uint64_t rows, std::uint64_t width, F f, Write write,
                      Workspace& ws, ViewTuning tuning = {}) {
    constexpr int kVec = column_vector<F>();
    if (reinterpret_cast<std::uintptr_t>(x) % 16 == 0 && width % kVec == 0)
      columns_with<kVec>(x, batch, rows, width, f, write, ws, tuning);
    else columns_with<1>(x, batch, rows, width, f, write, ws, tuning);  // rows that are not whole vectors: scalar loads
  }

  //! Enqueues any view `s` (its geometry set, not its tiles and splits) at device pointer x,
  //! result o (C order over the kept axes) handed to `write`.
  template <class F, class Write>
  static void strided(const typename F::In* x, StridedShape s, F f, Write write, Workspace& ws, ViewTuning tuning = {}) {
    constexpr int kVec = vector_width<typename F::In>();
    // Vectors where every run is contiguous and starts on a 16-byte boundary.
    bool vectors = s.run_step == 1 && s.run_length % kVec == 0 && reinterpret_cast<std::uintptr_t>(x) % 16 == 0;
    for (int k = 0; k < s.kept_rank; ++k) vectors = vectors && (s.kept_extent[k] == 1 || s.kept_stride[k] % kVec == 0);
    for (int k = 0; k < s.run_rank; ++k) vectors = vectors && (s.run_extent[k] == 1 || s.run_stride[k] % kVec == 0);
    if (vectors) strided_with<kVec>(x, s, f, write, ws, tuning);
    else strided_with<1>(x, s, f, write, ws, tuning);
  }

 private:
  //! Lets `kernel` have `shared_bytes` of dynamic shared memory on the current device, where that
  //! is past the 48 KiB a block has without asking (the exact sums' bins beside the slots). Each
  //! launch asks: the attribute is the current device's.
  template <class Kernel>
  static void allow_shared(Kernel kernel, std::size_t shared_bytes) {
    if (shared_bytes > 48 * 1024)
      XREDUCE_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared_bytes)));
  }
  //! Blocks of `kernel` an SM holds at once, given `shared_bytes` (allowed first: allow_shared).
  template <class Kernel>
  static std::uint64_t blocks_per_sm(Kernel kernel, std::size_t shared_bytes) {
    int per_sm = 0;
    XREDUCE_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, ViewsPolicy::block, shared_bytes));
    return static_cast<std::uint64_t>(std::max(per_sm, 1));
  }

  template <int kVec, class F, class Write>
  static void columns_with(const typename F::In* x, std::uint64_t batch, std::uint64_t rows, std::uint64_t width, F f,
                           Write write, Workspace& ws, ViewTuning tuning) {
    using P = ViewsPolicy;
    using A = typename F::acc_t;
    const auto kernel = view_columns_kernel<P, kVec, F, Write>;
    const std::size_t shared = views_shared_bytes<P, F>(kVec, kVec);
    allow_shared(kernel, shared);
    static const std::uint64_t per_sm = blocks_per_sm(kernel, shared);
    const std::uint64_t resident = per_sm * ws.sm_count;
    ColumnsShape s;
    s.batch = batch, s.rows = rows, s.width = width;
    // The exact sums of f32, f16 and bf16 (those that add a column's elements together) take their own tile.
    const Tile t = tile_for(width / kVec, P::block, adds_together<F>::value ? tuning.exact_max_tile_x : tuning.max_tile_x);
    s.tile_x = t.x, s.tile_y = t.y;
    s.tiles = (width / kVec + t.x - 1) / t.x;
    s.split_rows = rows_per_split(rows, batch * s.tiles, tuning.waves * resident, t.y,
                                  std::max(P::min_loads, columns_rows<P, F, kVec>()));  // a whole round of rows at least
    s.splits = (rows + s.split_rows - 1) / s.split_rows;
    A* partials = s.splits > 1 ? static_cast<A*>(ws.scratch.reserve(batch * s.splits * width * sizeof(A), "partials of columns"))
                               : nullptr;
    const std::uint64_t items = batch * s.tiles * s.splits;
    kernel<<<static_cast<unsigned>(std::min<std::uint64_t>(items, 8 * resident)), P::block, shared, ws.stream>>>(x, s, f, partials,
                                                                                                                write);
    XREDUCE_CUDA(cudaGetLastError());
    if (s.splits > 1) fold(partials, batch * width, s.splits, width, f, write, ws);
  }

  template <int kVec, class F, class Write>
  static void strided_with(const typename F::In* x, StridedShape s, F f, Write write, Workspace& ws, ViewTuning tuning) {
    using P = ViewsPolicy;
    using A = typename F::acc_t;
    const auto kernel = view_strided_kernel<P, kVec, F, Write>;
    const std::size_t shared = views_shared_bytes<P, F>(0, 1);
    allow_shared(kernel, shared);
    static const std::uint64_t per_sm = blocks_per_sm(kernel, shared);
    const std::uint64_t resident = per_sm * ws.sm_count;
    const Tile t = tile_for(s.run_length / kVec, P::block, tuning.max_tile_x);
    s.tile_x = t.x, s.tile_y = t.y;
    s.split_runs = rows_per_split(s.runs, s.results, tuning.waves * resident, t.y, P::min_loads);
    s.splits = (s.runs + s.split_runs - 1) / s.split_runs;
    A* partials = s.splits > 1 ? static_cast<A*>(ws.scratch.reserve(s.results * s.splits * sizeof(A), "partials of a view")) : nullptr;
    const std::uint64_t items = s.results * s.splits;
    const auto blocks = static_cast<unsigned>(std::min<std::uint64_t>(items, 8 * resident));
    kernel<<<blocks, P::block, shared, ws.stream>>>(x, s, f, partials, write);
    XREDUCE_CUDA(cudaGetLastError());
    if (s.splits > 1) fold(partials, s.results, s.splits, 1, f, write, ws);
  }

  template <class F, class Write>
  static void fold(const typename F::acc_t* partials, std::uint64_t results, std::uint64_t splits, std::uint64_t width, F f,
                   Write write, Workspace& ws) {
    constexpr int kBlock = 256;
    // Consecutive results a block folds: 32 (coalesced reads of the partials) where the results
    // alone give every SM two blocks, fewer where they are few, down to one with all the lanes.
    int group = 32;
    while (group > 1 && results < static_cast<std::uint64_t>(group) * 2 * ws.sm_count) group /= 2;
    const std::uint64_t blocks = std::min<std::uint64_t>((results + group - 1) / group, std::uint64_t{1} << 16);
    fold_splits_kernel<kBlock><<<static_cast<unsigned>(blocks), kBlock, kBlock * sizeof(typename F::acc_t), ws.stream>>>(
        partials, results, splits, width, group, f, write);
    XREDUCE_CUDA(cudaGetLastError());
  }
};

//! Enqueues canonical view `c` of device data at x (layouts outer and middle by the columns
//! kernel, any other by the strided one) with policy f, each result handed to `write`.
template <class F, class Write>
void enqueue_view_with(const typename F::In* x, const Request& c, F f, Write write, Workspace& ws, const ViewTuning& tuning = {}) {
  const auto extent = [&](int k) { return static_cast<std::uint64_t>(c.view.shape[k]); };
  switch (layout_of(c)) {
    case Layout::middle: return Views::columns(x, extent(0), extent(1), extent(2), f, write, ws, tuning);
    case Layout::outer: return Views::columns(x, 1, extent(0), extent(1), f, write, ws, tuning);
    default: return Views::strided(x, strided_shape(c), f, write, ws, tuning);
  }
}

}  // namespace xreduce::cuda
