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
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + tid;
  sdata[tid] = i < n ? f.lift(x[i], i) : f.identity();
  __syncthreads();
  for (unsigned s = 1; s < blockDim.x; s *= 2) {
    const unsigned index = 2 * s * tid;
    if (index < blockDim.x) sdata[index] = f(sdata[index], sdata[index + s]);
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = sdata[0];
}

struct InterleavedStrided {
  static std::size_t blocks_for(std::size_t n, int block, const Workspace&) { return ceil_div(n, block); }
  template <class F>
  static void launch(const typename F::In* x, std::size_t n, F f, int block, typename F::acc_t* out, std::size_t blocks,
                     cudaStream_t s) {
    interleaved_strided_kernel<<<static_cast<unsigned>(blocks), block, shared_bytes<F>(block), s>>>(x, n, f, out);
  }
};

}  // namespace xreduce::cuda
