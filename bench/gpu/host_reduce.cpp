// Host-resident data (a C++20 file: it uses the public API, and only the host side of CUDA): f32 sum of N = 2^20 .. 2^30 elements that live in host memory, GB/s
// counted on the bytes of input. Rows, all in one run:
//   copy pageable / copy pinned   cudaMemcpy of the input to the GPU, nothing else (references)
//   seeds' way                    pageable cudaMemcpy, then the reduction (cuda.single_pass)
//   streamed pageable             the module's streamed path from ordinary memory
//   streamed pinned               the same from pinned memory (copied straight, no staging)
//   cpu                           the best CPU backend (tbb or openmp, whichever is faster here)
//   hybrid pageable / pinned      the hybrid backend, split as `xreduce::calibrate` measured it
//   auto pageable / pinned        backend "auto" after that calibration, and what it chose;
//                                 its regret is its time over the best of the rows above
//                                 for the same residency
// then, at 2^28, the ceiling for hybrid: the CPU's reduction (one core short, as in hybrid) and
// the GPU's pinned copies run alone and then side by side on two halves of the input, each rate
// measured over the same second (what the two read side by side over the better alone is what
// sharing the work can add on this host), and hybrid's calls right after each side-by-side loop,
// held against it (this host's memory rate drifts by 10% over a run, so the ratio is taken
// round by round rather than against the table's row); and a sweep of the streamed path's
// settings (chunk size and streams for pinned input, staging chunk and copy threads for pageable
// input), which the CUDA module's defaults (chunk_bytes, streams, copy_threads, stage_bytes) are
// checked against. Wall-clock time per call, median of R.
//
//   xreduce_bench_gpu_host [--max-log2 30] [--repeat 10] [--out DIR]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "../bench_common.hpp"
#include "bench_interface.hpp"
#include "xreduce/xreduce.hpp"
#include "xreduce/backend/registry.hpp"
#include "xreduce/calibrate.hpp"
#include "xreduce/backend/reducer.hpp"

namespace xc = xreduce::cuda::bench;
namespace xr = xreduce;
namespace bench = xreduce::bench;

