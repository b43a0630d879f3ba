#pragma once
// cuda.interleaved (seed 004 Table 1, kernel 1; Harris's reduce0): one element per thread into
// shared memory, then a tree in which thread tid works at step s when tid % (2s) == 0. The `%`
// branch leaves most lanes of every warp idle and divergent; `%` itself is slow.

#include "common.cuh"

namespace xreduce::cuda {

template <class F>
__global__ void interleaved_kernel(const typename F::In* __restrict__ x, std::size_t n, F f, typename F::acc_t* out) {
  using A = typename F::acc_t;
  A* sdata = shared_array<A>();
  const unsigned tid = threadIdx.x;
  sdata[tid] = load_one(x, n, f);
  __syncthreads();
  for (unsigned s = 1; s < blockDim.x; s *= 2) {
    if (tid % (2 * s) == 0) sdata[tid] = f(sdata[tid], sdata[tid + s]);
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = sdata[0];
}

struct Interleaved : OnePartialPerBlock<Interleaved, 1> {
  template <class F>
  static constexpr auto kernel = &interleaved_kernel<F>;
};

}  // namespace xreduce::cuda
