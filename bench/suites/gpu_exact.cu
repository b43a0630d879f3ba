// The GPU half of the `exact` suite: exact sums (Accuracy::exact) of device-resident f32 and f64,
// N = 2^10 to 2^30 in powers of 4, against plain cub and plain cuda.single_pass / cuda.shuffle and
// a read-bandwidth probe over the same bytes, in the same run, timed as gpu-reduce times (CUDA-graph
// replays of back-to-back calls, each on its own copy of the input; median). Then plain cub against
// the exact sums at 2^24, 2^28 and 2^30 for f32, bf16 and f64 over five distributions (uniform;
// wide exponents with random signs; random bit patterns over every finite exponent; pairs x and
// -x; subnormals), since an exact sum's cost can depend on the data where a plain one's does not
// (`--device-only` runs these without the host sweep of exact.cpp). Then exact column sums of
// records of width 9 (f32, f16, bf16, f64) against cuda.shuffle's plain ones. Every exact result
// is checked against the CPU's exact sum of the same data: the same bits, or the row says NO.
// CUB's determinism levels (cuda::execution::determinism: not_guaranteed, run_to_run, gpu_to_gpu)
// need CCCL 3.1 or later, which this toolkit's (3.0.1, nvcc 13.0) is not: built against newer
// headers where XREDUCE_CCCL_INCLUDE names them (cub_determinism.hpp), their rows and columns say
// whether gpu_to_gpu's reproducible sum is the exact one; elsewhere the columns say "not built".

#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <type_traits>
#include <stdexcept>
#include <string>
#include <vector>

#include <cuda/std/version>

#include "bench_interface.hpp"
#include "gpu.hpp"
#include "gpu/gpu_timing.cuh"
#include "../spreads.hpp"
#include "cub_determinism.hpp"
#include "xreduce/exact.hpp"

namespace xc = xreduce::cuda::bench;

