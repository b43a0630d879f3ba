#pragma once
//! User-defined reductions on the GPU: the calls of xreduce/custom.hpp, for code compiled with
//! nvcc (-std=c++20). The kernel is cuda.shuffle's design for any trivially copyable type: a
//! persistent grid reading block-contiguous tiles with several loads in flight per thread, warp
//! shuffles (word by word, so any type crosses), then one block over the per-block partials.
//!
//!   struct Farthest {  // __host__ too: the law checks and the CPU path call it on the host
//!     __host__ __device__ Point operator()(Point a, Point b) const { ... }
//!   };
//!   Point p = xreduce::cuda::reduce(xreduce::Policy{.backend = "cuda"}, points, Farthest{}, Point{});
//!
//! Policy::backend: "cuda" runs on the current device; a CPU backend name runs the CPU template
//! path (host data only); "auto" takes the GPU for device data, and for host data asks the
//! dispatcher (Dispatcher::engine_for: the config's GPU thresholds, pinned or pageable), as every
//! "auto" does. Host data are copied to the device
//! first, into device memory kept for the next call (per host thread and device, as are the
//! partials). Device data are read in place (any pointer CUDA knows as device or managed memory).
//! The operator must be associative, commutative and have `identity` as its identity.

#include <cuda_runtime.h>

#include <cstring>
#include <map>
#include <utility>
#include <ranges>
#include <string>
#include <type_traits>

#include "xreduce/context.hpp"
#include "xreduce/custom.hpp"
#include "xreduce/backend/block_reduce.cuh"
#include "xreduce/backend/dispatcher.hpp"

namespace xreduce::cuda {

//! Tuning of the custom kernel, as data.
struct CustomPolicy {
  static constexpr int block = 256;
  static constexpr int unroll = 4;  //!< loads in flight per thread, each into its own accumulator
};

namespace detail {

inline void check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  cudaGetLastError();
  throw Error(status == cudaErrorMemoryAllocation ? ErrorCode::out_of_memory : ErrorCode::internal,
              std::string("custom reduction on the GPU: ") + what + ": " + cudaGetErrorString(status));
}

//! The transform of the second pass: partials as they are.
struct Unchanged {
  template <class R>
  __host__ __device__ const R& operator()(const R& r) const {
    return r;
  }
};

//! std::plus, which the kernels cannot call (its operator() is host-only), as one they can.
struct Plus {
  template <class A>
  __host__ __device__ A operator()(const A& a, const A& b) const {
    return a + b;
  }
};

template <class P, class T, class R, class BinaryOp, class Transform>
__global__ __launch_bounds__(P::block) void custom_kernel(const T* __restrict__ x, std::size_t n, R identity, BinaryOp op,
                                                          Transform transform, R* __restrict__ out) {
  constexpr std::size_t kTile = static_cast<std::size_t>(P::block) * P::unroll;
  R acc[P::unroll];
#pragma unroll
  for (int u = 0; u < P::unroll; ++u) acc[u] = identity;
  const std::size_t full_tiles = n / kTile;
  for (std::size_t t = blockIdx.x; t < full_tiles; t += gridDim.x) {
    const std::size_t base = t * kTile + threadIdx.x;
    T v[P::unroll];
#pragma unroll
    for (int u = 0; u < P::unroll; ++u) v[u] = x[base + u * P::block];
#pragma unroll
    for (int u = 0; u < P::unroll; ++u) acc[u] = op(acc[u], transform(v[u]));
  }
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * P::block;
  for (std::size_t i = full_tiles * kTile + blockIdx.x * static_cast<std::size_t>(P::block) + threadIdx.x; i < n; i += stride)
    acc[0] = op(acc[0], transform(x[i]));
  R a = acc[0];
#pragma unroll
  for (int u = 1; u < P::unroll; ++u) a = op(a, acc[u]);
  a = xreduce::gpu::block_reduce<P::block>(a, op, identity);
  if (threadIdx.x == 0) out[blockIdx.x] = a;
}

//! Device memory kept between calls, per host thread (which has its own stream,
//! cudaStreamPerThread) and per device: allocating on every call costs more than reducing a
//! small array, as the stream-ordered allocator gives memory back at each synchronisation.
class Scratch {
 public:
  static void* get(int slot, std::size_t bytes) {
    thread_local Scratch cache;
    int device = 0;
    check(cudaGetDevice(&device), "cudaGetDevice");
    Buffer& b = cache.buffers_[{device, slot}];
    if (b.bytes < bytes) {
      if (b.pointer) cudaFree(b.pointer);
      b = {};
      check(cudaMalloc(&b.pointer, bytes), "cudaMalloc of scratch");
      b.bytes = bytes;
    }
    return b.pointer;
  }
  ~Scratch() {
    for (auto& [key, b] : buffers_) {
      cudaSetDevice(key.first);
      cudaFree(b.pointer);  // at process exit the runtime may be gone already: nothing to do then
    }
  }

