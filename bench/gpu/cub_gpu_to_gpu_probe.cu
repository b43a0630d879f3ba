// What CUB's reproducible sum (cub::DeviceReduce::Sum under the gpu_to_gpu determinism
// requirement) returns for f32 data whose exact sum is known, by size and by the type of
// num_items: int (CUB's 32-bit path) or std::size_t (its 64-bit path, which loops over chunks of
// INT32_MAX in the kernel). The exact benchmark found its 2^30-element f32 sums 3% off; this
// separates the size from the path. Built only with XREDUCE_CCCL_INCLUDE (CCCL 3.1 or later);
// nothing of xreduce is used.
//
//   xreduce_cub_gpu_to_gpu_probe [--max-log2n 30]
//
// Data: every element 1 (the sum is n), and multiples of 2^-24 in [0, 1) from a hash of the
// index, whose exact sum is an integer count of 2^-24 (added exactly in 64-bit integers on the
// GPU) and is rounded to f32 through f64 (a double rounding, far below the 2 ulps it allows).

#include <cub/device/device_reduce.cuh>
#include <cuda/__execution/determinism.h>
#include <cuda/__execution/require.h>
#include <cuda/stream_ref>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(status));
    std::exit(1);
  }
}

__device__ std::uint32_t numerator(std::size_t i) {  // the element times 2^24, below 2^24
  std::uint32_t h = static_cast<std::uint32_t>(i * 2654435761u) ^ static_cast<std::uint32_t>(i >> 32);
  h ^= h >> 15;
  h *= 0x2c1b3c6du;
  h ^= h >> 12;
  return h & 0xFFFFFFu;
}

__global__ void fill(float* x, std::size_t n, bool ones, unsigned long long* exact) {
  unsigned long long mine = 0;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n; i += std::size_t{gridDim.x} * blockDim.x) {
    const std::uint32_t q = ones ? (1u << 24) : numerator(i);
    x[i] = static_cast<float>(q) * 0x1p-24f;
    mine += q;
  }
  atomicAdd(exact, mine);
}

template <class N>
float gpu_to_gpu_sum(const float* x, N n, float* out, cudaStream_t stream) {
  const auto env = cuda::std::execution::env{cuda::stream_ref{stream}, cuda::execution::require(cuda::execution::determinism::gpu_to_gpu)};
  check(cub::DeviceReduce::Sum(x, out, n, env), "cub::DeviceReduce::Sum");
  float value = 0;
  check(cudaMemcpyAsync(&value, out, sizeof value, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync");
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  return value;
}

}  // namespace

int main(int argc, char** argv) {
  int max_log2n = 30;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::printf("Usage: xreduce_cub_gpu_to_gpu_probe [--max-log2n N]\n\n"
                  "CUB's gpu_to_gpu f32 sum of data whose exact sum is known (ones, and multiples of 2^-24),\n"
                  "2^20 to 2^N elements (N from 20 to 30, default 30), through int and size_t num_items;\n"
                  "a Markdown table on standard output, sums more than 2 ulps off in bold.\n");
      return 0;
    }
    if (std::strcmp(argv[i], "--max-log2n") == 0 && i + 1 < argc) {
      max_log2n = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "xreduce_cub_gpu_to_gpu_probe: unknown argument '%s' (see --help)\n", argv[i]);
      return 2;
    }
  }
  if (max_log2n < 20 || max_log2n > 30) {
    std::fprintf(stderr, "xreduce_cub_gpu_to_gpu_probe: --max-log2n is 20 to 30 (int num_items)\n");
    return 2;
  }
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  std::printf("# CUB %d.%d.%d gpu_to_gpu sums of f32 data with a known exact sum\n\n%s, nvcc %d.%d\n\n", CUB_MAJOR_VERSION,
              CUB_MINOR_VERSION, CUB_SUBMINOR_VERSION, prop.name, __CUDACC_VER_MAJOR__, __CUDACC_VER_MINOR__);
  std::printf("| data | n | exact sum, rounded to f32 | int num_items | size_t num_items |\n|---|---:|---:|---:|---:|\n");
  cudaStream_t stream;
  check(cudaStreamCreate(&stream), "cudaStreamCreate");
  const std::size_t most = std::size_t{1} << max_log2n;
  float* x = nullptr;
  float* out = nullptr;
  unsigned long long* exact = nullptr;
  check(cudaMalloc(&x, most * sizeof(float)), "cudaMalloc");
  check(cudaMalloc(&out, sizeof(float)), "cudaMalloc");
  check(cudaMalloc(&exact, sizeof *exact), "cudaMalloc");
  int failures = 0;
  for (const bool ones : {true, false}) {
    for (int log2n = 20; log2n <= max_log2n; ++log2n) {
      for (const std::size_t n : {std::size_t{1} << log2n, (std::size_t{1} << log2n) - 1000}) {
        check(cudaMemsetAsync(exact, 0, sizeof *exact, stream), "cudaMemsetAsync");
        fill<<<1024, 256, 0, stream>>>(x, n, ones, exact);
        check(cudaGetLastError(), "fill");
        unsigned long long count = 0;  // the exact sum times 2^24
        check(cudaMemcpyAsync(&count, exact, sizeof count, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync");
        check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
        const float want = static_cast<float>(static_cast<double>(count) * 0x1p-24);
        const float as_int = gpu_to_gpu_sum(x, static_cast<int>(n), out, stream);
        const float as_size = gpu_to_gpu_sum(x, n, out, stream);
        // gpu_to_gpu is reproducible, not correctly rounded: a result within 2 ulps of the
        // exact sum rounded passes; further off it is shown in bold, in ulps of that rounding.
        const double ulp = std::nextafter(want, INFINITY) - want;
        auto off = [&](float got) { return !(std::fabs(static_cast<double>(got) - want) <= 2 * ulp); };
        auto shown = [&](float got, char* text) {
          if (!off(got)) std::snprintf(text, 64, "%.9g", got);
          else std::snprintf(text, 64, "**%.9g** (%+.3g ulps)", got, (static_cast<double>(got) - want) / ulp);
          return text;
        };
        char int_text[64], size_text[64];
        failures += off(as_int) + off(as_size);
        std::printf("| %s | 2^%d%s | %.9g | %s | %s |\n", ones ? "ones" : "uniform, k 2^-24", log2n, n == (std::size_t{1} << log2n) ? "" : " - 1000",
                    want, shown(as_int, int_text), shown(as_size, size_text));
      }
    }
  }
  std::printf("\n%d of the sums lie more than 2 ulps from the exact sum rounded to f32 (in bold).\n", failures);
  cudaFree(x);
  cudaFree(out);
  cudaFree(exact);
  return 0;
}
