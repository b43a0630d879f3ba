#pragma once
// cuda.unroll_warp (seed 004 Table 1, kernel 5; Harris's reduce4; seed 000's "optimizada"): first
// add during load, the tree loop stops at s = 64, and the first warp finishes the last six steps
// without block-wide barriers (reduce_last_warp: with __syncwarp, not the seeds' racy `volatile`).

#include "first_add.cuh"

namespace xreduce::cuda {

template <class F>
__global__ void unroll_warp_kernel(const typename F::In* __restrict__ x, std::size_t n, F f, typename F::acc_t* out) {
  using A = typename F::acc_t;
  A* sdata = shared_array<A>();
  const unsigned tid = threadIdx.x;
  sdata[tid] = load_two(x, n, f);
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 32; s >>= 1) {
    if (tid < s) sdata[tid] = f(sdata[tid], sdata[tid + s]);
    __syncthreads();
  }
  reduce_last_warp(sdata, tid, f);
  if (tid == 0) out[blockIdx.x] = sdata[0];
}

struct UnrollWarp {
  static std::size_t blocks_for(std::size_t n, int block, const Workspace&) { return ceil_div(n, 2 * std::size_t(block)); }
  template <class F>
  static void launch(const typename F::In* x, std::size_t n, F f, int block, typename F::acc_t* out, std::size_t blocks,
                     cudaStream_t s) {
    unroll_warp_kernel<<<static_cast<unsigned>(blocks), block, shared_bytes<F>(block), s>>>(x, n, f, out);
  }
};

}  // namespace xreduce::cuda
