#pragma once
// cuda.global_halving (seed 000, "reducción original"): no shared memory at all. Each launch adds
// the upper half of the array onto the lower half in global memory, one launch per level, log2(n)
// launches in all. The seed halves with `ceil(distancia / 2)` on integers, which is wrong for sizes
// that are not powers of two; here the lower `half` elements absorb the upper `half`, and a middle
// element of an odd count simply stays for the next level.
// The input is the caller's and read-only, so the first level reads it and writes the workspace.

#include "common.cuh"

namespace xreduce::cuda {

template <class F>
__global__ void halving_first_level(const typename F::In* __restrict__ x, std::size_t half, std::size_t top, F f,
                                    typename F::acc_t* a) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < top) {
    typename F::acc_t v = f.lift(x[i], i);
    if (i < half) v = f(v, f.lift(x[i + top], i + top));
    a[i] = v;
  }
}

template <class F>
__global__ void halving_level(typename F::acc_t* a, std::size_t half, std::size_t top, F f) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < half) a[i] = f(a[i], a[i + top]);
}

struct GlobalHalving {
  template <class F>
  static void run(const typename F::In* x, std::size_t n, F f, int block, Workspace& ws) {
    using A = typename F::acc_t;
    std::size_t half = n / 2, top = n - half;
    A* a = static_cast<A*>(ws.scratch.reserve(top * sizeof(A), "the halving array"));
    halving_first_level<<<static_cast<unsigned>(ceil_div(top, block)), block, 0, ws.stream>>>(x, half, top, f, a);
    XREDUCE_CUDA(cudaGetLastError());
    for (std::size_t m = top; m > 1; m = top) {
      half = m / 2;
      top = m - half;
      halving_level<<<static_cast<unsigned>(ceil_div(half, block)), block, 0, ws.stream>>>(a, half, top, f);
      XREDUCE_CUDA(cudaGetLastError());
    }
    XREDUCE_CUDA(cudaMemcpyAsync(ws.result, a, sizeof(A), cudaMemcpyDefault, ws.stream));  // ws.result may be host memory
  }
};

}  // namespace xreduce::cuda
