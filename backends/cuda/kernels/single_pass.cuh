#pragma once
// cuda.single_pass (modern): one launch. Each block reduces its share as cuda.shuffle does and
// writes its partial; the last block to finish (a ticket from an atomic counter, after a fence
// that publishes the partial) reduces all partials and resets the counter for the next call.
// One launch instead of two is what matters for small inputs, where launch latency dominates.
//
// Inputs of two to eight blocks' worth (up to 2^16 f32) take a shorter road on GPUs with thread-block
// clusters (Hopper on): the blocks are launched as one cluster, and block 0 combines the others'
// partials straight from their shared memory (distributed shared memory), with no global memory
// round trip, fence or atomic in between.

#include <cooperative_groups.h>

#include "vector_loads.cuh"

namespace xreduce::cuda {

//! Tuning of the cluster road: bigger blocks, so that eight of them cover 2^16 f32 in one step.
struct ClusterPolicy {
  static constexpr int block = 512;
  static constexpr int unroll = 4;
  static constexpr int max_blocks = 8;  //!< the portable cluster size
};

template <class P, class F>
__global__ __launch_bounds__(P::block) void single_pass_cluster_kernel(const typename F::In* __restrict__ x,
                                                                       std::size_t n, std::size_t head, F f,
                                                                       typename F::acc_t* out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  using A = typename F::acc_t;
  namespace cg = cooperative_groups;
  __shared__ A partial;
  A a = block_reduce<P::block>(thread_partial<P>(x, n, head, f), f);
  if (threadIdx.x == 0) partial = a;
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();  // every block's partial is written
  if (cluster.block_rank() == 0 && threadIdx.x < 32) {
    // Lane r reads block r's partial: the remote loads go out together, not one after another.
    const unsigned lane = threadIdx.x;
    a = lane < cluster.num_blocks() ? *cluster.map_shared_rank(&partial, lane) : f.identity();
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) a = f(a, shfl_down(a, offset));
    if (lane == 0) *out = a;
  }
  cluster.sync();  // no block exits while block 0 may still read its shared memory
#endif
}

inline bool cluster_launch_supported(int device) {
  int supported = 0;
  return cudaDeviceGetAttribute(&supported, cudaDevAttrClusterLaunch, device) == cudaSuccess && supported;
}

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
    using A = typename F::acc_t;
    using C = ClusterPolicy;
    const std::size_t cluster_blocks = ceil_div(n, std::size_t(C::block) * C::unroll * vector_width<typename F::In>());
    // One block needs no cluster (its launch costs more); more than eight go the ticket way.
    if (cluster_blocks >= 2 && cluster_blocks <= C::max_blocks && cluster_launch_supported(ws.device)) {
      cudaLaunchConfig_t config{};
      config.gridDim = dim3(static_cast<unsigned>(cluster_blocks));
      config.blockDim = dim3(C::block);
      config.stream = ws.stream;
      cudaLaunchAttribute cluster{};
      cluster.id = cudaLaunchAttributeClusterDimension;
      cluster.val.clusterDim.x = static_cast<unsigned>(cluster_blocks);
      cluster.val.clusterDim.y = cluster.val.clusterDim.z = 1;
      config.attrs = &cluster;
      config.numAttrs = 1;
      XREDUCE_CUDA(cudaLaunchKernelEx(&config, single_pass_cluster_kernel<C, F>, x, n, unaligned_head(x, n), f,
                                      ws.result_as<A>()));
      return;
    }
    using P = VectorPolicy;
    const std::size_t blocks = persistent_blocks<P, F>(single_pass_kernel<P, F>, n, ws);
    single_pass_kernel<P><<<static_cast<unsigned>(blocks), P::block, 0, ws.stream>>>(
        x, n, unaligned_head(x, n), f, ws.scratch_as<A>(blocks), ws.counter, ws.result_as<A>());
    XREDUCE_CUDA(cudaGetLastError());
  }
};

}  // namespace xreduce::cuda
