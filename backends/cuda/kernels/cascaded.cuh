#pragma once
// cuda.cascaded (seed 004 Table 1, kernel 7; Harris's reduce6): algorithm cascading. A grid of one
// wave of blocks; each thread first adds many elements in sequence (two per step, grid-stride, as
// the seed), then the block runs the unrolled tree. Brent's theorem in practice: O(n / log n)
// threads doing O(log n) work each. The partials (one per block) take one more single-block pass.

#include "unroll_full.cuh"

namespace xreduce::cuda {

template <unsigned kBlock, class F>
__global__ __launch_bounds__(kBlock) void cascaded_kernel(const typename F::In* __restrict__ x, std::size_t n, F f,
                                                          typename F::acc_t* out) {
  using A = typename F::acc_t;
  A* sdata = shared_array<A>();
  const unsigned tid = threadIdx.x;
  const std::size_t grid_size = 2 * static_cast<std::size_t>(kBlock) * gridDim.x;
  Accumulator<F> acc;
  acc.init(f);
  for (std::size_t i = blockIdx.x * (2 * static_cast<std::size_t>(kBlock)) + tid; i < n; i += grid_size) {
    acc.add(f, f.lift(x[i], i));
    if (i + kBlock < n) acc.add(f, f.lift(x[i + kBlock], i + kBlock));
  }
  sdata[tid] = acc.value(f);
  __syncthreads();
  unrolled_tree<kBlock>(sdata, tid, f);
  if (tid == 0) out[blockIdx.x] = sdata[0];
}

struct Cascaded {
  //! One wave of blocks for large inputs; a single block once each thread would add 32 or fewer.
  static std::size_t blocks_for(std::size_t n, int block, const Workspace& ws) {
    const std::size_t wave = static_cast<std::size_t>(ws.sm_count) * (2048 / block);
    if (n <= 64 * std::size_t(block)) return 1;
    return std::min(wave, ceil_div(n, 2 * std::size_t(block)));
  }
  template <class F>
  static void launch(const typename F::In* x, std::size_t n, F f, int block, typename F::acc_t* out, std::size_t blocks,
                     cudaStream_t s) {
    XREDUCE_LAUNCH_FOR_BLOCK_SIZE(cascaded_kernel, block, static_cast<unsigned>(blocks), s, x, n, f, out)
  }
};

}  // namespace xreduce::cuda
