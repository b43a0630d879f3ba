// The GPU suites of xreduce_bench: `progression` (seed 004's Table 1) and `transfer` (seed 000's
// tables 1-3). They time the CUDA module's kernels directly, with events, through the module's
// bench interface (bench_interface.hpp); the CPU columns come from the core library (callbacks).

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "gpu.hpp"
#include "gpu/gpu_timing.cuh"
#include "bench_interface.hpp"

namespace xc = xreduce::cuda::bench;

namespace xreduce::bench {
namespace {

constexpr auto check = check_cuda;

__global__ void fill_f32(float* x, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    x[i] = static_cast<float>((i * 2654435761u) % 1000) * 0.001f;
}
__global__ void fill_i32(int* x, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    x[i] = static_cast<int>((i * 2654435761u) % 2001) - 1000;
}

struct Events {
  cudaEvent_t a, b;
  Events() {
    check(cudaEventCreate(&a), "event");
    check(cudaEventCreate(&b), "event");
  }
  ~Events() {
    cudaEventDestroy(a);
    cudaEventDestroy(b);
  }
  //! Seconds of the stream work `body` enqueues.
  template <class F>
  double time(cudaStream_t s, F&& body) {
    check(cudaEventRecord(a, s), "record");
    body();
    check(cudaEventRecord(b, s), "record");
    check(cudaEventSynchronize(b), "sync");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, a, b), "elapsed");
    return ms * 1e-3;
  }
};

//! Per-call seconds from CUDA-graph replays (gpu_timing.cuh).
template <class F>
std::vector<double> time_graph(xc::Kernels& kernels, int calls, int samples, F&& call) {
  return graph_seconds_per_call(kernels.stream(), calls, samples, check, call);
}

}  // namespace

GpuInfo gpu_info() {
  GpuInfo g;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();
    return g;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) return g;
  g.present = true;
  g.name = prop.name;
  g.sm_count = prop.multiProcessorCount;
  cudaDriverGetVersion(&g.driver);
  cudaRuntimeGetVersion(&g.runtime);
  return g;
}

void* device_alloc(std::size_t bytes) {
  if (!gpu_info().present) return nullptr;
  void* p = nullptr;
  check(cudaMalloc(&p, bytes), "cudaMalloc");
  return p;
}
void device_free(void* p) { cudaFree(p); }
void copy_to_device(void* dst, const void* src, std::size_t bytes) {
  check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
}

