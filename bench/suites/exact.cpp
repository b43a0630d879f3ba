// The `exact` suite of xreduce_bench: exact sums (Accuracy::exact) against plain ones, f32 and
// f64, for every backend that has both, on host data (the CPU backends on all threads and one,
// hybrid, the GPU backends' streamed path), in the same run as the naive loop and read probes over
// the same bytes; then (gpu_exact.cu) device-resident data against plain cub and a read probe.
// Data uniform in [0, 1) with every mantissa bit random; then, at 2^24 and at the sweep's largest
// size, the distributions of spreads.hpp (wide exponents, random bit patterns, cancelling pairs, subnormals), where exact
// sums leave their fast path: the price of adversarial data.

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <thread>

#include "gpu.hpp"
#include "spreads.hpp"
#include "xreduce/exact.hpp"
#include "xreduce/backend/registry.hpp"
#include "xreduce/xreduce.hpp"

namespace xreduce::bench {
namespace {

namespace xr = xreduce;

template <class T>
std::vector<T> uniform_data(std::size_t n, std::uint64_t seed) {
  std::vector<T> v(n);
  std::mt19937_64 rng(seed);
  for (T& x : v)
    if constexpr (sizeof(T) == 4) x = static_cast<float>(rng() >> 40) * 0x1p-24f;
    else x = static_cast<double>(rng() >> 11) * 0x1p-53;
  return v;
}

struct Variant {
  std::string backend;
  int threads;  // 0: all
  bool cpu;     // a CPU engine (compared with the CPU read probe)
};

//! The backends with plain and exact sums of host data, all threads and (CPU-parallel) one.
std::vector<Variant> variants_here(xr::Context& ctx) {
  std::vector<Variant> v;
  for (const auto& e : ctx.registry().entries()) {
    const xr::Capabilities c = e.reducer->capabilities();
    if (!c.takes_exact_sums() || !c.reads(xr::Memory::host) || !e.reducer->available()) continue;
    const bool cpu = c.engine() == xr::Engine::cpu_serial || c.engine() == xr::Engine::cpu_parallel;
    v.push_back({std::string(e.reducer->name()), 0, cpu});
    if (c.engine() == xr::Engine::cpu_parallel) v.push_back({std::string(e.reducer->name()), 1, true});
  }
  return v;
}

template <class T>
void host_sweep(const SuiteArgs& args, const std::vector<int>& sizes, Progress& progress, double base, double share,
                nlohmann::json& rows, std::string& md) {
  xr::Context& ctx = xr::default_context();
  const char* type_name = sizeof(T) == 4 ? "f32" : "f64";
  const std::vector<Variant> variants = variants_here(ctx);
  const std::vector<T> data = uniform_data<T>(std::size_t{1} << sizes.back(), 11);
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  xr::Workload user_code;
  user_code.user_code = true;
  xr::Reducer* pool = ctx.registry().best(xr::Engine::cpu_parallel, user_code);
  md += std::string("\n## ") + type_name + ", host data\n\nGB/s, median of " + std::to_string(args.repeat) +
        ": plain / **exact** (exact's speed over plain's). Probes: " + std::to_string(cores) + " threads and one.\n\n"
        "| N | probe, 1 thread | probe, all | naive loop |";
  for (const Variant& v : variants) md += " " + v.backend + (v.threads == 1 ? " (1 thread)" : "") + " |";
  md += "\n|---:|---:|---:|---:|";
  for (std::size_t k = 0; k < variants.size(); ++k) md += "---|";
  md += "\n";
  for (std::size_t s = 0; s < sizes.size(); ++s) {
    const int l = sizes[s];
    const std::size_t n = std::size_t{1} << l, bytes = n * sizeof(T);
    const xr::Request q{data.data(), n, xr::dtype_of<T>(), xr::Op::sum, xr::Memory::host};
    auto at = [&](double part) { return base + share * (s + part) / sizes.size(); };
    volatile std::uint64_t sink = 0;
    const double probe_one = bytes / time_per_call([&] { sink = sink + read_probe(data.data(), bytes, 1, nullptr); }, args.repeat) / 1e9;
    const double probe_all = bytes / time_per_call([&] { sink = sink + read_probe(data.data(), bytes, cores, pool); }, args.repeat) / 1e9;
    xr::Reducer& naive = ctx.registry().get("sequential.naive");
    const double naive_gbps = bytes / time_per_call([&] { naive.reduce(q); }, args.repeat) / 1e9;
    md += "| 2^" + std::to_string(l) + " | " + fmt("%.1f", probe_one) + " | " + fmt("%.1f", probe_all) + " | " +
          fmt("%.1f", naive_gbps) + " |";
    rows.push_back({{"dtype", type_name}, {"log2n", l}, {"n", n}, {"backend", "read probe"}, {"one_thread_gbps", probe_one},
                    {"all_threads_gbps", probe_all}, {"naive_gbps", naive_gbps}});
    for (std::size_t k = 0; k < variants.size(); ++k) {
      const Variant& v = variants[k];
      progress.update(at((k + 1.0) / (variants.size() + 1)), std::string(type_name) + " 2^" + std::to_string(l) + ": " + v.backend);
      xr::Reducer& r = ctx.registry().get(v.backend);
      double gbps[2];
      std::string values[2];
      for (int exact = 0; exact < 2; ++exact) {
        const xr::Options o{.threads = v.threads, .accuracy = exact ? xr::Accuracy::exact : xr::Accuracy::standard};
        xr::Result result;
        std::vector<double> raw;
        const double t = time_per_call([&] { result = r.reduce(q, o); }, args.repeat, &raw);
        gbps[exact] = bytes / t / 1e9;
        values[exact] = result.value.to_string();
        const double probe = v.cpu ? (v.threads == 1 || r.capabilities().engine() == xr::Engine::cpu_serial ? probe_one : probe_all) : 0;
        rows.push_back({{"dtype", type_name}, {"log2n", l}, {"n", n}, {"backend", v.backend}, {"threads", v.threads},
                        {"accuracy", exact ? "exact" : "standard"}, {"median_s", t}, {"gbps", gbps[exact]},
                        {"probe_gbps", probe}, {"value", values[exact]}, {"times_s", raw}});
      }
      rows.back()["exact_over_plain_speed"] = gbps[1] / gbps[0];
      md += " " + fmt("%.1f", gbps[0]) + " / **" + fmt("%.1f", gbps[1]) + "** (" + fmt("%.2f", gbps[1] / gbps[0]) + ") |";
    }
    md += "\n";
  }
}

//! Each backend's plain and exact sums of the same data, drawn from each distribution, at one
//! size: the exact time over the plain one, and whether every backend's exact sum has the bits
//! of ExactSum's on one thread.
template <class T>
void host_distributions(const SuiteArgs& args, int l, Progress& progress, double base, double share, nlohmann::json& rows,
                        std::string& md) {
  xr::Context& ctx = xr::default_context();
  const char* type_name = sizeof(T) == 4 ? "f32" : "f64";
  const std::vector<Variant> variants = variants_here(ctx);
  const std::size_t n = std::size_t{1} << l, bytes = n * sizeof(T);
  std::vector<T> x(n);
  md += std::string("\n### ") + type_name + " by distribution, 2^" + std::to_string(l) + "\n\nGB/s, median of " +
        std::to_string(args.repeat) + ": plain / **exact** (exact's time over plain's).\n\n| distribution |";
  for (const Variant& v : variants) md += " " + v.backend + (v.threads == 1 ? " (1 thread)" : "") + " |";
  md += " exact: the same bits |\n|---|";
  for (std::size_t k = 0; k < variants.size(); ++k) md += "---|";
  md += "---|\n";
  int done = 0;
  for (const Spread spread : kSpreads) {
    const char* name = spread_name(spread, sizeof(T) == 8);
    for (std::size_t i = 0; i < n; ++i) x[i] = spread_value<T>(spread, i, 17);
    ExactSum reference;
    reference.add(x.data(), n);
    const T expected = reference.round<T>();
    const xr::Request q{x.data(), n, xr::dtype_of<T>(), xr::Op::sum, xr::Memory::host};
    md += std::string("| ") + name + " |";
    bool same = true;
    for (const Variant& v : variants) {
      progress.update(base + share * done++ / (std::size(kSpreads) * variants.size()), std::string(type_name) + " " + name + ": " + v.backend);
      xr::Reducer& r = ctx.registry().get(v.backend);
      double t[2];
      for (int exact = 0; exact < 2; ++exact) {
        const xr::Options o{.threads = v.threads, .accuracy = exact ? xr::Accuracy::exact : xr::Accuracy::standard};
        xr::Result result;
        t[exact] = time_per_call([&] { result = r.reduce(q, o); }, args.repeat);
        if (exact) {
          const T got = result.value.get<T>();
          same = same && std::memcmp(&got, &expected, sizeof(T)) == 0;
        }
      }
      md += " " + fmt("%.1f", bytes / t[0] / 1e9) + " / **" + fmt("%.1f", bytes / t[1] / 1e9) + "** (" + fmt("%.2f", t[1] / t[0]) + ") |";
      rows.push_back({{"table", "distributions"}, {"dtype", type_name}, {"distribution", name}, {"log2n", l}, {"n", n},
                      {"backend", v.backend}, {"threads", v.threads}, {"plain_median_s", t[0]}, {"exact_median_s", t[1]},
                      {"exact_over_plain", t[1] / t[0]}});
    }
    md += same ? " yes |\n" : " NO |\n";
  }
}
}  // namespace

int run_exact(const SuiteArgs& args) {
  const int hi = args.max_log2 ? std::min(args.max_log2, 30) : (args.quick ? 14 : 28);
  const int lo = args.quick ? 10 : std::max(args.min_log2, 10);
  std::vector<int> sizes;
  for (int l = lo; l <= hi; l += 2) sizes.push_back(l);
  if (hi >= 27 && lo <= 27) sizes.insert(std::lower_bound(sizes.begin(), sizes.end(), 27), 27);  // the targets' size
  if (sizes.back() != hi) sizes.push_back(hi);
  std::string md = "# Exact sums against plain ones\n";
  nlohmann::json rows = nlohmann::json::array(), gpu_rows = nlohmann::json::array();
  Progress progress("exact", args.quick ? 2 : 90 * std::ldexp(1.0, hi - 26));
  if (!args.device_only) {
    host_sweep<float>(args, sizes, progress, 0, 0.2, rows, md);
    host_sweep<double>(args, sizes, progress, 0.2, 0.2, rows, md);
    // The distributions at 2^24, where the data are in memory, not cache, on most machines (the
    // size of the targets), and again at the sweep's largest size: some processors' last-level
    // cache holds 2^24 elements (the build machine's Xeon reports 480 MiB), and there the plain
    // sums read them faster than memory gives.
    const int l = std::min(24, sizes.back());
    host_distributions<float>(args, l, progress, 0.4, 0.1, rows, md);
    host_distributions<double>(args, l, progress, 0.5, 0.1, rows, md);
    if (sizes.back() > l) {
      host_distributions<float>(args, sizes.back(), progress, 0.6, 0.2, rows, md);
      host_distributions<double>(args, sizes.back(), progress, 0.8, 0.2, rows, md);
    }
  }
  progress.finish();
  std::string gpu_md;
  if (run_exact_gpu(args, gpu_rows, gpu_md) != 0) gpu_md = "\nNo GPU here: no device-resident rows.\n";
  md += gpu_md;
  std::fputs(md.c_str(), stdout);
  write_results(args.out_dir, "exact", {{"op", "sum"}, {"repeat", args.repeat}, {"host_rows", rows}, {"device_rows", gpu_rows}}, md);
  return 0;
}

}  // namespace xreduce::bench
