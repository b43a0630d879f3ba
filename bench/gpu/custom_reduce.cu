// User-defined reductions on the GPU (xreduce/cuda.cuh) against the library's own backends and a
// read probe, on device-resident data: an f32 sum through the template API against `cub` and
// `cuda.single_pass` named through the runtime API, and seed 002's 3x3 matrix minimum as a Mat3
// type against the same bytes as records of width 9 (`cuda.shuffle`). Wall-clock time per call
// (what a caller waits: the template path allocates its partials, copies the result back and
// synchronises, as the runtime backends do), median of --repeat after warm-up; the probe is timed
// with events and has no such costs, so it bounds what any call can reach.
//
//   xreduce_bench_gpu_custom [--max-log2 28] [--repeat 20] [--out DIR]

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../bench_common.hpp"
#include "gpu_timing.cuh"
#include "xreduce/cuda.cuh"
#include "xreduce/version.hpp"

namespace xr = xreduce;
using xreduce::bench::median;

namespace {

void check(cudaError_t s, const char* what) {
  if (s != cudaSuccess) {
    std::fprintf(stderr, "xreduce_bench_gpu_custom: %s: %s\n", what, cudaGetErrorString(s));
    std::exit(1);
  }
}

struct Plus {
  __host__ __device__ float operator()(float a, float b) const { return a + b; }
};
struct Mat3 {
  int m[9];
};
struct Mat3Min {
  __host__ __device__ Mat3 operator()(const Mat3& a, const Mat3& b) const {
    Mat3 r;
    for (int i = 0; i < 9; ++i) r.m[i] = b.m[i] < a.m[i] ? b.m[i] : a.m[i];
    return r;
  }
};

__global__ void fill(unsigned* x, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    x[i] = static_cast<unsigned>((i * 2654435761u) % 1000);  // small ints: valid as i32, and as f32 bit patterns of tiny values
}

template <class F>
std::vector<double> wall_per_call(int repeat, F&& call) {
  call();
  std::vector<double> t;
  for (int k = 0; k < repeat; ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    call();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  const auto args = xreduce::bench::parse_args(argc, argv, 28, 20, "xreduce_bench_gpu_custom [--max-log2 28] [--repeat 20] [--out DIR]");
  if (args.exit_code >= 0) return args.exit_code;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::fprintf(stderr, "xreduce_bench_gpu_custom: no CUDA device\n");
    return 2;
  }
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "properties");
  const std::size_t max_words = std::size_t{1} << args.max_log2;
  unsigned* pool = nullptr;
  unsigned* sink = nullptr;
  check(cudaMalloc(&pool, max_words * 4), "cudaMalloc");
  check(cudaMalloc(&sink, 4), "cudaMalloc");
  fill<<<prop.multiProcessorCount * 8, 256>>>(pool, max_words);
  check(cudaDeviceSynchronize(), "fill");
  cudaStream_t stream;
  check(cudaStreamCreate(&stream), "stream");

