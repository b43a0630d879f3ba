#pragma once
// Records (Request::width k > 1): `count` rows of k values, reduced column by column, in the
// style of cuda.shuffle: 16-byte loads, several in flight per thread, a persistent grid.
//
// The trick that keeps the loads contiguous: the data are read as one flat array of count * k
// elements, and thread g reads the vectors at V*g + i*S for i = 0, 1, ..., where the stride S
// is a multiple of k (and of V, the elements per vector). So the element at V*g + j + i*S always
// belongs to column (V*g + j) mod k: each thread keeps V accumulators whose columns never change,
// and a warp still reads 512 consecutive bytes per load. Then each block folds its accumulators
// column by column through shared memory into k partials (or, when a block's slots cover less
// than one record, writes them as they are), and a second launch reduces each column's partials.

#include <algorithm>
#include <numeric>

#include "vector_loads.cuh"

namespace xreduce::cuda {

struct RecordsPolicy {
  static constexpr int block = 256;
  static constexpr int unroll = 4;  //!< vector loads in flight per thread
};

//! Column c's partials are at partials[c + i*k], i < partial_rows: so both layouts of kernel 1
//! (one row of k per block, or one slot per accumulator) are read the same way.
template <class P, int kVec, class F>
__global__ __launch_bounds__(P::block) void records_kernel(const typename F::In* __restrict__ x, std::size_t elements,
                                                           std::size_t k, std::size_t stride, bool fold_in_block, F f,
                                                           typename F::acc_t* __restrict__ partials) {
  using In = typename F::In;
  using A = typename F::acc_t;
  const std::size_t g = blockIdx.x * static_cast<std::size_t>(P::block) + threadIdx.x;
  const std::size_t first = kVec * g;  // the first of this thread's slots
  Accumulator<F> acc[kVec];
#pragma unroll
  for (int j = 0; j < kVec; ++j) acc[j].init(f);
  if (first < stride) {  // threads past the stride have no slots (the grid is rounded up)
    std::size_t pos = first;
    for (; pos + (P::unroll - 1) * stride + kVec <= elements; pos += P::unroll * stride) {
      Vec<In> r[P::unroll];
#pragma unroll
      for (int u = 0; u < P::unroll; ++u) r[u] = *reinterpret_cast<const Vec<In>*>(x + pos + u * stride);
#pragma unroll
      for (int u = 0; u < P::unroll; ++u)
#pragma unroll
        for (int j = 0; j < kVec; ++j) acc[j].add(f, f.lift(r[u].e[j], 0));
    }
    for (; pos < elements; pos += stride) {
      if (pos + kVec <= elements) {
        const Vec<In> r = *reinterpret_cast<const Vec<In>*>(x + pos);
#pragma unroll
        for (int j = 0; j < kVec; ++j) acc[j].add(f, f.lift(r.e[j], 0));
      } else {
        for (int j = 0; pos + j < elements; ++j) acc[j].add(f, f.lift(x[pos + j], 0));
      }
    }
  }
  if (!fold_in_block) {  // one partial per slot: the block's slots cover less than one record
    if (first < stride)
#pragma unroll
      for (int j = 0; j < kVec; ++j) partials[first + j] = acc[j].value(f);
    return;
  }
  A* slots = shared_array<A>();
#pragma unroll
  for (int j = 0; j < kVec; ++j) slots[kVec * threadIdx.x + j] = acc[j].value(f);
  __syncthreads();
  constexpr std::size_t kSlots = static_cast<std::size_t>(P::block) * kVec;
  const std::size_t block_first = blockIdx.x * kSlots;
  for (std::size_t c = threadIdx.x; c < k; c += P::block) {
    A a = f.identity();
    for (std::size_t s = (c + k - block_first % k) % k; s < kSlots; s += k) a = f(a, slots[s]);
    partials[blockIdx.x * k + c] = a;
  }
}

//! One block per column (grid-stride over columns): out[c] = the combination of column c's
//! partials[c + i*k], i < rows.
template <int kBlock, class F>
__global__ __launch_bounds__(kBlock) void columns_kernel(const typename F::acc_t* __restrict__ partials, std::size_t rows,
                                                         std::size_t k, F f, typename F::acc_t* __restrict__ out) {
  using A = typename F::acc_t;
  for (std::size_t c = blockIdx.x; c < k; c += gridDim.x) {
    A a = f.identity();
    for (std::size_t i = threadIdx.x; i < rows; i += kBlock) a = f(a, partials[c + i * k]);
    a = block_reduce<kBlock>(a, f);
    if (threadIdx.x == 0) out[c] = a;
    __syncthreads();  // block_reduce's shared slots are reused by the next column
  }
}

//! The grid of a records kernel (records_kernel, or exact_f16_records_kernel) over `elements` of
//! records of k values, each block holding `slots` slots (threads times kVec) and loading `unroll`
//! rounds ahead, `wave` blocks filling the GPU once: one wave of blocks, fewer for small inputs,
//! more where a period, lcm(kVec, k), is longer than a wave or where the stride must be at least
//! `min_stride`; and the stride, a multiple of the period, so that each slot keeps its column.
struct RecordsGrid {
  std::size_t blocks, stride;
};
inline RecordsGrid records_grid(std::size_t elements, std::size_t k, std::size_t vec, std::size_t slots,
                                std::size_t unroll, std::size_t wave, std::size_t min_stride = 0) {
  const std::size_t period = std::lcm(vec, k);
  std::size_t blocks = std::min(wave, ceil_div(elements, slots * unroll));
  blocks = std::max(blocks, ceil_div(min_stride + period, slots));  // blocks * slots - period < stride
  return {blocks, blocks * slots / period * period};
}

struct Records {
  //! Enqueues the reduction of `count` records of k values at device pointer x; the k column
  //! accumulators land in `out` (device).
  template <class F>
  static void run(const typename F::In* x, std::size_t count, std::size_t k, F f, typename F::acc_t* out, Workspace& ws) {
    if (reinterpret_cast<std::uintptr_t>(x) % 16 == 0) launch<vector_width<typename F::In>()>(x, count, k, f, out, ws);
    else launch<1>(x, count, k, f, out, ws);  // element-aligned device input: scalar loads
  }

