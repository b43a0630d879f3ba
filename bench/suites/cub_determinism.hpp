#pragma once
// CUB's three determinism levels for sums of device data, as the exact suite's same-run anchors:
// cub::DeviceReduce::Sum with cuda::execution::require(cuda::execution::determinism::...). They
// need CCCL 3.1 or later, newer than some toolkits' (CUDA 13.0 has 3.0.1): CMake's
// XREDUCE_CCCL_INCLUDE names such headers (scripts/fetch-cccl.sh unpacks the nvidia-cuda-cccl
// wheel's into the build tree), which gpu_cub_determinism.cu alone is compiled against. Without
// them, no_cub_determinism.cpp says so: cub_determinism_version() is 0.

#include <cuda_runtime.h>

#include <cstddef>

namespace xreduce::bench {

enum class CubDeterminism { not_guaranteed, run_to_run, gpu_to_gpu };
constexpr CubDeterminism kCubDeterminisms[] = {CubDeterminism::not_guaranteed, CubDeterminism::run_to_run,
                                               CubDeterminism::gpu_to_gpu};

inline const char* to_string(CubDeterminism d) {
  switch (d) {
    case CubDeterminism::not_guaranteed: return "not_guaranteed";
    case CubDeterminism::run_to_run: return "run_to_run";
    case CubDeterminism::gpu_to_gpu: return "gpu_to_gpu";
  }
  return "?";
}

//! CUB_VERSION of the headers the levels were built with (300500: 3.5.0); 0: not built.
int cub_determinism_version();
//! Enqueues the sum of x[0..n) into *out on `stream` at level d (temporary storage from CCCL's
//! default stream-ordered pool).
cudaError_t cub_sum(CubDeterminism d, const float* x, float* out, std::size_t n, cudaStream_t stream);
cudaError_t cub_sum(CubDeterminism d, const double* x, double* out, std::size_t n, cudaStream_t stream);

}  // namespace xreduce::bench
