#pragma once
// cuda.first_add (seed 004 Table 1, kernel 4; Harris's reduce3; seed 003's "first add during
// load"): each block covers twice its size and every thread adds two elements while loading, so
// no thread is idle at the first step and half as many blocks are needed.

#include "common.cuh"

namespace xreduce::cuda {

//! Loads x[i] and x[i + blockDim.x] (when present) as one partial: the first add during load.
template <class F>
__device__ inline typename F::acc_t load_two(const typename F::In* __restrict__ x, std::size_t n, const F& f) {
  const std::size_t i = blockIdx.x * (2 * static_cast<std::size_t>(blockDim.x)) + threadIdx.x;
  typename F::acc_t v = i < n ? f.lift(x[i], i) : f.identity();
  if (i + blockDim.x < n) v = f(v, f.lift(x[i + blockDim.x], i + blockDim.x));
  return v;
}

template <class F>
__global__ void first_add_kernel(const typename F::In* __restrict__ x, std::size_t n, F f, typename F::acc_t* out) {
  using A = typename F::acc_t;
  A* sdata = shared_array<A>();
  const unsigned tid = threadIdx.x;
  sdata[tid] = load_two(x, n, f);
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) sdata[tid] = f(sdata[tid], sdata[tid + s]);
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = sdata[0];
}

struct FirstAdd : OnePartialPerBlock<FirstAdd, 2> {
  template <class F>
  static constexpr auto kernel = &first_add_kernel<F>;
};

}  // namespace xreduce::cuda
