// The GPU half of the `exact` suite: exact sums (Accuracy::exact) of device-resident f32 and f64,
// N = 2^10 to 2^30 in powers of 4, against plain cub and plain cuda.single_pass / cuda.shuffle and
// a read-bandwidth probe over the same bytes, in the same run, timed as gpu-reduce times (CUDA-graph
// replays of back-to-back calls, each on its own copy of the input; median). Every exact result is
// checked against the CPU's exact sum of the same data: the same bits, or the row says NO.
// CUB's deterministic reduce (cuda::execution::determinism::gpu_to_gpu) is not in this toolkit's
// CCCL (3.0.1, nvcc 13.0): the suite says so rather than leave the column out in silence.

#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <cuda/std/version>

#include "bench_interface.hpp"
#include "gpu.hpp"
#include "gpu/gpu_timing.cuh"
#include "xreduce/exact.hpp"

namespace xc = xreduce::cuda::bench;

namespace xreduce::bench {
namespace {

constexpr auto check = check_cuda;

template <class T>
void sweep(const SuiteArgs& args, int max_log2, Progress& progress, double progress_base, nlohmann::json& rows, std::string& md) {
  constexpr DType kType = sizeof(T) == 4 ? DType::f32 : DType::f64;
  const char* type_name = sizeof(T) == 4 ? "f32" : "f64";
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  const std::size_t max_n = std::size_t{1} << max_log2;
  const std::size_t pool_bytes = std::max<std::size_t>(max_n * sizeof(T), 8 * static_cast<std::size_t>(prop.l2CacheSize));
  T* pool = nullptr;
  unsigned* sink = nullptr;
  check(cudaMalloc(&pool, pool_bytes), "cudaMalloc pool");
  check(cudaMalloc(&sink, sizeof(unsigned)), "cudaMalloc sink");
  fill_uniform<<<prop.multiProcessorCount * 8, 256>>>(pool, pool_bytes / sizeof(T), 1);
  check(cudaDeviceSynchronize(), "fill");
  std::vector<T> host(max_n);  // the first copy, for the CPU's exact sum
  check(cudaMemcpy(host.data(), pool, max_n * sizeof(T), cudaMemcpyDeviceToHost), "copy back");
  xc::Kernels ws(device);
  const int repeat = std::max(args.repeat, 20);

  md += std::string("\n## ") + type_name + "\n\n| N | backend | median us | GB/s | % of probe | time / plain cub | exact: CPU's bits |\n"
        "|---:|---|---:|---:|---:|---:|---|\n";
  char line[512];
  for (int log2n = 10; log2n <= max_log2; log2n += 2) {
    const std::size_t n = std::size_t{1} << log2n, bytes = n * sizeof(T);
    const std::size_t copies = std::max<std::size_t>(1, pool_bytes / bytes);
    const int reps = log2n >= 28 ? repeat / 2 : repeat;
    const int calls = static_cast<int>(std::min<std::size_t>(64, copies));
    auto input = [&](int k) { return pool + (static_cast<std::size_t>(k) % copies) * n; };
    auto time_graph = [&](auto&& body) {
      return graph_seconds_per_call(ws.stream(), calls, reps, check, [&](int k) { body(input(k)); });
    };
    ExactSum cpu;
    cpu.add(host.data(), n);
    const T cpu_bits = cpu.round<T>();
    const auto probe_t = time_graph([&](const T* x) {
      read_probe<<<prop.multiProcessorCount * 8, 256, 0, ws.stream()>>>(reinterpret_cast<const uint4*>(x), bytes / 16, sink);
    });
    const double probe = bytes / median(probe_t) / 1e9;
    std::snprintf(line, sizeof line, "| 2^%d | read probe | %.2f | %.0f | 100%% | | |\n", log2n, median(probe_t) * 1e6, probe);
    md += line;
    rows.push_back({{"dtype", type_name}, {"log2n", log2n}, {"n", n}, {"backend", "read probe"}, {"accuracy", ""},
                    {"median_s", median(probe_t)}, {"gbps", probe}, {"times_s", probe_t}});
    struct Variant {
      std::string backend;
      bool exact;
    };
    const Variant variants[] = {{"cub", false}, {"cuda.single_pass", false}, {"cuda.single_pass", true},
                                {"cuda.shuffle", false}, {"cuda.shuffle", true}};
    double cub_time = 0;
    int k = 0;
    for (const Variant& v : variants) {
      progress.update(progress_base + 0.5 * sweep_done(10, max_log2, log2n, ++k / 6.0),
                      std::string(type_name) + " 2^" + std::to_string(log2n) + ": " + v.backend + (v.exact ? " exact" : ""));
      std::string same = "";
      if (v.exact) {
        ws.enqueue_exact(v.backend, input(0), n, kType);
        const T got = ws.collect_exact(n).template round<T>();
        same = std::memcmp(&cpu_bits, &got, sizeof(T)) == 0 ? "yes" : "NO";
      } else {
        ws.enqueue(v.backend, input(0), n, kType, Op::sum);
        ws.collect(kType, Op::sum);
      }
      auto call = [&](const T* x) {
        if (v.exact) ws.enqueue_exact(v.backend, x, n, kType);
        else ws.enqueue(v.backend, x, n, kType, Op::sum);
      };
      const auto t = time_graph(call);
      const double m = median(t), gbps = bytes / m / 1e9;
      if (v.backend == "cub") cub_time = m;
      std::snprintf(line, sizeof line, "| 2^%d | %s%s | %.2f | %.0f | %.0f%% | %.2f | %s |\n", log2n, v.backend.c_str(),
                    v.exact ? " **exact**" : "", m * 1e6, gbps, 100 * gbps / probe, m / cub_time, same.c_str());
      md += line;
      rows.push_back({{"dtype", type_name}, {"log2n", log2n}, {"n", n}, {"backend", v.backend},
                      {"accuracy", v.exact ? "exact" : "standard"}, {"median_s", m}, {"gbps", gbps},
                      {"fraction_of_probe", gbps / probe}, {"time_over_cub", m / cub_time},
                      {"same_bits_as_cpu", v.exact ? nlohmann::json(same == "yes") : nlohmann::json()}, {"times_s", t}});
    }
  }
  cudaFree(pool);
  cudaFree(sink);
}

}  // namespace

int run_exact_gpu(const SuiteArgs& args, nlohmann::json& rows, std::string& md) {
  if (!gpu_info().present) return 2;
  const int max_log2 = args.max_log2 ? std::min(args.max_log2, 30) : (args.quick ? 14 : 30);
  Progress progress("exact (GPU)", args.quick ? 2 : 20);
  const GpuInfo g = gpu_info();
  md += "\n# Exact sums on the GPU: device-resident data, uniform in [0, 1)\n\n" + g.name +
        ". Time per call from CUDA-graph replays, median. CUB's deterministic reduce (gpu_to_gpu) is not in this "
        "toolkit's CCCL " + std::to_string(CCCL_MAJOR_VERSION) + "." + std::to_string(CCCL_MINOR_VERSION) + "." +
        std::to_string(CCCL_PATCH_VERSION) + ": no column for it.\n";
  sweep<float>(args, max_log2, progress, 0, rows, md);
  sweep<double>(args, max_log2, progress, 0.5, rows, md);
  progress.finish();
  return 0;
}

}  // namespace xreduce::bench
