#pragma once
// cuda.interleaved_strided (seed 004 Table 1, kernel 2; Harris's reduce1): the same tree, but
// thread tid works on index 2*s*tid, so the active threads are contiguous and warps no longer
// diverge. The strided index makes lanes of a warp hit the same shared-memory banks.

#include "common.cuh"

namespace xreduce::cuda {

template <class F>
__global__ void interleaved_strided_kernel(const typename F::In* __restrict__ x, std::size_t n, F f,
                                           typename F::acc_t* out) {
  using A = typename F::acc_t;
  A* sdata = shared_array<A>();
  const unsigned tid = threadIdx.x;
  sdata[tid] = load_one(x, n, f);
  __syncthreads();
  for (unsigned s = 1; s < blockDim.x; s *= 2) {
    const unsigned index = 2 * s * tid;
    if (index < blockDim.x) sdata[index] = f(sdata[index], sdata[index + s]);
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = sdata[0];
}

struct InterleavedStrided : OnePartialPerBlock<InterleavedStrided, 1> {
  template <class F>
  static constexpr auto kernel = &interleaved_strided_kernel<F>;
};

}  // namespace xreduce::cuda
