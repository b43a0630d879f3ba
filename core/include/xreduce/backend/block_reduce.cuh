#pragma once
//! For GPU backend authors: warp and block reductions with warp shuffles, for any value type and
//! operator. The one copy shared by the CUDA module's kernels (backends/cuda/) and the GPU
//! template API (xreduce/cuda.cuh), which users compile with nvcc.

#include <cuda_runtime.h>

#include <cstring>
#include <type_traits>

namespace xreduce::gpu {

//! Warp shuffle down of any trivially copyable value: an arithmetic value in one shuffle, any
//! other one 32-bit word at a time (so a user's struct crosses too).
template <class A>
__device__ inline A shfl_down(const A& v, int offset) {
  if constexpr (std::is_arithmetic_v<A>) {
    return __shfl_down_sync(0xffffffffu, v, offset);
  } else {
    constexpr int kWords = (sizeof(A) + 3) / 4;
    unsigned w[kWords] = {};
    memcpy(w, &v, sizeof(A));
#pragma unroll
    for (int k = 0; k < kWords; ++k) w[k] = __shfl_down_sync(0xffffffffu, w[k], offset);
    A r;
    memcpy(&r, w, sizeof(A));
    return r;
  }
}

//! The shuffle above, as an object: what block_reduce takes unless a type has a cheaper one.
struct ShuffleDown {
  template <class A>
  __device__ A operator()(const A& v, int offset) const {
    return shfl_down(v, offset);
  }
};

//! Reduces one value per thread of a kBlock-thread block to thread 0's return value: a shuffle
//! tree in each warp, one shared slot per warp, then the first warp over the slots. Call from
//! every thread of the block.
//!
//! kGuardLanes: lanes whose partner is past the warp's end skip the combination, so `op` never
//! sees such a stray operand (a user's operator may not be total). An operator that is total on
//! any operands (the CUDA module's) leaves them unguarded, as CUB does: thread 0's result never
//! depends on them, and the tree is shorter (2% of a 2^20-element i32 sum on the H200).
template <int kBlock, bool kGuardLanes = true, class A, class Op, class Shuffle = ShuffleDown>
__device__ inline A block_reduce(A a, const Op& op, const A& identity, const Shuffle& shuffle = {}) {
  static_assert(kBlock % 32 == 0 && kBlock <= 1024, "block size must be a multiple of 32, at most 1024");
  // Raw bytes: A need not be default-constructible in shared memory.
  __shared__ alignas(16) unsigned char warp_bytes[(kBlock / 32) * sizeof(A)];
  A* warp_results = reinterpret_cast<A*>(warp_bytes);
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    const A other = shuffle(a, offset);
    if (!kGuardLanes || lane + offset < 32) a = op(a, other);
  }
  if (lane == 0) memcpy(&warp_results[warp], &a, sizeof(A));
  __syncthreads();
  if (warp == 0) {
    a = identity;
    if (lane < kBlock / 32) memcpy(&a, &warp_results[lane], sizeof(A));
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
      const A other = shuffle(a, offset);
      if (!kGuardLanes || lane + offset < 32) a = op(a, other);
    }
  }
  return a;
}

}  // namespace xreduce::gpu
