// GPU benchmark (first version): f32 sum of device-resident data, N = 2^10 .. 2^30 in powers of 4,
// every CUDA backend at block size 256, and a read-bandwidth probe kernel in the same run.
// Time per call: a CUDA graph of K back-to-back calls (each on its own copy of the input, so no
// call reads what the previous one left in L2; K = 64 for small inputs, fewer for large ones) is
// replayed R times after warm-up, timed with events; the median replay over K. Graph replay leaves
// out the host's launch overhead, so what is measured is the GPU's time per call, launch gaps
// between a call's kernels included (one launch or two is what matters at small N). thrust
// returns its result to the host, which a graph cannot capture: it is timed call by call.
// GB/s = bytes read / time, decimal.
//
//   xreduce_bench_gpu [--max-log2 30] [--repeat 20] [--out DIR]

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../bench_common.hpp"
#include "gpu_timing.cuh"
#include "techniques.hpp"
#include "xreduce/version.hpp"

namespace xc = xreduce::cuda;
namespace bench = xreduce::bench;
using bench::median;
using bench::read_probe;

namespace {

void check(cudaError_t s, const char* what) {
  if (s != cudaSuccess) {
    std::fprintf(stderr, "xreduce_bench_gpu: %s: %s\n", what, cudaGetErrorString(s));
    std::exit(1);
  }
}

__global__ void fill_uniform(float* x, std::size_t n, unsigned long long seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    unsigned long long z = (i + seed) * 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    x[i] = static_cast<float>((z ^ (z >> 31)) >> 40) * 0x1p-24f;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const bench::Args args = bench::parse_args(argc, argv, 30, 20, "xreduce_bench_gpu [--max-log2 30] [--repeat 20] [--out DIR]");
  if (args.exit_code >= 0) return args.exit_code;
  const int max_log2 = args.max_log2, repeat = args.repeat;
  const std::string& out_dir = args.out_dir;
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

  xc::WorkspaceLease ws(device);
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "event");
  check(cudaEventCreate(&stop), "event");

  nlohmann::json rows = nlohmann::json::array();
  std::string md;
  char line[512];
  std::vector<xc::TechniqueInfo> order;  // the progression order of the seeds' table, then the modern ones
  for (auto t : {xc::Technique::global_halving, xc::Technique::interleaved, xc::Technique::interleaved_strided,
                 xc::Technique::sequential, xc::Technique::first_add, xc::Technique::unroll_warp, xc::Technique::unroll_full,
                 xc::Technique::cascaded, xc::Technique::shuffle, xc::Technique::single_pass, xc::Technique::cub,
                 xc::Technique::thrust})
    for (const auto& info : xc::techniques)
      if (info.technique == t) order.push_back(info);

