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

struct UnrollWarp : OnePartialPerBlock<UnrollWarp, 2> {
  template <class F>
  static constexpr auto kernel = &unroll_warp_kernel<F>;
};

}  // namespace xreduce::cuda
