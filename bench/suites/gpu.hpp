#pragma once
// The suites and helpers of `xreduce_bench` that need the CUDA runtime (gpu.cu), or say there is
// none (no_gpu.cpp, in a build without CUDA). C++17, for nvcc.

#include <cstddef>
#include <functional>
#include <string>

#include "report.hpp"

namespace xreduce::bench {

struct GpuInfo {
  bool present = false;
  std::string name;
  int driver = 0, runtime = 0, sm_count = 0;
};
GpuInfo gpu_info();

//! Device memory for device-resident measurements: nullptr when there is no GPU.
void* device_alloc(std::size_t bytes);
void device_free(void* p);
void copy_to_device(void* dst, const void* src, std::size_t bytes);

//! Seconds per call of a host-side reduction of n f32 at x (the CPU and hybrid columns of
//! `transfer`, which go through the core library).
using HostTimer = std::function<double(const float* x, std::size_t n)>;

struct TransferCpu {
  HostTimer naive;        //!< the seeds' loop (sequential.naive)
  HostTimer best;         //!< the best CPU backend
  std::string best_name;
  HostTimer hybrid;       //!< empty when hybrid cannot run
};

//! Seed 004's Table 1; returns the exit code (2: no GPU).
int run_progression(const SuiteArgs& args);
//! Every CUDA backend over device-data sizes, and records (gpu_reduce.cu); returns the exit code.
int run_gpu_reduce(const SuiteArgs& args);
//! Seed 000's tables 1-3, with the streamed and hybrid paths; returns the exit code.
int run_transfer(const SuiteArgs& args, const TransferCpu& cpu);
//! The device-resident half of the `exact` suite (gpu_exact.cu): appends rows and markdown;
//! returns 2 (and appends nothing) without a GPU.
int run_exact_gpu(const SuiteArgs& args, nlohmann::json& rows, std::string& md);
//! The `exact` suite (exact.cpp).
int run_exact(const SuiteArgs& args);
//! The device-resident half of the `segments` suite (gpu_segments.cu), as run_exact_gpu.
int run_segments_gpu(const SuiteArgs& args, nlohmann::json& rows, std::string& md);
//! The `segments` suite (segments.cpp).
int run_segments(const SuiteArgs& args);
//! The device-resident half of the `stats` suite (gpu_stats.cu), as run_exact_gpu.
int run_stats_gpu(const SuiteArgs& args, nlohmann::json& rows, std::string& md);
//! The `stats` suite (stats.cpp).
int run_stats(const SuiteArgs& args);
//! The statistics on the CPU backends against the read probe and a plain sum (statistics.cpp).
int run_statistics(const SuiteArgs& args);
//! The device-resident half of the `statistics` suite (gpu_statistics.cu), as run_exact_gpu.
int run_statistics_gpu(const SuiteArgs& args, nlohmann::json& rows, std::string& md);
//! The device-resident half of the `dtypes` suite (gpu_dtypes.cu), as run_exact_gpu.
int run_dtypes_gpu(const SuiteArgs& args, nlohmann::json& rows, std::string& md);
//! The `dtypes` suite (dtypes.cpp): sums of every element type against the read probes.
int run_dtypes(const SuiteArgs& args);
//! The device-resident half of the `views` suite (gpu_views.cu), as run_exact_gpu.
int run_views_gpu(const SuiteArgs& args, nlohmann::json& rows, std::string& md);
//! The views suite (views.cpp): N-D views reduced in place against copy + reduce, host data; and
//! device data in the N-D targets' shapes (run_views_gpu).
int run_views(const SuiteArgs& args);

}  // namespace xreduce::bench
