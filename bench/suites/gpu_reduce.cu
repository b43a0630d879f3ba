// The `gpu-reduce` suite of xreduce_bench: f32 sum of device-resident data, N = 2^10 to 2^30 in
// powers of 4, every CUDA backend at block size 256, against a read-bandwidth probe kernel in the
// same run; then records (k = 3, 9, 16) through cuda.shuffle's records kernel. Time per call: a
// CUDA graph of up to 64 back-to-back calls (each on its own copy of the input, so no call reads
// what the previous one left in L2) replayed after warm-up, timed with events; the median replay
// over its calls. Graph replay leaves out the host's launch overhead, so what is measured is the
// GPU's time per call, launch gaps between a call's kernels included. thrust returns its result
// to the host, which a graph cannot capture: it is timed call by call. GB/s = bytes read / time.

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_interface.hpp"
#include "gpu.hpp"
#include "gpu/gpu_timing.cuh"

namespace xc = xreduce::cuda::bench;

namespace xreduce::bench {
namespace {

constexpr auto check = check_cuda;

}  // namespace

int run_gpu_reduce(const SuiteArgs& args) {
  if (!gpu_info().present) {
    std::fprintf(stderr, "gpu-reduce: no CUDA device\n");
    return 2;
  }
  const int max_log2 = args.max_log2 ? args.max_log2 : (args.quick ? 16 : 30);
  const int repeat = std::max(args.repeat, 20);
  Progress progress("gpu-reduce", args.quick ? 2 : 8 + std::pow(2.0, max_log2 - 28));
  int device = 0, driver = 0, runtime = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);

  // One pool: the largest input, or enough copies of a small one to be 8x the L2.
  const std::size_t max_n = std::size_t{1} << max_log2;
  const std::size_t pool_bytes = std::max<std::size_t>(max_n * sizeof(float), 8 * static_cast<std::size_t>(prop.l2CacheSize));
  float* pool = nullptr;
  unsigned* sink = nullptr;
  check(cudaMalloc(&pool, pool_bytes), "cudaMalloc pool");
  check(cudaMalloc(&sink, sizeof(unsigned)), "cudaMalloc sink");
  fill_uniform<<<prop.multiProcessorCount * 8, 256>>>(pool, pool_bytes / sizeof(float), 1);
  check(cudaDeviceSynchronize(), "fill");

