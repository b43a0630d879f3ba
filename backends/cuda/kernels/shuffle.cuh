#pragma once
// cuda.shuffle (modern): 16-byte loads, several independent accumulators per thread, grid-stride
// over one wave of blocks, and the block's partials combined with warp shuffles instead of a
// shared-memory tree. A second, single-block launch reduces the per-block partials.

#include "vector_loads.cuh"

namespace xreduce::cuda {

template <class P, class F>
__global__ __launch_bounds__(P::block) void shuffle_kernel(const typename F::In* __restrict__ x, std::size_t n,
                                                           std::size_t head, F f, typename F::acc_t* out) {
  typename F::acc_t a = block_reduce<P::block>(thread_partial<P>(x, n, head, f), f);
  if (threadIdx.x == 0) out[blockIdx.x] = a;
}

struct Shuffle {
  template <class F>
  static void run(const typename F::In* x, std::size_t n, F f, int, Workspace& ws) {
    using P = VectorPolicy;
    using A = typename F::acc_t;
    using Partial = typename partial_of<F>::type;
    const std::size_t blocks = persistent_blocks<P, F>(shuffle_kernel<P, F>, n, ws);
    A* partials = blocks == 1 ? ws.result_as<A>() : ws.scratch_as<A>(blocks);
    shuffle_kernel<P><<<static_cast<unsigned>(blocks), P::block, 0, ws.stream>>>(x, n, unaligned_head(x, n), f, partials);
    XREDUCE_CUDA(cudaGetLastError());
    if (blocks > 1) {
      shuffle_kernel<P><<<1, P::block, 0, ws.stream>>>(partials, blocks, unaligned_head(partials, blocks), Partial{f},
                                                       ws.result_as<A>());
      XREDUCE_CUDA(cudaGetLastError());
    }
  }
};

}  // namespace xreduce::cuda
