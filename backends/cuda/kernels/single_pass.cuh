#pragma once
// cuda.single_pass (modern): one launch. Each block reduces its share as cuda.shuffle does and
// writes its partial; the last block to finish (a ticket from an atomic counter, after a fence
// that publishes the partial) reduces all partials and resets the counter for the next call.
// One launch instead of two is what matters for small inputs, where launch latency dominates.

#include "vector_loads.cuh"

namespace xreduce::cuda {

template <class P, class F>
__global__ __launch_bounds__(P::block) void single_pass_kernel(const typename F::In* __restrict__ x, std::size_t n,
                                                               std::size_t head, F f, typename F::acc_t* partials,
                                                               unsigned int* counter, typename F::acc_t* out) {
  using A = typename F::acc_t;
  __shared__ bool last_block;
  A a = block_reduce<P::block>(thread_partial<P>(x, n, head, f), f);
  if (gridDim.x == 1) {  // small inputs: the only block is the last one, no ticket needed
    if (threadIdx.x == 0) *out = a;
    return;
  }
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = a;
    __threadfence();  // the partial is visible device-wide before the ticket is taken
    last_block = atomicAdd(counter, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last_block) return;
  __threadfence();  // and every other block's partial is visible to this one
  A b = f.identity();
  for (unsigned i = threadIdx.x; i < gridDim.x; i += P::block) b = f(b, load_cg(partials + i));
  b = block_reduce<P::block>(b, f);
  if (threadIdx.x == 0) {
    *out = b;
    *counter = 0;
  }
}

struct SinglePass {
  template <class F>
  static void run(const typename F::In* x, std::size_t n, F f, int, Workspace& ws) {
    using P = VectorPolicy;
    using A = typename F::acc_t;
    const std::size_t blocks = persistent_blocks<P, F>(single_pass_kernel<P, F>, n, ws);
    single_pass_kernel<P><<<static_cast<unsigned>(blocks), P::block, 0, ws.stream>>>(
        x, n, unaligned_head(x, n), f, ws.scratch_as<A>(blocks), ws.counter, ws.result_as<A>());
    XREDUCE_CUDA(cudaGetLastError());
  }
};

}  // namespace xreduce::cuda