int run_progression(const SuiteArgs& args) {
  const GpuInfo gpu = gpu_info();
  if (!gpu.present) {
    std::fprintf(stderr, "progression: no CUDA device\n");
    return 2;
  }
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "properties");
  struct Setting {
    DType dtype;
    int log2n;
  };
  const int big = args.max_log2 ? args.max_log2 : 28;
  const std::vector<Setting> settings{{DType::i32, std::min(20, big)}, {DType::f32, big}};
  // Harris's kernels 1 to 7 (the module's progression without seed 000's global halving), then the modern ones.
  std::vector<std::string> order = xc::backend_names();
  order.erase(std::remove(order.begin(), order.end(), "cuda.global_halving"), order.end());
  Progress progress("progression", 10 + 0.2 * std::pow(2.0, big - 26));
  xc::Kernels ws(0);
  Events ev;
  unsigned* sink = nullptr;
  check(cudaMalloc(&sink, sizeof(unsigned)), "cudaMalloc");
  nlohmann::json tables = nlohmann::json::array();
  std::string md = "# The reduction progression (seed 004, Table 1)\n\n" + gpu.name +
                   ". Sum, device-resident, block 256 for the seed kernels. Time per call: median of CUDA-graph "
                   "replays of back-to-back calls on rotating copies of the input (thrust: call by call). Step: "
                   "speed-up over the row above; cumulative: over the first kernel.\n";
  int step = 0;
  for (const Setting& s : settings) {
    const std::size_t n = std::size_t{1} << s.log2n, bytes = n * size_of(s.dtype);
    const std::size_t pool_bytes = std::max<std::size_t>(bytes, 8 * static_cast<std::size_t>(prop.l2CacheSize));
    const std::size_t copies = std::max<std::size_t>(1, pool_bytes / bytes);
    void* pool = nullptr;
    check(cudaMalloc(&pool, copies * bytes), "cudaMalloc pool");
    if (s.dtype == DType::i32) fill_i32<<<prop.multiProcessorCount * 8, 256>>>(static_cast<int*>(pool), copies * n);
    else fill_f32<<<prop.multiProcessorCount * 8, 256>>>(static_cast<float*>(pool), copies * n);
    check(cudaDeviceSynchronize(), "fill");
    auto input = [&](int k) { return static_cast<const char*>(pool) + (static_cast<std::size_t>(k) % copies) * bytes; };
    const int calls = static_cast<int>(std::min<std::size_t>(64, copies));
    const auto probe_t = time_graph(ws, calls, args.repeat, [&](int k) {
      read_probe<<<prop.multiProcessorCount * 8, 256, 0, ws.stream()>>>(reinterpret_cast<const uint4*>(input(k)), bytes / 16, sink);
    });
    const double probe = bytes / median(probe_t) / 1e9;
    nlohmann::json rows = nlohmann::json::array();
    md += "\n## " + std::string(to_string(s.dtype)) + ", N = 2^" + std::to_string(s.log2n) + " (" +
          fmt("%.0f", bytes / 1e6) + " MB)\n\n| kernel | backend | median us | GB/s | step | cumulative | % of probe | value |\n"
          "|---|---|---:|---:|---:|---:|---:|---|\n";
    md += "| read probe | | " + fmt("%.2f", median(probe_t) * 1e6) + " | " + fmt("%.0f", probe) + " | | | 100% | |\n";
    double first = 0, previous = 0;
    int kernel_number = 0;
    for (const std::string& name : order) {
      progress.update((step + 0.5) / (settings.size() * order.size()), name + " on 2^" + std::to_string(s.log2n));
      auto call = [&](int k) { ws.enqueue(name, input(k), n, s.dtype, Op::sum, 256); };
      call(0);
      const Result r = ws.collect(s.dtype, Op::sum);
      std::vector<double> times;
      if (!xc::graph_capturable(name)) {
        for (int k = -2; k < args.repeat; ++k) {
          const double sec = ev.time(ws.stream(), [&] { call(k + 2); });
          if (k >= 0) times.push_back(sec);
        }
      } else {
        times = time_graph(ws, calls, args.repeat, call);
      }
      const double m = median(times), gbps = bytes / m / 1e9;
      if (first == 0) first = m;
      const double step_up = previous > 0 ? previous / m : 1, cumulative = first / m;
      previous = m;
      ++kernel_number;
      const std::string label = kernel_number <= 7 ? "kernel " + std::to_string(kernel_number) : "modern";
      md += "| " + label + " | " + name + " | " + fmt("%.2f", m * 1e6) + " | " + fmt("%.0f", gbps) + " | " +
            fmt("%.2f", step_up) + " | " + fmt("%.2f", cumulative) + " | " + fmt("%.0f%%", 100 * gbps / probe) + " | " +
            r.value.to_string() + " |\n";
      rows.push_back({{"kernel", label}, {"backend", name}, {"median_s", m}, {"gbps", gbps}, {"step_speedup", step_up},
                      {"cumulative_speedup", cumulative}, {"fraction_of_probe", gbps / probe}, {"value", r.value.to_string()},
                      {"times_s", times}});
      ++step;
    }
    tables.push_back({{"dtype", to_string(s.dtype)}, {"log2n", s.log2n}, {"n", n}, {"bytes", bytes}, {"probe_gbps", probe},
                      {"probe_times_s", probe_t}, {"rows", rows}});
    cudaFree(pool);
  }
  cudaFree(sink);
  progress.finish();
  std::fputs(md.c_str(), stdout);
  write_results(args.out_dir, "progression", {{"block_size", 256}, {"repeat", args.repeat}, {"tables", tables}}, md);
  return 0;
}