 private:
  struct Buffer {
    void* pointer = nullptr;
    std::size_t bytes = 0;
  };
  std::map<std::pair<int, int>, Buffer> buffers_;
};
enum ScratchSlot { kPartials = 0, kInput = 1 };

//! Reduces transform(x[0..n)) for device pointer x, n > 0, on `stream`.
template <class T, class R, class BinaryOp, class Transform>
R run_on_device(const T* x, std::size_t n, const R& identity, const BinaryOp& op, const Transform& transform,
                cudaStream_t stream) {
  using P = CustomPolicy;
  int device = 0, sms = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
  static const int per_sm = [] {  // per kernel instantiation, once: the occupancy query is not free
    int b = 0;
    check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, custom_kernel<P, T, R, BinaryOp, Transform>, P::block, 0),
          "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
    return std::max(b, 1);
  }();
  const std::size_t tile = static_cast<std::size_t>(P::block) * P::unroll;
  const std::size_t blocks = std::max<std::size_t>(1, std::min<std::size_t>(std::size_t(per_sm) * sms, (n + tile - 1) / tile));
  R* partials = static_cast<R*>(Scratch::get(kPartials, (blocks + 1) * sizeof(R)));
  custom_kernel<P><<<static_cast<unsigned>(blocks), P::block, 0, stream>>>(x, n, identity, op, transform, partials);
  cudaError_t status = cudaGetLastError();
  if (status == cudaSuccess && blocks > 1) {
    custom_kernel<P><<<1, P::block, 0, stream>>>(partials, blocks, identity, op, Unchanged{}, partials + blocks);
    status = cudaGetLastError();
  }
  R result = identity;
  if (status == cudaSuccess)
    status = cudaMemcpyAsync(&result, partials + (blocks > 1 ? blocks : 0), sizeof(R), cudaMemcpyDeviceToHost, stream);
  if (status == cudaSuccess) status = cudaStreamSynchronize(stream);
  check(status, "the reduction kernels");
  return result;
}

//! Where a pointer lives, as CUDA knows it: device (or managed) memory, pinned host memory, or
//! neither (pageable host memory).
struct PointerKind {
  bool device = false;
  bool pinned = false;
};
inline PointerKind pointer_kind(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();
    return {};
  }
  return {a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged, a.type == cudaMemoryTypeHost};
}

}  // namespace detail

//! transform_reduce of xreduce/custom.hpp, on the GPU (see the top of this file for `backend`).
template <std::ranges::contiguous_range Range, class R, class BinaryOp, class Transform>
  requires std::ranges::sized_range<Range>
R transform_reduce(const Policy& policy, const Range& data, R identity, BinaryOp op, Transform transform) {
  using T = std::ranges::range_value_t<Range>;
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_copyable_v<R>,
                "xreduce::cuda reduces trivially copyable types: they are copied to and from the GPU bytewise");
  static_assert(std::is_default_constructible_v<R>, "xreduce::cuda: the result type must be default-constructible");
  const T* x = std::ranges::data(data);
  const std::size_t n = std::ranges::size(data);
  if (policy.accuracy == Accuracy::exact)
    throw Error(ErrorCode::unsupported, "Policy::accuracy exact: transform_reduce has no exact form; reduce() with std::plus has");
  const detail::PointerKind kind = n > 0 ? detail::pointer_kind(x) : detail::PointerKind{};
  const bool on_device = kind.device;
  bool gpu = policy.backend == "cuda";
  if (policy.backend == "auto" || policy.backend.empty()) {
    // The dispatcher's rule, among the engines this path has: the GPU kernel below and the CPU
    // backends of the template API (no CPU+GPU one).
    Workload work;
    work.elements = n;
    work.pinned = kind.pinned;
    work.user_code = true;
    const EngineSet here = engine_bit(Engine::gpu) | engine_bit(Engine::cpu_serial) | engine_bit(Engine::cpu_parallel);
    gpu = on_device || default_context().dispatcher().engine_for(work, here) == Engine::gpu;
  }
  if (!gpu) {
    if (on_device)
      throw Error(ErrorCode::unsupported, "custom reduction: backend '" + policy.backend +
                                              "' runs on the CPU and cannot read device memory; use \"cuda\" or \"auto\"");
    return xreduce::transform_reduce(policy, data, identity, op, transform);
  }
  if (policy.check_laws) {  // on a host copy of the sample
    std::vector<T> sample;
    const std::size_t m = std::min<std::size_t>(n, 16);
    for (std::size_t k = 0; k < m; ++k) {
      T v;
      if (on_device) detail::check(cudaMemcpy(&v, x + k * n / m, sizeof(T), cudaMemcpyDeviceToHost), "sample copy");
      else std::memcpy(&v, x + k * n / m, sizeof(T));
      sample.push_back(v);
    }
    xreduce::detail::check_laws_on(xreduce::detail::law_sample<T, R>(sample.data(), sample.size(), transform), identity,
                                   op, policy.law_tolerance);
  }
  if (n == 0) return identity;
  cudaStream_t stream = cudaStreamPerThread;
  if (on_device) return detail::run_on_device(x, n, identity, op, transform, stream);
  T* copy = static_cast<T*>(detail::Scratch::get(detail::kInput, n * sizeof(T)));
  detail::check(cudaMemcpyAsync(copy, x, n * sizeof(T), cudaMemcpyHostToDevice, stream), "copy of the input to the GPU");
  return detail::run_on_device(static_cast<const T*>(copy), n, identity, op, transform, stream);
}

//! reduce of xreduce/custom.hpp, on the GPU.
template <std::ranges::contiguous_range Range, class BinaryOp>
  requires std::ranges::sized_range<Range>
std::ranges::range_value_t<Range> reduce(const Policy& policy, const Range& data, BinaryOp op,
                                         std::type_identity_t<std::ranges::range_value_t<Range>> identity) {
  using T = std::ranges::range_value_t<Range>;
  if (policy.accuracy == Accuracy::exact)  // "cuda": the best GPU backend that sums exactly
    return xreduce::detail::exact_plus<T, BinaryOp>(policy.backend, std::ranges::data(data), std::ranges::size(data),
                                                    identity, policy.threads);
  if constexpr (xreduce::detail::is_plus_v<BinaryOp, T>)
    return xreduce::cuda::transform_reduce(policy, data, identity, detail::Plus{}, detail::Unchanged{});
  else
    return xreduce::cuda::transform_reduce(policy, data, identity, op, detail::Unchanged{});
}

}  // namespace xreduce::cuda
