// CPU throughput of the sequential, naive, TBB and OpenMP backends on one f32 sum, against
// read-bandwidth probes measured in the same run: one thread (for the single-thread backends)
// and all threads (for the parallel ones). GB/s = bytes read / median time, decimal GB.
//
//   xreduce_bench_cpu [--n N] [--repeat R] [--out DIR]
//
// Writes DIR/cpu-throughput.json and DIR/cpu-throughput.md when --out is given.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_common.hpp"
#include "xreduce/xreduce.hpp"
#include "xreduce/registry.hpp"
#include "xreduce/reducer.hpp"

namespace xr = xreduce;

namespace {

using xreduce::bench::median;

template <class F>
double time_median(int repeat, F&& f) {
  f();  // warm-up: first touch, thread pools
  std::vector<double> t;
  for (int k = 0; k < repeat; ++k) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return median(t);
}

// Reads every 64-bit word with eight independent integer sums: no floating-point dependency,
// nothing for the core to wait on but memory. The result is kept so the loop is not removed.
std::uint64_t probe_slice(const std::uint64_t* w, std::size_t n) {
  std::uint64_t s[8] = {};
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) s[j] += w[i + j];
  for (; i < n; ++i) s[0] += w[i];
  return s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
}

std::uint64_t probe(const void* data, std::size_t bytes, unsigned threads) {
  const auto* w = static_cast<const std::uint64_t*>(data);
  const std::size_t words = bytes / 8, per = (words + threads - 1) / threads;
  std::vector<std::uint64_t> out(threads);
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t)
    pool.emplace_back([&, t] { out[t] = probe_slice(w + std::min(words, t * per), std::min(per, words - std::min(words, t * per))); });
  out[0] = probe_slice(w, std::min(per, words));
  for (auto& th : pool) th.join();
  std::uint64_t s = 0;
  for (auto v : out) s += v;
  return s;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t n = std::size_t{1} << 27;
  int repeat = 10;
  std::string out_dir;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--n" && i + 1 < argc) n = std::stoull(argv[++i]);
    else if (a == "--repeat" && i + 1 < argc) repeat = std::stoi(argv[++i]);
    else if (a == "--out" && i + 1 < argc) out_dir = argv[++i];
    else {
      std::fprintf(stderr, "usage: xreduce_bench_cpu [--n N] [--repeat R] [--out DIR]\n");
      return a == "--help" ? 0 : 2;
    }
  }
  if (n == 0 || repeat < 1) {
    std::fprintf(stderr, "xreduce_bench_cpu: --n and --repeat must be positive\n");
    return 2;
  }
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<float> v(n);
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  for (auto& x : v) x = unit(rng);
  const std::size_t bytes = n * sizeof(float);
  const xr::Request q{v.data(), n, xr::DType::f32, xr::Op::sum, xr::Memory::host};
  const double exact = xr::exact_reference(q).value.to_double();

  volatile std::uint64_t sink = 0;
  const double probe1 = bytes / time_median(repeat, [&] { sink = sink + probe(v.data(), bytes, 1); }) / 1e9;
  const double probe_all = bytes / time_median(repeat, [&] { sink = sink + probe(v.data(), bytes, threads); }) / 1e9;

  struct Row {
    std::string backend;
    double gbps, rel_error;
    bool parallel;
  };
  std::vector<Row> rows;
  for (const auto& e : xr::default_context().registry().entries()) {
    const std::string name(e.reducer->name());
    if (name != "sequential" && name != "sequential.naive" && name != "tbb" && name != "openmp") continue;
    xr::Result r;
    const double t = time_median(repeat, [&] { r = e.reducer->reduce(q); });
    rows.push_back({name, bytes / t / 1e9, std::fabs(r.value.to_double() - exact) / std::fabs(exact),
                    e.reducer->capabilities().engine() == xr::Engine::cpu_parallel});
  }
  double naive = 0;
  for (const auto& r : rows)
    if (r.backend == "sequential.naive") naive = r.gbps;

  const std::string date = xreduce::bench::utc_date();
  char head[512];
  std::snprintf(head, sizeof head, "%zu random f32 in [0,1) (%.2f GB), median of %d runs, %s, %u threads, %s", n,
                bytes / 1e9, repeat, cpu_model().c_str(), threads, date.c_str());
  std::string md = std::string("# CPU throughput: f32 sum\n\n") + head + "\n\n";
  char line[512];
  std::snprintf(line, sizeof line, "Read-bandwidth probe: %.2f GB/s on one thread, %.2f GB/s on %u threads.\n\n", probe1,
                probe_all, threads);
  md += line;
  md += "| backend | GB/s | x naive | % of probe | relative error |\n|---|---:|---:|---:|---:|\n";
  nlohmann::json rows_json = nlohmann::json::array();
  for (const auto& r : rows) {
    const double probe_ref = r.parallel ? probe_all : probe1;
    std::snprintf(line, sizeof line, "| %s | %.2f | %.2f | %.0f%% (%s) | %.2e |\n", r.backend.c_str(), r.gbps,
                  naive > 0 ? r.gbps / naive : 0.0, 100 * r.gbps / probe_ref, r.parallel ? "all threads" : "one thread",
                  r.rel_error);
    md += line;
    rows_json.push_back({{"backend", r.backend}, {"gbps", r.gbps}, {"x_naive", naive > 0 ? r.gbps / naive : 0.0},
                         {"fraction_of_probe", r.gbps / probe_ref}, {"relative_error", r.rel_error}});
  }
  std::fputs(md.c_str(), stdout);
  if (!out_dir.empty()) {
    std::filesystem::create_directories(out_dir);
    nlohmann::json j{{"schema", 1}, {"benchmark", "cpu-throughput"}, {"date", date}, {"cpu", cpu_model()},
                     {"threads", threads}, {"n", n}, {"dtype", "f32"}, {"op", "sum"}, {"repeat", repeat},
                     {"version", XREDUCE_VERSION_STRING}, {"probe_gbps_one_thread", probe1},
                     {"probe_gbps_all_threads", probe_all}, {"rows", rows_json}};
    if (const char* commit = std::getenv("XREDUCE_COMMIT")) j["commit"] = commit;
    std::ofstream(std::filesystem::path(out_dir) / "cpu-throughput.json") << j.dump(2) << "\n";
    std::ofstream(std::filesystem::path(out_dir) / "cpu-throughput.md") << md;
  }
  return 0;
}
