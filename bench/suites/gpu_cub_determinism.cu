// cub_determinism.hpp with the CCCL headers of XREDUCE_CCCL_INCLUDE (searched before the
// toolkit's). Nothing else of xreduce is compiled against them: their CUB and Thrust live in
// namespaces of their own version, and only plain pointers and cudaError_t cross this file.

#include <cub/device/device_reduce.cuh>
#include <cuda/__execution/determinism.h>
#include <cuda/__execution/require.h>
#include <cuda/stream_ref>

#include "cub_determinism.hpp"

namespace xreduce::bench {
namespace {

template <class T>
cudaError_t sum_at(CubDeterminism d, const T* x, T* out, std::size_t n, cudaStream_t stream) {
  namespace det = cuda::execution::determinism;
  auto with = [&](auto level) {
    const auto env = cuda::std::execution::env{cuda::stream_ref{stream}, cuda::execution::require(level)};
    return cub::DeviceReduce::Sum(x, out, n, env);
  };
  switch (d) {
    case CubDeterminism::not_guaranteed: return with(det::not_guaranteed);
    case CubDeterminism::run_to_run: return with(det::run_to_run);
    case CubDeterminism::gpu_to_gpu: return with(det::gpu_to_gpu);
  }
  return cudaErrorInvalidValue;
}

}  // namespace

int cub_determinism_version() { return CUB_VERSION; }
cudaError_t cub_sum(CubDeterminism d, const float* x, float* out, std::size_t n, cudaStream_t stream) {
  return sum_at(d, x, out, n, stream);
}
cudaError_t cub_sum(CubDeterminism d, const double* x, double* out, std::size_t n, cudaStream_t stream) {
  return sum_at(d, x, out, n, stream);
}

}  // namespace xreduce::bench
