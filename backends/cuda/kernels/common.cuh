#pragma once
// What the kernel techniques share: dynamic shared memory of any type, the last-warp step done
// safely, a shuffle-based block reduction, and the host loop that runs a one-partial-per-block
// kernel pass after pass until one value is left.

#include <cstddef>

#include "../device_ops.cuh"
#include "../workspace.hpp"

namespace xreduce::cuda {

inline std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

//! The bits any lane of the warp has set (every lane calls it): one redux.sync from sm_80 on,
//! five shuffles before.
__device__ inline unsigned warp_or(unsigned v) {
#if __CUDA_ARCH__ >= 800
  return __reduce_or_sync(0xffffffffu, v);
#else
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v |= __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
#endif
}

//! The largest (kLargest) or the smallest of the warp's values (every lane calls it), likewise.
template <bool kLargest>
__device__ inline unsigned warp_extreme(unsigned v) {
#if __CUDA_ARCH__ >= 800
  return kLargest ? __reduce_max_sync(0xffffffffu, v) : __reduce_min_sync(0xffffffffu, v);
#else
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    const unsigned other = __shfl_xor_sync(0xffffffffu, v, offset);
    v = kLargest ? max(v, other) : min(v, other);
  }
  return v;
#endif
}
__device__ inline unsigned warp_max(unsigned v) { return warp_extreme<true>(v); }
__device__ inline unsigned warp_min(unsigned v) { return warp_extreme<false>(v); }

//! The block's dynamic shared memory as an array of A (one raw array serves every instantiation).
template <class A>
__device__ inline A* shared_array() {
  extern __shared__ __align__(16) unsigned char xreduce_shared_bytes[];
  return reinterpret_cast<A*>(xreduce_shared_bytes);
}

//! The last 64 partials of a block, reduced by its first warp. Seed 004 does this with a
//! `volatile` pointer and no synchronisation, relying on warps running in lockstep. Since Volta,
//! lanes of a warp may run independently, so that code reads neighbours' values before they are
//! written: a data race. Here every step reads, then __syncwarp(), then writes, then __syncwarp().
template <class A, class F>
__device__ inline void reduce_last_warp(A* sdata, unsigned tid, const F& f) {
  if (tid < 32) {
    A v = sdata[tid];
#pragma unroll
    for (unsigned s = 32; s > 0; s >>= 1) {
      v = f(v, sdata[tid + s]);
      __syncwarp();
      sdata[tid] = v;
      __syncwarp();
    }
  }
}

//! Reduces one value per thread to thread 0's return value (the shared block reduction of
//! xreduce/backend/block_reduce.cuh, with this module's shuffle of acc_t, unguarded: every
//! policy's operator is total). Call from every thread of a kBlock-thread block.
template <int kBlock, class A, class F>
__device__ inline A block_reduce(A a, const F& f) {
  return xreduce::gpu::block_reduce<kBlock, /*kGuardLanes=*/false>(a, f, f.identity(), AccShuffle{});
}

//! Runs Technique pass after pass: each pass writes one partial per block, the next reduces
//! those, until one block's result lands in ws.result. Technique provides
//!   static std::size_t blocks_for(std::size_t n, int block, const Workspace&);
//!   template <class F> static void launch(const typename F::In*, std::size_t n, F, int block,
//!                                         typename F::acc_t* out, std::size_t blocks, cudaStream_t);
template <class Technique, class F>
void multi_pass(const typename F::In* x, std::size_t n, F f, int block, Workspace& ws) {
  using A = typename F::acc_t;
  using P = typename partial_of<F>::type;
  std::size_t blocks = Technique::blocks_for(n, block, ws);
  const std::size_t first_blocks = blocks;  // later passes write fewer
  A* area = ws.scratch_as<A>(first_blocks);
  A* out = blocks == 1 ? ws.result_as<A>() : area;
  Technique::launch(x, n, f, block, out, blocks, ws.stream);
  XREDUCE_CUDA(cudaGetLastError());
  const P partial{f};
  A* in = out;
  std::size_t count = blocks;
  bool upper = true;  // the next pass writes the upper half of the scratch
  while (count > 1) {
    blocks = Technique::blocks_for(count, block, ws);
    A* next = blocks == 1 ? ws.result_as<A>() : (upper ? area + first_blocks : area);
    Technique::launch(in, count, partial, block, next, blocks, ws.stream);
    XREDUCE_CUDA(cudaGetLastError());
    in = next;
    count = blocks;
    upper = !upper;
  }
}

//! Dynamic shared memory of one partial per thread.
template <class F>
inline std::size_t shared_bytes(int block) {
  return static_cast<std::size_t>(block) * sizeof(typename F::acc_t);
}

//! One element per thread (kernels 1 to 3): x[i] lifted, or the identity past the end.
template <class F>
__device__ inline typename F::acc_t load_one(const typename F::In* __restrict__ x, std::size_t n, const F& f) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  return i < n ? f.lift(x[i], i) : f.identity();
}

//! The host side of a seed kernel that covers kPerThread elements per thread and writes one
//! partial per block, for multi_pass. Derived names its kernel:
//!   template <class F> static constexpr auto kernel = &the_kernel<F>;
template <class Derived, std::size_t kPerThread>
struct OnePartialPerBlock {
  static std::size_t blocks_for(std::size_t n, int block, const Workspace&) { return ceil_div(n, kPerThread * block); }
  template <class F>
  static void launch(const typename F::In* x, std::size_t n, F f, int block, typename F::acc_t* out, std::size_t blocks,
                     cudaStream_t s) {
    auto kernel = Derived::template kernel<F>;
    kernel<<<static_cast<unsigned>(blocks), block, shared_bytes<F>(block), s>>>(x, n, f, out);
  }
};

}  // namespace xreduce::cuda