  const xr::Policy gpu{.backend = "cuda", .check_laws = false};
  nlohmann::json rows = nlohmann::json::array();
  std::string md = "# User-defined reductions on the GPU (xreduce/cuda.cuh)\n\n" + std::string(prop.name) +
                   ". Device-resident data; wall-clock time per call, median of " + std::to_string(args.repeat) +
                   "; the read probe is a bare kernel timed with events over the same bytes.\n\n"
                   "| N | bytes | what | median us | GB/s | % of probe | / reference |\n|---:|---:|---|---:|---:|---:|---:|\n";
  char line[512];
  for (int l = std::max(20, args.max_log2 - 4); l <= args.max_log2; l += 2) {
    const std::size_t n = std::size_t{1} << l, bytes = n * 4;
    const auto probe = xreduce::bench::graph_seconds_per_call(stream, 1, args.repeat, check, [&](int) {
      xreduce::bench::read_probe<<<prop.multiProcessorCount * 8, 256, 0, stream>>>(reinterpret_cast<const uint4*>(pool), bytes / 16, sink);
    });
    const double probe_s = median(probe);
    const float* f = reinterpret_cast<const float*>(pool);
    const int* words = reinterpret_cast<const int*>(pool);
    const std::size_t mats = n / 9;
    Mat3 identity;
    for (int& v : identity.m) v = 0x7fffffff;
    struct Row {
      std::string what;
      std::vector<double> t;
      std::string reference;
    };
    std::vector<Row> measured;
    measured.push_back({"f32 sum, cuda::reduce (template)", wall_per_call(args.repeat, [&] {
                          xr::cuda::reduce(gpu, std::span<const float>(f, n), Plus{}, 0.0f);
                        }), "cub"});
    for (const char* backend : {"cub", "cuda.single_pass"})
      measured.push_back({std::string("f32 sum, ") + backend + " (runtime API)", wall_per_call(args.repeat, [&] {
                            xr::reduce(xr::Request{f, n, xr::DType::f32, xr::Op::sum, xr::Memory::device}, {.backend = backend});
                          }), "cub"});
    measured.push_back({"Mat3 minimum, cuda::reduce (template)", wall_per_call(args.repeat, [&] {
                          xr::cuda::reduce(gpu, std::span<const Mat3>(reinterpret_cast<const Mat3*>(words), mats), Mat3Min{}, identity);
                        }), "records"});
    measured.push_back({"records of width 9, i32 min, cuda.shuffle (runtime API)", wall_per_call(args.repeat, [&] {
                          xr::Request q = xr::Request::records(words, mats, 9, xr::DType::i32, xr::Op::min);
                          q.memory = xr::Memory::device;
                          xr::reduce(q, {.backend = "cuda.shuffle"});
                        }), "records"});
    auto reference_of = [&](const std::string& name) {
      for (const Row& r : measured)
        if ((name == "cub" && r.what.find(", cub ") != std::string::npos) || (name == "records" && r.what.rfind("records", 0) == 0))
          return median(r.t);
      return 0.0;
    };
    std::snprintf(line, sizeof line, "| 2^%d | %zu | read probe | %.2f | %.0f | 100%% | |\n", l, bytes, probe_s * 1e6, bytes / probe_s / 1e9);
    md += line;
    for (const Row& r : measured) {
      const double m = median(r.t), used = r.what.find("Mat3") != std::string::npos || r.what.rfind("records", 0) == 0
                                                ? static_cast<double>(mats * 36)
                                                : static_cast<double>(bytes);
      std::snprintf(line, sizeof line, "| 2^%d | %.0f | %s | %.2f | %.0f | %.0f%% | %.2f |\n", l, used, r.what.c_str(), m * 1e6,
                    used / m / 1e9, 100 * (used / m) / (bytes / probe_s), m / reference_of(r.reference));
      md += line;
      rows.push_back({{"log2n", l}, {"bytes", used}, {"what", r.what}, {"median_s", m}, {"times_s", r.t},
                      {"over_reference", m / reference_of(r.reference)}, {"reference", r.reference}});
    }
    rows.push_back({{"log2n", l}, {"bytes", bytes}, {"what", "read probe"}, {"median_s", probe_s}, {"times_s", probe}});
  }
  md += "\n`/ reference`: f32 rows against `cub`, Mat3 rows against the records row.\n";
  std::fputs(md.c_str(), stdout);
  if (!args.out_dir.empty()) {
    std::filesystem::create_directories(args.out_dir);
    nlohmann::json j{{"schema", 1}, {"benchmark", "gpu-custom"}, {"date", xreduce::bench::utc_date()}, {"device", prop.name},
                     {"version", XREDUCE_VERSION_STRING}, {"repeat", args.repeat}, {"rows", rows}};
    if (const char* commit = std::getenv("XREDUCE_COMMIT")) j["commit"] = commit;
    std::ofstream(std::filesystem::path(args.out_dir) / "gpu-custom.json") << j.dump(1) << "\n";
    std::ofstream(std::filesystem::path(args.out_dir) / "gpu-custom.md") << md;
  }
  cudaFree(pool);
  cudaFree(sink);
  return 0;
}
