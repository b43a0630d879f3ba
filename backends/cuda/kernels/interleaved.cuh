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
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + tid;
  sdata[tid] = i < n ? f.lift(x[i], i) : f.identity();
  __syncthreads();
  for (unsigned s = 1; s < blockDim.x; s *= 2) {
    if (tid % (2 * s) == 0) sdata[tid] = f(sdata[tid], sdata[tid + s]);
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = sdata[0];
}

struct Interleaved {
  static std::size_t blocks_for(std::size_t n, int block, const Workspace&) { return ceil_div(n, block); }
  template <class F>
  static void launch(const typename F::In* x, std::size_t n, F f, int block, typename F::acc_t* out, std::size_t blocks,
                     cudaStream_t s) {
    interleaved_kernel<<<static_cast<unsigned>(blocks), block, shared_bytes<F>(block), s>>>(x, n, f, out);
  }
};

}  // namespace xreduce::cuda