int run_transfer(const SuiteArgs& args, const TransferCpu& cpu) {
  const GpuInfo gpu = gpu_info();
  if (!gpu.present) {
    std::fprintf(stderr, "transfer: no CUDA device\n");
    return 2;
  }
  const int lo = args.quick ? 14 : std::max(args.min_log2, 23), hi = args.max_log2 ? args.max_log2 : (args.quick ? 16 : 29);
  const std::vector<int> blocks{128, 256, 512, 1024};
  const std::vector<std::string> kernels{"cuda.global_halving", "cuda.unroll_warp"};
  double estimate = 0;
  for (int l = lo; l <= hi; ++l) estimate += (args.repeat + 1) * std::pow(2.0, l) * 4 / 8e9 * 14;  // ~8 GB/s pageable, 14 runs
  Progress progress("transfer", estimate);
  const std::size_t max_n = std::size_t{1} << hi;
  std::vector<float> host(max_n);
  for (std::size_t i = 0; i < max_n; ++i) host[i] = static_cast<float>((i * 2654435761u) % 1000) * 0.001f;
  float* pinned = nullptr;
  check(cudaMallocHost(&pinned, max_n * sizeof(float)), "cudaMallocHost");
  std::memcpy(pinned, host.data(), max_n * sizeof(float));
  float* dev = nullptr;
  check(cudaMalloc(&dev, max_n * sizeof(float)), "cudaMalloc");
  xc::Kernels ws(0);
  Events ev;
  int device = 0;
  cudaGetDevice(&device);

  nlohmann::json sizes = nlohmann::json::array();
  std::string t1 = "## Table 1: time per call (ms): H2D copy (pageable) + kernel + D2H copy of the result\n\n| N | kernel | block | H2D | kernel | D2H | total |\n|---:|---|---:|---:|---:|---:|---:|\n";
  std::string t2 = "## Table 2: speed-up over the CPU, transfers included\n\n| N | kernel | block | over the seeds' CPU loop | over " +
                   cpu.best_name + " |\n|---:|---|---:|---:|---:|\n";
  std::string t3 = "## Table 3: speed-up over the CPU, kernel only\n\n| N | kernel | block | over the seeds' CPU loop | over " +
                   cpu.best_name + " |\n|---:|---|---:|---:|---:|\n";
  std::string t4 = "## Other paths for host data (ms per call; speed-up over the seeds' CPU loop)\n\n| N | seeds' CPU loop | " + cpu.best_name +
                   " | streamed pageable | streamed pinned | hybrid pageable |\n|---:|---:|---:|---:|---:|---:|\n";
  const int total_steps = (hi - lo + 1);
  for (int l = lo; l <= hi; ++l) {
    const std::size_t n = std::size_t{1} << l, bytes = n * sizeof(float);
    progress.update(double(l - lo) / total_steps, "2^" + std::to_string(l) + ": CPU");
    const double t_naive = cpu.naive(host.data(), n), t_best = cpu.best(host.data(), n);
    nlohmann::json rows = nlohmann::json::array();
    for (const std::string& name : kernels) {
      for (int block : blocks) {
        progress.update((l - lo + 0.5) / total_steps, "2^" + std::to_string(l) + ": " + name + ", block " + std::to_string(block));
        std::vector<double> h2d, kern, d2h, total;
        for (int k = -1; k < args.repeat; ++k) {
          const double a = ev.time(ws.stream(), [&] { check(cudaMemcpy(dev, host.data(), bytes, cudaMemcpyHostToDevice), "H2D"); });
          const double b = ev.time(ws.stream(), [&] { ws.enqueue(name, dev, n, DType::f32, Op::sum, block); });
          const double c = ev.time(ws.stream(), [&] { (void)ws.collect(DType::f32, Op::sum); });
          if (k < 0) continue;
          h2d.push_back(a);
          kern.push_back(b);
          d2h.push_back(c);
          total.push_back(a + b + c);
        }
        const double H = median(h2d), K = median(kern), D = median(d2h), T = median(total);
        t1 += "| 2^" + std::to_string(l) + " | " + name + " | " + std::to_string(block) + " | " + fmt("%.3f", H * 1e3) + " | " +
              fmt("%.3f", K * 1e3) + " | " + fmt("%.3f", D * 1e3) + " | " + fmt("%.3f", T * 1e3) + " |\n";
        t2 += "| 2^" + std::to_string(l) + " | " + name + " | " + std::to_string(block) + " | " + fmt("%.2f", t_naive / T) + " | " +
              fmt("%.2f", t_best / T) + " |\n";
        t3 += "| 2^" + std::to_string(l) + " | " + name + " | " + std::to_string(block) + " | " + fmt("%.1f", t_naive / K) + " | " +
              fmt("%.2f", t_best / K) + " |\n";
        rows.push_back({{"kernel", name}, {"block", block}, {"h2d_s", H}, {"kernel_s", K}, {"d2h_s", D}, {"total_s", T},
                        {"speedup_naive_total", t_naive / T}, {"speedup_best_total", t_best / T},
                        {"speedup_naive_kernel", t_naive / K}, {"speedup_best_kernel", t_best / K}, {"h2d_times_s", h2d},
                        {"kernel_times_s", kern}, {"d2h_times_s", d2h}});
      }
    }
    progress.update((l - lo + 0.9) / total_steps, "2^" + std::to_string(l) + ": streamed and hybrid");
    const xc::Streaming defaults = xc::default_streaming();
    auto wall = [&](auto&& f) { return time_per_call(f, args.repeat); };
    const double streamed = wall([&] { xc::reduce_host("cuda.unroll_warp", host.data(), n, 1, DType::f32, Op::sum, device, false, defaults); });
    const double streamed_pinned = wall([&] { xc::reduce_host("cuda.unroll_warp", pinned, n, 1, DType::f32, Op::sum, device, true, defaults); });
    const double hybrid = cpu.hybrid ? cpu.hybrid(host.data(), n) : 0;
    t4 += "| 2^" + std::to_string(l) + " | " + fmt("%.3f", t_naive * 1e3) + " | " + fmt("%.3f", t_best * 1e3) + " | " +
          fmt("%.3f", streamed * 1e3) + " (" + fmt("%.1fx", t_naive / streamed) + ") | " + fmt("%.3f", streamed_pinned * 1e3) + " (" +
          fmt("%.1fx", t_naive / streamed_pinned) + ") | " +
          (hybrid > 0 ? fmt("%.3f", hybrid * 1e3) + " (" + fmt("%.1fx", t_naive / hybrid) + ")" : std::string("-")) + " |\n";
    sizes.push_back({{"log2n", l}, {"n", n}, {"cpu_naive_s", t_naive}, {"cpu_best_s", t_best}, {"cpu_best", cpu.best_name},
                     {"streamed_pageable_s", streamed}, {"streamed_pinned_s", streamed_pinned},
                     {"hybrid_pageable_s", hybrid > 0 ? nlohmann::json(hybrid) : nlohmann::json(nullptr)}, {"gpu", rows}});
  }
  progress.finish();
  cudaFree(dev);
  cudaFreeHost(pinned);
  const std::string md = "# Host data through the GPU (seed 000, tables 1-3)\n\n" + gpu.name +
                         ". f32 sum of host (pageable) data. `cuda.global_halving` is the seed's unoptimised "
                         "kernel, `cuda.unroll_warp` its optimised one. GPU phases timed with events, median of " +
                         std::to_string(args.repeat) + "; CPU columns: wall time, median. Streamed paths use "
                         "`cuda.unroll_warp` through the module's chunked, overlapped copy.\n\n" + t1 + "\n" + t2 + "\n" + t3 + "\n" + t4;
  std::fputs(md.c_str(), stdout);
  write_results(args.out_dir, "transfer", {{"repeat", args.repeat}, {"sizes", sizes}}, md);
  return 0;
}

}  // namespace xreduce::bench