  for (int log2n = 10; log2n <= max_log2; log2n += 2) {
    const std::size_t n = std::size_t{1} << log2n, bytes = n * sizeof(float);
    const std::size_t copies = std::max<std::size_t>(1, pool_bytes / bytes);
    const int reps = log2n >= 28 ? repeat / 2 : repeat;  // the largest sizes are stable and slow
    const int calls = static_cast<int>(std::min<std::size_t>(64, copies));
    auto input = [&](int k) { return pool + (static_cast<std::size_t>(k) % copies) * n; };
    // Replays of a graph of `calls` calls; per-call seconds, one entry per replay.
    auto time_graph = [&](auto&& body) {
      return bench::graph_seconds_per_call(ws->stream, calls, reps, check, [&](int k) { body(input(k)); });
    };
    // Call by call, for what a graph cannot hold.
    auto time_calls = [&](auto&& body) {
      std::vector<double> t;
      for (int k = -3; k < reps; ++k) {
        check(cudaEventRecord(start, ws->stream), "record");
        body(input(k + 3));
        check(cudaEventRecord(stop, ws->stream), "record");
        check(cudaEventSynchronize(stop), "sync");
        float ms = 0;
        check(cudaEventElapsedTime(&ms, start, stop), "elapsed");
        if (k >= 0) t.push_back(ms * 1e-3);
      }
      return t;
    };
    const auto probe_t = time_graph([&](const float* x) {
      read_probe<<<prop.multiProcessorCount * 8, 256, 0, ws->stream>>>(reinterpret_cast<const uint4*>(x), bytes / 16, sink);
    });
    const double probe = bytes / median(probe_t) / 1e9;

    std::vector<std::pair<xc::TechniqueInfo, std::vector<double>>> results;
    double cub_time = 0, cub_value = 0, cub_call = 0;
    std::vector<double> values, per_call;
    for (const auto& info : order) {
      auto call = [&](const float* x) { xc::enqueue(info.technique, x, n, xreduce::DType::f32, xreduce::Op::sum, 256, *ws); };
      call(input(0));  // first call: allocations, occupancy queries, CUB's temporary storage
      const double value = xc::collect(xreduce::DType::f32, xreduce::Op::sum, *ws).value.to_double();
      auto t = info.technique == xc::Technique::thrust ? time_calls(call) : time_graph(call);
      per_call.push_back(median(time_calls(call)));
      if (info.technique == xc::Technique::cub) {
        cub_time = median(t);
        cub_value = value;
      }
      if (info.technique == xc::Technique::cub) cub_call = per_call.back();
      values.push_back(value);
      results.emplace_back(info, std::move(t));
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
      const auto& [info, t] = results[k];
      const double m = median(t), gbps = bytes / m / 1e9;
      // Every value here is in [0, 1), so sum|x| is the sum: the library's tolerance for sums.
      const bool agrees = std::fabs(values[k] - cub_value) <= 64 * 0x1p-23 * std::fabs(cub_value);
      std::snprintf(line, sizeof line, "| 2^%d | %s | %.2f | %.0f | %.0f%% | %.2f | %s | %.2f | %.2f |\n", log2n,
                    std::string(info.name).c_str(), m * 1e6, gbps, 100 * gbps / probe, m / cub_time, agrees ? "yes" : "NO",
                    per_call[k] * 1e6, per_call[k] / cub_call);
      md += line;
      rows.push_back({{"log2n", log2n}, {"n", n}, {"backend", info.name}, {"median_s", m}, {"gbps", gbps},
                      {"fraction_of_probe", gbps / probe}, {"time_over_cub", m / cub_time}, {"value", values[k]},
                      {"agrees_with_cub", agrees}, {"times_s", t},
                      {"call_median_s", per_call[k]}, {"call_over_cub", per_call[k] / cub_call}});
    }
    rows.push_back({{"log2n", log2n}, {"n", n}, {"backend", "read probe"}, {"median_s", median(probe_t)}, {"gbps", probe},
                    {"times_s", probe_t}});
    std::fprintf(stderr, "2^%d done\n", log2n);
  }
  // Records: N records of k f32 values summed column by column (cuda.shuffle's records kernel),
  // against the read probe over the same bytes. k = 9 at N = 2^24 is seed 002's shape at scale.
  {
    const std::size_t elements = std::min<std::size_t>(std::size_t{9} << 24, pool_bytes / sizeof(float) / 16 * 16);
    const std::size_t bytes = elements * sizeof(float);
    const std::size_t copies = std::max<std::size_t>(1, pool_bytes / bytes);
    auto time_replays = [&](auto&& body) {
      const int calls = static_cast<int>(std::min<std::size_t>(16, copies));
      return bench::graph_seconds_per_call(ws->stream, calls, repeat, check,
                                           [&](int k) { body(pool + (static_cast<std::size_t>(k) % copies) * elements); });
    };
    const auto probe_t = time_replays([&](const float* x) {
      read_probe<<<prop.multiProcessorCount * 8, 256, 0, ws->stream>>>(reinterpret_cast<const uint4*>(x), bytes / 16, sink);
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
      auto call = [&](const float* x) { xc::enqueue_records(x, records, k, xreduce::DType::f32, xreduce::Op::sum, *ws); };
      call(pool);
      xc::collect_records(xreduce::DType::f32, xreduce::Op::sum, k, *ws);
      const auto t = time_replays(call);
      const double m = median(t), gbps = records * k * sizeof(float) / m / 1e9;
      std::snprintf(line, sizeof line, "| %zu | %zu | %.2f | %.0f | %.0f%% |\n", k, records, m * 1e6, gbps, 100 * gbps / probe);
      md += line;
      rows.push_back({{"records", true}, {"backend", "cuda.shuffle"}, {"width", k}, {"n_records", records},
                      {"median_s", m}, {"gbps", gbps}, {"fraction_of_probe", gbps / probe}, {"times_s", t}});
    }
    std::fprintf(stderr, "records done\n");
  }
  std::fputs(md.c_str(), stdout);
  if (!out_dir.empty()) {
    std::filesystem::create_directories(out_dir);
    const std::string date = bench::utc_date();
    nlohmann::json j{{"schema", 1}, {"benchmark", "gpu-reduce"}, {"date", date}, {"device", prop.name},
                     {"sm_count", prop.multiProcessorCount}, {"l2_bytes", prop.l2CacheSize}, {"driver", driver},
                     {"runtime", runtime}, {"version", XREDUCE_VERSION_STRING}, {"block_size", 256}, {"dtype", "f32"},
                     {"op", "sum"}, {"memory", "device"}, {"repeat", repeat}, {"rows", rows}};
    if (const char* commit = std::getenv("XREDUCE_COMMIT")) j["commit"] = commit;
    std::ofstream(std::filesystem::path(out_dir) / "gpu-reduce.json") << j.dump(1) << "\n";
    std::ofstream(std::filesystem::path(out_dir) / "gpu-reduce.md") << md;
  }
  cudaFree(pool);
  cudaFree(sink);
  return 0;
}