namespace xreduce::bench {
namespace {

constexpr auto check = check_cuda;

//! One of CUB's determinism levels (cub_determinism.hpp) summing n elements: the sum of the
//! first copy against `exact` (the CPU's exact sum of it), and the times the table's `time` took.
template <class T>
struct CubLevel {
  T value;
  bool exact;    // the exact sum's bits
  double error;  // relative to the exact sum
  std::vector<double> times;
  std::string bits() const { return exact ? "yes" : "NO (relative error " + fmt("%.1e", error) + ")"; }
};
template <class T, class Time>
CubLevel<T> run_cub_level(CubDeterminism d, const T* first, std::size_t n, T exact, T* out, cudaStream_t stream, Time&& time) {
  const std::string name = std::string("cub ") + to_string(d);
  CubLevel<T> r;
  check(cub_sum(d, first, out, n, stream), name.c_str());
  check(cudaMemcpyAsync(&r.value, out, sizeof(T), cudaMemcpyDeviceToHost, stream), "copy back");
  check(cudaStreamSynchronize(stream), name.c_str());
  r.exact = std::memcmp(&exact, &r.value, sizeof(T)) == 0;
  r.error = std::fabs(static_cast<double>(r.value) - static_cast<double>(exact)) / std::fabs(static_cast<double>(exact));
  r.times = time([&](const T* x) { check(cub_sum(d, x, out, n, stream), name.c_str()); });
  return r;
}

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
  T* cub_out = nullptr;  // the sums of CUB's determinism levels
  check(cudaMalloc(&cub_out, sizeof(T)), "cudaMalloc cub_out");
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
      progress.update(progress_base + 0.3 * sweep_done(10, max_log2, log2n, ++k / 6.0),
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
    // CUB's determinism levels, where built: gpu_to_gpu is reproducible, but is it exact?
    for (const CubDeterminism d : kCubDeterminisms) {
      if (!cub_determinism_version()) break;
      const CubLevel<T> c = run_cub_level(d, input(0), n, cpu_bits, cub_out, ws.stream(), time_graph);
      const double m = median(c.times), gbps = bytes / m / 1e9;
      const std::string bits = d == CubDeterminism::gpu_to_gpu ? c.bits() : "";
      std::snprintf(line, sizeof line, "| 2^%d | cub (determinism %s) | %.2f | %.0f | %.0f%% | %.2f | %s |\n", log2n, to_string(d),
                    m * 1e6, gbps, 100 * gbps / probe, m / cub_time, bits.c_str());
      md += line;
      rows.push_back({{"dtype", type_name}, {"log2n", log2n}, {"n", n}, {"backend", "cub"}, {"determinism", to_string(d)},
                      {"accuracy", "standard"}, {"median_s", m}, {"gbps", gbps}, {"fraction_of_probe", gbps / probe},
                      {"time_over_cub", m / cub_time}, {"value", static_cast<double>(c.value)}, {"relative_error", c.error},
                      {"same_bits_as_cpu", c.exact}, {"times_s", c.times}});
    }
  }
  cudaFree(pool);
  cudaFree(sink);
  cudaFree(cub_out);
}

//! The second table: plain cub against both exact forms at 2^24, 2^28 and 2^30 (up to max_log2)
//! for every distribution.
template <class T>
void distributions(const SuiteArgs& args, int max_log2, Progress& progress, double progress_base, double progress_share,
                   nlohmann::json& rows, std::string& md) {
  constexpr DType kType = dtype_of<T>();
  const std::string type_name(to_string(kType));
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  std::vector<int> sizes;
  for (int l : {24, 28, 30})
    if (l <= max_log2) sizes.push_back(l);
  if (sizes.empty()) sizes.push_back(max_log2);
  const std::size_t max_n = std::size_t{1} << sizes.back();
  const std::size_t pool_bytes = std::max<std::size_t>(max_n * sizeof(T), 8 * static_cast<std::size_t>(prop.l2CacheSize));
  T* pool = nullptr;
  check(cudaMalloc(&pool, pool_bytes), "cudaMalloc pool");
  std::vector<T> host(max_n);
  xc::Kernels ws(device);
  const int repeat = std::max(args.repeat, 10);
  md += std::string("\n## ") + type_name +
        " by distribution\n\n| distribution | N | cub us | cuda.single_pass **exact** / cub | cuda.shuffle **exact** / cub | "
        "exact: CPU's bits | cub gpu_to_gpu / cub | gpu_to_gpu: CPU's exact bits |\n|---|---:|---:|---:|---:|---|---:|---|\n";
  T* cub_out = nullptr;  // gpu_to_gpu's sums
  check(cudaMalloc(&cub_out, sizeof(T)), "cudaMalloc cub_out");
  char line[512];
  int done = 0;
  for (const Spread spread : kSpreads) {
    fill_spread<<<prop.multiProcessorCount * 8, 256>>>(pool, pool_bytes / sizeof(T), spread, 17);
    check(cudaDeviceSynchronize(), "fill");
    check(cudaMemcpy(host.data(), pool, max_n * sizeof(T), cudaMemcpyDeviceToHost), "copy back");
    for (const int log2n : sizes) {
      progress.update(progress_base + progress_share * done++ / (std::size(kSpreads) * sizes.size()),
                      type_name + " " + spread_name(spread, kType == DType::f64) + " 2^" + std::to_string(log2n));
      const std::size_t n = std::size_t{1} << log2n, bytes = n * sizeof(T);
      const std::size_t copies = std::max<std::size_t>(1, pool_bytes / bytes);
      // Each copy of the pool is its own draw: the CPU's reference is of the first, which is
      // the one the checked call reads.
      const int calls = static_cast<int>(std::min<std::size_t>(32, copies));
      const int reps = log2n >= 28 ? repeat / 2 : repeat;
      auto input = [&](int k) { return pool + (static_cast<std::size_t>(k) % copies) * n; };
      ExactSum cpu;
      cpu.add(host.data(), n);
      const T cpu_bits = cpu.round<T>();
      auto time = [&](auto&& call) { return graph_seconds_per_call(ws.stream(), calls, reps, check, [&](int k) { call(input(k)); }); };
      const auto cub_t = time([&](const T* x) { ws.enqueue("cub", x, n, kType, Op::sum); });
      const double cub = median(cub_t);
      nlohmann::json row = {{"table", "distributions"}, {"dtype", type_name}, {"distribution", spread_name(spread, kType == DType::f64)},
                            {"log2n", log2n}, {"n", n}, {"cub_median_s", cub}, {"cub_times_s", cub_t}};
      std::string cells, same = "yes";
      for (const char* backend : {"cuda.single_pass", "cuda.shuffle"}) {
        ws.enqueue_exact(backend, input(0), n, kType);
        const T got = ws.collect_exact(n).template round<T>();
        if (std::memcmp(&cpu_bits, &got, sizeof(T)) != 0) same = "NO";
        const auto t = time([&](const T* x) { ws.enqueue_exact(backend, x, n, kType); });
        char cell[64];
        std::snprintf(cell, sizeof cell, " %.2f |", median(t) / cub);
        cells += cell;
        row[std::string(backend) + "_exact_median_s"] = median(t);
        row[std::string(backend) + "_exact_over_cub"] = median(t) / cub;
        row[std::string(backend) + "_exact_times_s"] = t;
      }
      row["same_bits_as_cpu"] = same == "yes";
      // CUB's gpu_to_gpu sums floats and doubles (its RFA); bf16 is not among its types.
      std::string reproducible = " (no bf16) | |";
      if constexpr (!std::is_same_v<T, bf16>) {
        reproducible = " not built | not built |";
        if (cub_determinism_version()) {
          const CubLevel<T> c = run_cub_level(CubDeterminism::gpu_to_gpu, input(0), n, cpu_bits, cub_out, ws.stream(), time);
          reproducible = " " + fmt("%.2f", median(c.times) / cub) + " | " + c.bits() + " |";
          row["cub_gpu_to_gpu_median_s"] = median(c.times);
          row["cub_gpu_to_gpu_over_cub"] = median(c.times) / cub;
          row["cub_gpu_to_gpu_value"] = static_cast<double>(c.value);
          row["cub_gpu_to_gpu_same_bits_as_cpu"] = c.exact;
        }
      }
      rows.push_back(row);
      std::snprintf(line, sizeof line, "| %s | 2^%d | %.2f |%s %s |%s\n", spread_name(spread, kType == DType::f64), log2n, cub * 1e6,
                    cells.c_str(), same.c_str(), reproducible.c_str());
      md += line;
    }
  }
  cudaFree(pool);
  cudaFree(cub_out);
}

//! The third table: exact column sums of records (width 9, as the segments suite's records)
//! against cuda.shuffle's plain ones, at 2^24 and 2^28 elements (up to max_log2), uniform and
//! random-bit data; every column checked against the CPU's exact sum of it.
template <class T>
void columns(const SuiteArgs& args, int max_log2, Progress& progress, double progress_base, double progress_share,
             nlohmann::json& rows, std::string& md) {
  constexpr DType kType = dtype_of<T>();
  const std::string type_name(to_string(kType));
  constexpr std::size_t kWidth = 9;
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  std::vector<int> sizes;
  for (int l : {24, 28})
    if (l <= max_log2) sizes.push_back(l);
  if (sizes.empty()) sizes.push_back(max_log2);
  const std::size_t max_n = (std::size_t{1} << sizes.back()) / kWidth * kWidth;
  const std::size_t pool_bytes = std::max<std::size_t>(max_n * sizeof(T), 8 * static_cast<std::size_t>(prop.l2CacheSize));
  T* pool = nullptr;
  check(cudaMalloc(&pool, pool_bytes), "cudaMalloc pool");
  std::vector<T> host(max_n), column(max_n / kWidth);
  xc::Kernels ws(device);
  const int repeat = std::max(args.repeat, 10);
  md += std::string("\n## ") + type_name + " records of width 9\n\n| distribution | N | cuda.shuffle plain us | **exact** / plain | "
        "exact: CPU's bits, every column |\n|---|---:|---:|---:|---|\n";
  char line[512];
  int done = 0;
  for (const Spread spread : {Spread::uniform, Spread::random_bits}) {
    fill_spread<<<prop.multiProcessorCount * 8, 256>>>(pool, pool_bytes / sizeof(T), spread, 23);
    check(cudaDeviceSynchronize(), "fill");
    check(cudaMemcpy(host.data(), pool, max_n * sizeof(T), cudaMemcpyDeviceToHost), "copy back");
    for (const int log2n : sizes) {
      progress.update(progress_base + progress_share * done++ / (2 * sizes.size()),
                      type_name + " records " + spread_name(spread, kType == DType::f64) + " 2^" + std::to_string(log2n));
      // A multiple of 16 records: every copy of the pool then starts as aligned as the first,
      // so the plain kernel's workspace, sized on the first call, fits every captured one.
      const std::size_t count = (std::size_t{1} << log2n) / kWidth / 16 * 16, n = count * kWidth;
      const std::size_t copies = std::max<std::size_t>(1, pool_bytes / (n * sizeof(T)));
      const int calls = static_cast<int>(std::min<std::size_t>(32, copies));
      const int reps = log2n >= 28 ? repeat / 2 : repeat;
      auto input = [&](int k) { return pool + (static_cast<std::size_t>(k) % copies) * n; };
      auto time = [&](auto&& call) { return graph_seconds_per_call(ws.stream(), calls, reps, check, [&](int k) { call(input(k)); }); };
      ws.enqueue_exact_columns(input(0), count, kWidth, kType);
      const std::vector<ExactSum> got = ws.collect_exact_columns(count, kWidth);
      bool same = true;
      for (std::size_t j = 0; j < kWidth; ++j) {
        for (std::size_t i = 0; i < count; ++i) column[i] = host[i * kWidth + j];
        ExactSum cpu;
        cpu.add(column.data(), count);
        const T want = cpu.round<T>(), have = got[j].round<T>();
        same = same && std::memcmp(&want, &have, sizeof(T)) == 0;
      }
      ws.enqueue_records(input(0), count, kWidth, kType, Op::sum);  // its workspace allocated before the capture
      ws.collect_records(kType, Op::sum, kWidth);
      const auto plain_t = time([&](const T* x) { ws.enqueue_records(x, count, kWidth, kType, Op::sum); });
      const auto exact_t = time([&](const T* x) { ws.enqueue_exact_columns(x, count, kWidth, kType); });
      const double plain = median(plain_t), exact = median(exact_t);
      rows.push_back({{"table", "records"}, {"dtype", type_name}, {"distribution", spread_name(spread, kType == DType::f64)},
                      {"width", kWidth}, {"log2n", log2n}, {"n", n}, {"plain_median_s", plain}, {"exact_median_s", exact},
                      {"exact_over_plain", exact / plain}, {"same_bits_as_cpu", same}, {"plain_times_s", plain_t},
                      {"exact_times_s", exact_t}});
      std::snprintf(line, sizeof line, "| %s | 2^%d | %.2f | %.2f | %s |\n", spread_name(spread, kType == DType::f64), log2n,
                    plain * 1e6, exact / plain, same ? "yes" : "NO");
      md += line;
    }
  }
  cudaFree(pool);
}

}  // namespace

