// xreduce_bench in a build without CUDA: the GPU suites say so.
#include <cstdio>

#include "gpu.hpp"

namespace xreduce::bench {

GpuInfo gpu_info() { return {}; }
void* device_alloc(std::size_t) { return nullptr; }
void device_free(void*) {}
void copy_to_device(void*, const void*, std::size_t) {}

int run_progression(const SuiteArgs&) {
  std::fprintf(stderr, "progression: this build has no CUDA module (no nvcc when it was configured)\n");
  return 2;
}
int run_gpu_reduce(const SuiteArgs&) {
  std::fprintf(stderr, "gpu-reduce: this build has no CUDA module (no nvcc when it was configured)\n");
  return 2;
}
int run_exact_gpu(const SuiteArgs&, nlohmann::json&, std::string&) { return 2; }
int run_segments_gpu(const SuiteArgs&, nlohmann::json&, std::string&) { return 2; }
int run_stats_gpu(const SuiteArgs&, nlohmann::json&, std::string&) { return 2; }
int run_statistics_gpu(const SuiteArgs&, nlohmann::json&, std::string&) { return 2; }
int run_dtypes_gpu(const SuiteArgs&, nlohmann::json&, std::string&) { return 2; }
int run_views_gpu(const SuiteArgs&, nlohmann::json&, std::string&) { return 2; }
int run_transfer(const SuiteArgs&, const TransferCpu&) {
  std::fprintf(stderr, "transfer: this build has no CUDA module (no nvcc when it was configured)\n");
  return 2;
}

}  // namespace xreduce::bench
