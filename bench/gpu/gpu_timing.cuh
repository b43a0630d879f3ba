#pragma once
// What the GPU benchmarks share (the GPU suites of xreduce_bench, xreduce_bench_gpu_custom): the
// read-bandwidth probe kernel, timing by CUDA-graph replay, and uniform test data (its values from
// ../spreads.hpp). Compiled by nvcc (C++17).

#include <cuda_runtime.h>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "../spreads.hpp"  // splitmix64, uniform_value

namespace xreduce::bench {

//! Throws std::runtime_error for a failed CUDA call, naming it.
inline void check_cuda(cudaError_t s, const char* what) {
  if (s != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(s));
}

//! Fills x[0..n) uniform in [0, 1) (uniform_value of splitmix64 of the index). Static, as read_probe.
template <class T>
static __global__ void fill_uniform(T* x, std::size_t n, unsigned long long seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    x[i] = uniform_value<T>(splitmix64(i + seed));
}

//! Fills x[0..n) with the exact suite's distribution s (spread_value). Static, as fill_uniform.
template <class T>
static __global__ void fill_spread(T* x, std::size_t n, Spread s, unsigned long long seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    x[i] = spread_value<T>(s, i, seed);
}

// The read-bandwidth probe: 16-byte loads, grid-stride, four in flight, XOR-folded; the result is
// written only if it equals a value it never takes, so the loads cannot be dropped. Static: each
// program that includes this has its own copy of the kernel.
static __global__ void read_probe(const uint4* __restrict__ x, std::size_t n, unsigned* sink) {
  uint4 acc = {0, 0, 0, 0};
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    const uint4 a = x[i], b = x[i + stride], c = x[i + 2 * stride], d = x[i + 3 * stride];
    acc.x ^= a.x ^ b.x ^ c.x ^ d.x;
    acc.y ^= a.y ^ b.y ^ c.y ^ d.y;
    acc.z ^= a.z ^ b.z ^ c.z ^ d.z;
    acc.w ^= a.w ^ b.w ^ c.w ^ d.w;
  }
  for (; i < n; i += stride) {
    const uint4 a = x[i];
    acc.x ^= a.x;
    acc.y ^= a.y;
    acc.z ^= a.z;
    acc.w ^= a.w;
  }
  if ((acc.x ^ acc.y ^ acc.z ^ acc.w) == 0x9e3779b9u && acc.x == 0x7f4a7c15u) *sink = acc.y;
}

//! Per-call seconds of `calls` back-to-back calls (call(k) enqueues call k on `stream`) captured
//! in one CUDA graph: the graph is replayed `samples` times after two warm-up replays, timed with
//! events, one entry per replay. Graph replay leaves the host's launch overhead out. `check`
//! handles a failed CUDA call (it must not return).
template <class Check, class Call>
std::vector<double> graph_seconds_per_call(cudaStream_t stream, int calls, int samples, Check&& check, Call&& call) {
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "event");
  check(cudaEventCreate(&stop), "event");
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "begin capture");
  for (int k = 0; k < calls; ++k) call(k);
  check(cudaStreamEndCapture(stream, &graph), "end capture");
  check(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
  std::vector<double> t;
  for (int r = -2; r < samples; ++r) {
    check(cudaEventRecord(start, stream), "record");
    check(cudaGraphLaunch(exec, stream), "graph launch");
    check(cudaEventRecord(stop, stream), "record");
    check(cudaEventSynchronize(stop), "sync");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "elapsed");
    if (r >= 0) t.push_back(ms * 1e-3 / calls);
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return t;
}

}  // namespace xreduce::bench