int run_exact_gpu(const SuiteArgs& args, nlohmann::json& rows, std::string& md) {
  if (!gpu_info().present) return 2;
  const int max_log2 = args.max_log2 ? std::min(args.max_log2, 30) : (args.quick ? 14 : 30);
  Progress progress("exact (GPU)", args.quick ? 2 : 20);
  const GpuInfo g = gpu_info();
  const int cub_levels = cub_determinism_version();
  md += "\n# Exact sums on the GPU: device-resident data, uniform in [0, 1)\n\n" + g.name +
        ". Time per call from CUDA-graph replays, median. cub is the toolkit's (CCCL " + std::to_string(CCCL_MAJOR_VERSION) +
        "." + std::to_string(CCCL_MINOR_VERSION) + "." + std::to_string(CCCL_PATCH_VERSION) + ", run_to_run). ";
  md += cub_levels ? "cub (determinism ...) is cub::DeviceReduce::Sum of CUB " + std::to_string(cub_levels / 100000) + "." +
                         std::to_string(cub_levels / 100 % 1000) + "." + std::to_string(cub_levels % 100) +
                         " (XREDUCE_CCCL_INCLUDE) at each determinism level; gpu_to_gpu's bits are compared with the "
                         "exact sum's, with its relative error where they differ.\n"
                   : "CUB's determinism levels (gpu_to_gpu: CCCL 3.1 on) are not built: configure with "
                     "-DXREDUCE_CCCL_INCLUDE=... (scripts/fetch-cccl.sh).\n";
  sweep<float>(args, max_log2, progress, 0, rows, md);
  sweep<double>(args, max_log2, progress, 0.3, rows, md);
  md += "\n# Exact sums on the GPU by distribution\n\nTime over plain cub's on the same data (cub's own time does not "
        "depend on it), median of CUDA-graph replays.\n";
  distributions<float>(args, max_log2, progress, 0.6, 0.1, rows, md);
  distributions<bf16>(args, max_log2, progress, 0.7, 0.1, rows, md);
  distributions<double>(args, max_log2, progress, 0.8, 0.1, rows, md);
  md += "\n# Exact column sums of device records on the GPU\n\nTime over cuda.shuffle's plain column sums of the same "
        "records, median of CUDA-graph replays.\n";
  columns<float>(args, max_log2, progress, 0.9, 0.03, rows, md);
  columns<f16>(args, max_log2, progress, 0.93, 0.02, rows, md);
  columns<bf16>(args, max_log2, progress, 0.95, 0.02, rows, md);
  columns<double>(args, max_log2, progress, 0.97, 0.03, rows, md);
  progress.finish();
  return 0;
}

}  // namespace xreduce::bench