  xc::Kernels ws(device);
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "event");
  check(cudaEventCreate(&stop), "event");

  nlohmann::json rows = nlohmann::json::array();
  std::string md;
  char line[512];
  const std::vector<std::string> order = xc::backend_names();  // the seeds' progression, then the modern ones

  for (int log2n = 10; log2n <= max_log2; log2n += 2) {
    const std::size_t n = std::size_t{1} << log2n, bytes = n * sizeof(float);
    const std::size_t copies = std::max<std::size_t>(1, pool_bytes / bytes);
    const int reps = log2n >= 28 ? repeat / 2 : repeat;  // the largest sizes are stable and slow
    const int calls = static_cast<int>(std::min<std::size_t>(64, copies));
    auto input = [&](int k) { return pool + (static_cast<std::size_t>(k) % copies) * n; };
    // Replays of a graph of `calls` calls; per-call seconds, one entry per replay.
    auto time_graph = [&](auto&& body) {
      return graph_seconds_per_call(ws.stream(), calls, reps, check, [&](int k) { body(input(k)); });
    };
    // Call by call, for what a graph cannot hold.
    auto time_calls = [&](auto&& body) {
      std::vector<double> t;
      for (int k = -3; k < reps; ++k) {
        check(cudaEventRecord(start, ws.stream()), "record");
        body(input(k + 3));
        check(cudaEventRecord(stop, ws.stream()), "record");
        check(cudaEventSynchronize(stop), "sync");
        float ms = 0;
        check(cudaEventElapsedTime(&ms, start, stop), "elapsed");
        if (k >= 0) t.push_back(ms * 1e-3);
      }
      return t;
    };
    const auto probe_t = time_graph([&](const float* x) {
      read_probe<<<prop.multiProcessorCount * 8, 256, 0, ws.stream()>>>(reinterpret_cast<const uint4*>(x), bytes / 16, sink);
    });
    const double probe = bytes / median(probe_t) / 1e9;

    std::vector<std::pair<std::string, std::vector<double>>> results;
    double cub_time = 0, cub_value = 0, cub_call = 0;
    std::vector<double> values, per_call;
    for (const std::string& name : order) {
      progress.update(sweep_done(10, max_log2, log2n, double(results.size()) / order.size()), "2^" + std::to_string(log2n) + ": " + name);
      auto call = [&](const float* x) { ws.enqueue(name, x, n, DType::f32, Op::sum, 256); };
      call(input(0));  // first call: allocations, occupancy queries, CUB's temporary storage
      const double value = ws.collect(DType::f32, Op::sum).value.to_double();
      auto t = xc::graph_capturable(name) ? time_graph(call) : time_calls(call);
      per_call.push_back(median(time_calls(call)));
      if (name == "cub") {
        cub_time = median(t);
        cub_value = value;
        cub_call = per_call.back();
      }
      values.push_back(value);
      results.emplace_back(name, std::move(t));
    }
    if (md.empty()) {
      std::snprintf(line, sizeof line, "# GPU reduction: f32 sum, device-resident, block 256\n\n%s, %d SMs, L2 %d MB, driver %d, runtime %d. "
                    "Time per call from CUDA-graph replays of back-to-back calls (thrust: call by call), median.\n\n",
                    prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20, driver, runtime);
      md = line;
      md += "Last two columns: one call at a time (events around each call, the host's launch overhead "
            "included), the latency a caller sees.\n\n";
      md += "| N | backend | median us | GB/s | % of probe | time / cub | agrees with cub | call us | call / cub |\n"
            "|---:|---|---:|---:|---:|---:|---|---:|---:|\n";
    }
    std::snprintf(line, sizeof line, "| 2^%d | read probe | %.2f | %.0f | 100%% | | | | |\n", log2n, median(probe_t) * 1e6, probe);
    md += line;
    for (std::size_t k = 0; k < results.size(); ++k) {
      const auto& [name, t] = results[k];
      const double m = median(t), gbps = bytes / m / 1e9;
      // Every value here is in [0, 1), so sum|x| is the sum: the library's tolerance for sums.
      const bool agrees = std::fabs(values[k] - cub_value) <= 64 * 0x1p-23 * std::fabs(cub_value);
      std::snprintf(line, sizeof line, "| 2^%d | %s | %.2f | %.0f | %.0f%% | %.2f | %s | %.2f | %.2f |\n", log2n,
                    name.c_str(), m * 1e6, gbps, 100 * gbps / probe, m / cub_time, agrees ? "yes" : "NO",
                    per_call[k] * 1e6, per_call[k] / cub_call);
      md += line;
      rows.push_back({{"log2n", log2n}, {"n", n}, {"backend", name}, {"median_s", m}, {"gbps", gbps},
                      {"fraction_of_probe", gbps / probe}, {"time_over_cub", m / cub_time}, {"value", values[k]},
                      {"agrees_with_cub", agrees}, {"times_s", t},
                      {"call_median_s", per_call[k]}, {"call_over_cub", per_call[k] / cub_call}});
    }
    rows.push_back({{"log2n", log2n}, {"n", n}, {"backend", "read probe"}, {"median_s", median(probe_t)}, {"gbps", probe},
                    {"times_s", probe_t}});
  }
  // Records: N records of k f32 values summed column by column (cuda.shuffle's records kernel),
  // against the read probe over the same bytes. k = 9 at N = 2^24 is seed 002's shape at scale.
  {
    const std::size_t elements = std::min<std::size_t>(std::size_t{9} << 24, pool_bytes / sizeof(float) / 16 * 16);
    const std::size_t bytes = elements * sizeof(float);
    const std::size_t copies = std::max<std::size_t>(1, pool_bytes / bytes);
    auto time_replays = [&](auto&& body) {
      const int calls = static_cast<int>(std::min<std::size_t>(16, copies));
      return graph_seconds_per_call(ws.stream(), calls, repeat, check,
                                           [&](int k) { body(pool + (static_cast<std::size_t>(k) % copies) * elements); });
    };
    const auto probe_t = time_replays([&](const float* x) {
      read_probe<<<prop.multiProcessorCount * 8, 256, 0, ws.stream()>>>(reinterpret_cast<const uint4*>(x), bytes / 16, sink);
    });
    const double probe = bytes / median(probe_t) / 1e9;
    md += "\n## Records: column-by-column f32 sums (cuda.shuffle), device-resident\n\n"
          "| k | N records | median us | GB/s | % of probe |\n|---:|---:|---:|---:|---:|\n";
    std::snprintf(line, sizeof line, "| | read probe, %zu bytes | %.2f | %.0f | 100%% |\n", bytes, median(probe_t) * 1e6, probe);
    md += line;
    rows.push_back({{"records", true}, {"backend", "read probe"}, {"bytes", bytes}, {"median_s", median(probe_t)},
                    {"gbps", probe}, {"times_s", probe_t}});
    for (std::size_t k : {std::size_t{3}, std::size_t{9}, std::size_t{16}}) {
      const std::size_t records = elements / k;
      auto call = [&](const float* x) { ws.enqueue_records(x, records, k, DType::f32, Op::sum); };
      call(pool);
      ws.collect_records(DType::f32, Op::sum, k);
      const auto t = time_replays(call);
      const double m = median(t), gbps = records * k * sizeof(float) / m / 1e9;
      std::snprintf(line, sizeof line, "| %zu | %zu | %.2f | %.0f | %.0f%% |\n", k, records, m * 1e6, gbps, 100 * gbps / probe);
      md += line;
      rows.push_back({{"records", true}, {"backend", "cuda.shuffle"}, {"width", k}, {"n_records", records},
                      {"median_s", m}, {"gbps", gbps}, {"fraction_of_probe", gbps / probe}, {"times_s", t}});
    }
  }
  progress.finish();
  std::fputs(md.c_str(), stdout);
  write_results(args.out_dir, "gpu-reduce",
                {{"sm_count", prop.multiProcessorCount}, {"l2_bytes", prop.l2CacheSize}, {"driver", driver},
                 {"runtime", runtime}, {"block_size", 256}, {"dtype", "f32"}, {"op", "sum"}, {"memory", "device"},
                 {"repeat", repeat}, {"rows", rows}},
                md);
  cudaFree(pool);
  cudaFree(sink);
  return 0;
}

}  // namespace xreduce::bench