 private:
  template <int kVec, class F>
  static void launch(const typename F::In* x, std::size_t count, std::size_t k, F f, typename F::acc_t* out, Workspace& ws) {
    using P = RecordsPolicy;
    using A = typename F::acc_t;
    const std::size_t elements = count * k;
    static const int per_sm = [] {
      int b = 0;
      XREDUCE_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, records_kernel<P, kVec, F>, P::block,
                                                                 std::size_t(P::block) * kVec * sizeof(A)));
      return b > 0 ? b : 1;
    }();
    constexpr std::size_t kSlots = std::size_t(P::block) * kVec;
    const auto [blocks, stride] = records_grid(elements, k, kVec, kSlots, P::unroll, std::size_t(per_sm) * ws.sm_count);
    const bool fold_in_block = k <= kSlots;
    const std::size_t partial_count = fold_in_block ? blocks * k : stride;
    A* partials = static_cast<A*>(ws.scratch.reserve(partial_count * sizeof(A), "partials of records"));
    records_kernel<P, kVec><<<static_cast<unsigned>(blocks), P::block, kSlots * sizeof(A), ws.stream>>>(
        x, elements, k, stride, fold_in_block, f, partials);
    XREDUCE_CUDA(cudaGetLastError());
    const unsigned column_blocks = static_cast<unsigned>(std::min<std::size_t>(k, std::size_t{1} << 20));
    columns_kernel<P::block><<<column_blocks, P::block, 0, ws.stream>>>(partials, partial_count / k, k,
                                                                         typename partial_of<F>::type{f}, out);
    XREDUCE_CUDA(cudaGetLastError());
  }
};

}  // namespace xreduce::cuda