namespace {

void check(cudaError_t s, const char* what) {
  if (s != cudaSuccess) {
    std::fprintf(stderr, "xreduce_bench_gpu_host: %s: %s\n", what, cudaGetErrorString(s));
    std::exit(1);
  }
}

//! Calls of a megabyte or more, one at a time: the library's warm-up, then `repeat` single calls.
template <class F>
double median_seconds(int repeat, F&& f) {
  bench::warm_up(f);
  std::vector<double> t;
  xreduce::timing::batch_samples(f, 1, repeat, t);
  return bench::median(t);
}

//! Calls per second of f over about `seconds`, after one warm-up call.
template <class F>
double rate_over(double seconds, F&& f) {
  f();
  const auto t0 = std::chrono::steady_clock::now();
  const auto end = t0 + std::chrono::duration<double>(seconds);
  long calls = 0;
  auto now = t0;
  do {
    f();
    ++calls;
    now = std::chrono::steady_clock::now();
  } while (now < end);
  return calls / std::chrono::duration<double>(now - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  const bench::Args args = bench::parse_args(argc, argv, 30, 10, "xreduce_bench_gpu_host [--max-log2 30] [--repeat 10] [--out DIR]");
  if (args.exit_code >= 0) return args.exit_code;
  const int max_log2 = args.max_log2, repeat = args.repeat;
  const std::string& out_dir = args.out_dir;
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");

  const std::size_t max_n = std::size_t{1} << max_log2, max_bytes = max_n * sizeof(float);
  std::vector<float> pageable(max_n);
  for (std::size_t i = 0; i < max_n; ++i) pageable[i] = static_cast<float>((i * 2654435761u) % 1000) * 0.001f;
  float* pinned = nullptr;
  void* device_buffer = nullptr;
  check(cudaMallocHost(&pinned, max_bytes), "cudaMallocHost");
  std::memcpy(pinned, pageable.data(), max_bytes);
  check(cudaMalloc(&device_buffer, max_bytes), "cudaMalloc");

  // CPU backends from the core alone, and a full context (with the CUDA module, as a user has it)
  // for hybrid and auto, calibrated here first.
  xr::Context cpu(xr::Context::Empty{}, {});
  cpu.registry().add_builtin_backends();
  xr::Config tuned_config;
  std::vector<std::pair<std::string, std::string>> tuned_keys;
  {
    xr::Context full;
    xr::CalibrationOptions co;
    co.max_count = std::min<std::size_t>(max_n, std::size_t{1} << 28);
    const xr::Calibration cal = xr::calibrate(full, co);
    cal.apply_to(tuned_config);
    tuned_keys = cal.keys();
    for (const auto& l : cal.log) std::fprintf(stderr, "calibrate: %s\n", l.c_str());
  }
  xr::Context tuned(tuned_config);

  const char* commit_env = std::getenv("XREDUCE_COMMIT");
  const std::string commit = commit_env ? commit_env : "unknown";
  nlohmann::json rows = nlohmann::json::array();
  std::string md = "# Host-resident data: f32 sum\n\n";
  char line[2048];
  std::snprintf(line, sizeof line,
                "%s, %u host threads, %s, commit %s. Wall-clock time per call, median of %d; GB/s on the bytes of input. "
                "GPU rows use cuda.single_pass.\n\n",
                prop.name, std::max(1u, std::thread::hardware_concurrency()), bench::utc_date().c_str(), commit.c_str(), repeat);
  md += line;
  md += "Calibrated (thresholds: 0 is never):";
  for (const auto& [key, value] : tuned_keys) md += " " + key + " = " + value + ";";
  md += "\n\n";
  md += "| N | copy pageable | copy pinned | seeds' way | streamed pageable | streamed pinned | cpu (best) | "
        "hybrid pageable | hybrid pinned | streamed pageable / seeds' way | streamed pinned / copy pinned | "
        "hybrid pinned / best of cpu, gpu | auto pageable (regret) | auto pinned (regret) |\n"
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n";
  const xc::Streaming defaults = xc::default_streaming();
  for (int log2n = 20; log2n <= max_log2; log2n += 2) {
    const std::size_t n = std::size_t{1} << log2n, bytes = n * sizeof(float);
    xc::Kernels ws(device);
    auto gbps = [&](double s) { return bytes / s / 1e9; };
    const double copy_pageable = median_seconds(repeat, [&] {
      check(cudaMemcpy(device_buffer, pageable.data(), bytes, cudaMemcpyHostToDevice), "copy pageable");
    });
    const double copy_pinned = median_seconds(repeat, [&] {
      check(cudaMemcpy(device_buffer, pinned, bytes, cudaMemcpyHostToDevice), "copy pinned");
    });
    const double seeds = median_seconds(repeat, [&] {
      check(cudaMemcpy(device_buffer, pageable.data(), bytes, cudaMemcpyHostToDevice), "copy");
      ws.enqueue("cuda.single_pass", device_buffer, n, xr::DType::f32, xr::Op::sum);
      ws.collect(xr::DType::f32, xr::Op::sum);
    });
    const double streamed_pageable = median_seconds(repeat, [&] {
      xc::reduce_host("cuda.single_pass", pageable.data(), n, 1, xr::DType::f32, xr::Op::sum, device, false, defaults);
    });
    const double streamed_pinned = median_seconds(repeat, [&] {
      xc::reduce_host("cuda.single_pass", pinned, n, 1, xr::DType::f32, xr::Op::sum, device, true, defaults);
    });
    double cpu_best = 0;
    std::string cpu_name;
    for (const char* name : {"tbb", "openmp"}) {
      xr::Reducer* r = cpu.registry().find(name);
      if (!r) continue;
      const double t = median_seconds(repeat, [&] { r->reduce(xr::Request{pageable.data(), n, xr::DType::f32, xr::Op::sum, xr::Memory::host}); });
      if (cpu_best == 0 || t < cpu_best) {
        cpu_best = t;
        cpu_name = name;
      }
    }
    const xr::Request on_pageable{pageable.data(), n, xr::DType::f32, xr::Op::sum, xr::Memory::host};
    const xr::Request on_pinned{pinned, n, xr::DType::f32, xr::Op::sum, xr::Memory::host};
    const double hybrid_pageable = median_seconds(repeat, [&] { tuned.reduce(on_pageable, {.backend = "hybrid"}); });
    const double hybrid_pinned = median_seconds(repeat, [&] { tuned.reduce(on_pinned, {.backend = "hybrid"}); });
    const double auto_pageable = median_seconds(repeat, [&] { tuned.reduce(on_pageable, {.backend = "auto"}); });
    const double auto_pinned = median_seconds(repeat, [&] { tuned.reduce(on_pinned, {.backend = "auto"}); });
    const std::string picked_pageable(tuned.resolve(on_pageable, {.backend = "auto"}).reducer->name());
    const std::string picked_pinned(tuned.resolve(on_pinned, {.backend = "auto"}).reducer->name());
    const double best_pageable = std::min({seeds, streamed_pageable, cpu_best, hybrid_pageable});
    const double best_pinned = std::min({streamed_pinned, cpu_best, hybrid_pinned});
    std::snprintf(line, sizeof line,
                  "| 2^%d | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f (%s) | %.1f | %.1f | %.2f | %.2f | %.2f | %.1f %s (%.2f) | "
                  "%.1f %s (%.2f) |\n",
                  log2n, gbps(copy_pageable), gbps(copy_pinned), gbps(seeds), gbps(streamed_pageable), gbps(streamed_pinned),
                  gbps(cpu_best), cpu_name.c_str(), gbps(hybrid_pageable), gbps(hybrid_pinned), seeds / streamed_pageable,
                  copy_pinned / streamed_pinned, std::min(cpu_best, streamed_pinned) / hybrid_pinned, gbps(auto_pageable),
                  picked_pageable.c_str(), auto_pageable / best_pageable, gbps(auto_pinned), picked_pinned.c_str(),
                  auto_pinned / best_pinned);
    md += line;
    rows.push_back({{"log2n", log2n}, {"n", n}, {"copy_pageable_s", copy_pageable}, {"copy_pinned_s", copy_pinned},
                    {"seeds_way_s", seeds}, {"streamed_pageable_s", streamed_pageable}, {"streamed_pinned_s", streamed_pinned},
                    {"cpu_best_s", cpu_best}, {"cpu_best", cpu_name}, {"hybrid_pageable_s", hybrid_pageable},
                    {"hybrid_pinned_s", hybrid_pinned}, {"auto_pageable_s", auto_pageable}, {"auto_pinned_s", auto_pinned},
                    {"auto_pageable_backend", picked_pageable}, {"auto_pinned_backend", picked_pinned},
                    {"auto_pageable_regret", auto_pageable / best_pageable}, {"auto_pinned_regret", auto_pinned / best_pinned}});
    std::fprintf(stderr, "2^%d done\n", log2n);
  }

  // The ceiling for hybrid, at 2^28 (or the largest size run): what the CPU and the bus each read
  // alone, then side by side, on two halves of the pinned input.
  const int sweep_log2 = std::min(28, max_log2);
  const std::size_t n = std::size_t{1} << sweep_log2, bytes = n * sizeof(float);
  nlohmann::json ceiling;
  {
    const std::size_t half = n / 2, half_bytes = half * sizeof(float);
    const int cores = static_cast<int>(std::max(2u, std::thread::hardware_concurrency()));
    const std::string cpu_name(tuned.config().dispatch.parallel_backend_for(n));
    xr::Reducer* cpu_backend = cpu.registry().find(cpu_name.empty() ? "tbb" : cpu_name);
    if (!cpu_backend) cpu_backend = cpu.registry().find("openmp");
    cudaStream_t stream = nullptr;
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    const xr::Request upper{pinned + half, half, xr::DType::f32, xr::Op::sum, xr::Memory::host};
    auto reduce_upper = [&](int threads) { cpu_backend->reduce(upper, {.threads = threads}); };
    auto copy_lower = [&] {
      check(cudaMemcpyAsync(device_buffer, pinned, half_bytes, cudaMemcpyHostToDevice, stream), "copy");
      check(cudaStreamSynchronize(stream), "sync");
    };
    const xr::Request whole{pinned, n, xr::DType::f32, xr::Op::sum, xr::Memory::host};
    std::vector<double> cpu_all, cpu_alone, copy_alone, cpu_beside, copy_beside, hybrid_after, hybrid_ratio;
    for (int k = 0; k < 3; ++k) {
      cpu_all.push_back(half_bytes * rate_over(1.0, [&] { reduce_upper(cores); }) / 1e9);
      cpu_alone.push_back(half_bytes * rate_over(1.0, [&] { reduce_upper(cores - 1); }) / 1e9);
      copy_alone.push_back(half_bytes * rate_over(1.0, copy_lower) / 1e9);
      double copies = 0;
      std::thread bus([&] { copies = rate_over(1.0, copy_lower); });
      cpu_beside.push_back(half_bytes * rate_over(1.0, [&] { reduce_upper(cores - 1); }) / 1e9);
      bus.join();
      copy_beside.push_back(half_bytes * copies / 1e9);
      hybrid_after.push_back(bytes / median_seconds(repeat, [&] { tuned.reduce(whole, {.backend = "hybrid"}); }) / 1e9);
      hybrid_ratio.push_back(hybrid_after.back() / (cpu_beside.back() + copy_beside.back()));
    }
    cudaStreamDestroy(stream);
    using bench::median;
    const double all = median(cpu_all), alone = median(cpu_alone), bus_alone = median(copy_alone),
                 cpu_side = median(cpu_beside), bus_side = median(copy_beside), hybrid = median(hybrid_after),
                 ratio = median(hybrid_ratio);
    const double gain = (cpu_side + bus_side) / std::max(all, bus_alone);
    std::snprintf(line, sizeof line,
                  "\n## The ceiling for hybrid at 2^%d (GB/s)\n\n`%s` reduces one half of the pinned input while the GPU copies "
                  "the other half, each in a loop for 1 s, alone and then side by side (median of 3). The last column is what "
                  "the two read side by side over the better of them alone: what sharing the work adds on this host, the "
                  "CPU's and the bus's shares of host memory both counted (single calls over a whole array, as in the table "
                  "above, can read slower than these loops). Then `hybrid` on the whole pinned input (median of %d calls) "
                  "right after each side-by-side loop; the last column is the median, over the three rounds, of what it read "
                  "over what that round's loop read side by side.\n\n"
                  "| CPU, %d threads, alone | CPU, %d threads, alone | pinned copy alone | CPU side by side | copy side by side | "
                  "sum side by side | side by side / better alone | hybrid right after | hybrid / sum side by side |\n"
                  "|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
                  "| %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.2fx | %.1f | %.2fx |\n",
                  sweep_log2, std::string(cpu_backend->name()).c_str(), repeat, cores, cores - 1, all, alone, bus_alone,
                  cpu_side, bus_side, cpu_side + bus_side, gain, hybrid, ratio);
    md += line;
    ceiling = {{"log2n", sweep_log2}, {"cpu_backend", cpu_backend->name()}, {"threads", cores},
               {"cpu_all_threads_gbps", cpu_all}, {"cpu_alone_gbps", cpu_alone}, {"copy_alone_gbps", copy_alone},
               {"cpu_beside_gbps", cpu_beside}, {"copy_beside_gbps", copy_beside}, {"side_by_side_over_better_alone", gain},
               {"hybrid_after_gbps", hybrid_after}, {"hybrid_over_side_by_side", hybrid_ratio},
               {"hybrid_over_side_by_side_median", ratio}};
  }

  // The streamed path's knobs: chunk size and streams for pinned input; for pageable input, the
  // staging chunk and the copy threads (each with `streams` chunks in flight).
  nlohmann::json sweep = nlohmann::json::array();
  std::snprintf(line, sizeof line, "\n## Streamed path settings at 2^%d (GB/s)\n\nPinned input: chunk size and streams.\n\n"
                "| chunk MiB | streams | pinned |\n|---:|---:|---:|\n", sweep_log2);
  md += line;
  for (std::size_t chunk_mib : {16, 32, 64})
    for (int streams : {2, 3, 4}) {
      const xc::Streaming s{chunk_mib << 20, streams, defaults.copy_threads, defaults.stage_bytes};
      const double pn = median_seconds(repeat, [&] {
        xc::reduce_host("cuda.single_pass", pinned, n, 1, xr::DType::f32, xr::Op::sum, device, true, s);
      });
      std::snprintf(line, sizeof line, "| %zu | %d | %.1f |\n", chunk_mib, streams, bytes / pn / 1e9);
      md += line;
      sweep.push_back({{"memory", "pinned"}, {"chunk_mib", chunk_mib}, {"streams", streams}, {"seconds", pn}});
    }
  md += "\nPageable input: the staging chunk and the copy threads (streams " + std::to_string(defaults.streams) +
        " each).\n\n| stage KiB | copy threads | pageable |\n|---:|---:|---:|\n";
  for (std::size_t stage_kib : {512, 1024, 2048, 4096})
    for (int threads : {4, 8, 16}) {
      const xc::Streaming s{defaults.chunk_bytes, defaults.streams, threads, stage_kib << 10};
      const double pg = median_seconds(repeat, [&] {
        xc::reduce_host("cuda.single_pass", pageable.data(), n, 1, xr::DType::f32, xr::Op::sum, device, false, s);
      });
      std::snprintf(line, sizeof line, "| %zu | %d | %.1f |\n", stage_kib, threads, bytes / pg / 1e9);
      md += line;
      sweep.push_back({{"memory", "pageable"}, {"stage_kib", stage_kib}, {"copy_threads", threads}, {"seconds", pg}});
    }
  std::fputs(md.c_str(), stdout);
  if (!out_dir.empty()) {
    std::filesystem::create_directories(out_dir);
    const std::string date = bench::utc_date();
    nlohmann::json calibration_json = nlohmann::json::object();
    for (const auto& [key, value] : tuned_keys) calibration_json[key] = value;
    nlohmann::json j{{"schema", 1}, {"benchmark", "host-reduce"}, {"date", date}, {"device", prop.name},
                     {"calibration", calibration_json},
                     {"dtype", "f32"}, {"op", "sum"}, {"repeat", repeat}, {"rows", rows}, {"ceiling", ceiling}, {"sweep", sweep},
                     {"defaults", {{"chunk_bytes", defaults.chunk_bytes}, {"streams", defaults.streams},
                                   {"copy_threads", defaults.copy_threads}, {"stage_bytes", defaults.stage_bytes}}}};
    if (commit_env) j["commit"] = commit;
    std::ofstream(std::filesystem::path(out_dir) / "host-reduce.json") << j.dump(1) << "\n";
    std::ofstream(std::filesystem::path(out_dir) / "host-reduce.md") << md;
  }
  cudaFreeHost(pinned);
  cudaFree(device_buffer);
  return 0;
}
