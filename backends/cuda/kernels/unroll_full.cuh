#pragma once
// cuda.unroll_full (seed 004 Table 1, kernel 6; Harris's reduce5): the block size is a template
// parameter, so every step of the tree is unrolled and its `if (kBlock >= ...)` vanishes at
// compile time. One instantiation per block size the seeds' tables use (128, 256, 512, 1024).

#include "first_add.cuh"

namespace xreduce::cuda {

//! The tree of a kBlock-thread block down to sdata[0], fully unrolled.
template <unsigned kBlock, class A, class F>
__device__ inline void unrolled_tree(A* sdata, unsigned tid, const F& f) {
  if constexpr (kBlock >= 1024) {
    if (tid < 512) sdata[tid] = f(sdata[tid], sdata[tid + 512]);
    __syncthreads();
  }
  if constexpr (kBlock >= 512) {
    if (tid < 256) sdata[tid] = f(sdata[tid], sdata[tid + 256]);
    __syncthreads();
  }
  if constexpr (kBlock >= 256) {
    if (tid < 128) sdata[tid] = f(sdata[tid], sdata[tid + 128]);
    __syncthreads();
  }
  if constexpr (kBlock >= 128) {
    if (tid < 64) sdata[tid] = f(sdata[tid], sdata[tid + 64]);
    __syncthreads();
  }
  reduce_last_warp(sdata, tid, f);
}

template <unsigned kBlock, class F>
__global__ __launch_bounds__(kBlock) void unroll_full_kernel(const typename F::In* __restrict__ x, std::size_t n, F f,
                                                             typename F::acc_t* out) {
  using A = typename F::acc_t;
  A* sdata = shared_array<A>();
  const unsigned tid = threadIdx.x;
  sdata[tid] = load_two(x, n, f);
  __syncthreads();
  unrolled_tree<kBlock>(sdata, tid, f);
  if (tid == 0) out[blockIdx.x] = sdata[0];
}

//! Launches Kernel<kBlock, F> for the run-time block size (one of the four the seeds' tables use).
#define XREDUCE_LAUNCH_FOR_BLOCK_SIZE(kernel, block, grid, stream, ...)                                    \
  switch (block) {                                                                                        \
    case 128: kernel<128><<<(grid), 128, shared_bytes<F>(128), (stream)>>>(__VA_ARGS__); break;           \
    case 256: kernel<256><<<(grid), 256, shared_bytes<F>(256), (stream)>>>(__VA_ARGS__); break;           \
    case 512: kernel<512><<<(grid), 512, shared_bytes<F>(512), (stream)>>>(__VA_ARGS__); break;           \
    default: kernel<1024><<<(grid), 1024, shared_bytes<F>(1024), (stream)>>>(__VA_ARGS__); break;         \
  }

// blocks_for from the base; launch of its own, since the kernel is chosen by block size.
struct UnrollFull : OnePartialPerBlock<UnrollFull, 2> {
  template <class F>
  static void launch(const typename F::In* x, std::size_t n, F f, int block, typename F::acc_t* out, std::size_t blocks,
                     cudaStream_t s) {
    XREDUCE_LAUNCH_FOR_BLOCK_SIZE(unroll_full_kernel, block, static_cast<unsigned>(blocks), s, x, n, f, out)
  }
};

}  // namespace xreduce::cuda
