#pragma once
// cuda.sequential (seed 004 Table 1, kernel 3; Harris's reduce2; seed 002's kernel): sequential
// addressing, thread tid adds tid + s for s = blockDim/2, /4, ...: contiguous active threads and
// no bank conflicts. Half the threads are idle from the first step on.

#include "common.cuh"

namespace xreduce::cuda {

template <class F>
__global__ void sequential_kernel(const typename F::In* __restrict__ x, std::size_t n, F f, typename F::acc_t* out) {
  using A = typename F::acc_t;
  A* sdata = shared_array<A>();
  const unsigned tid = threadIdx.x;
  sdata[tid] = load_one(x, n, f);
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) sdata[tid] = f(sdata[tid], sdata[tid + s]);
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = sdata[0];
}

struct Sequential : OnePartialPerBlock<Sequential, 1> {
  template <class F>
  static constexpr auto kernel = &sequential_kernel<F>;
};

}  // namespace xreduce::cuda
