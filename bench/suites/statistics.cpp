// The `statistics` suite of xreduce_bench: each statistic (mean, var, std, the norms, logsumexp,
// count_nonzero, the nan* ops; exact mean and var) over 2^27 f32 of host data on every CPU
// backend that does them, on all threads, as GB/s of the bytes read, a share of the all-threads
// read probe over the same bytes and a multiple of the same backend's plain sum, in one run; then,
// where a GPU is, the same over device data on cuda.shuffle (gpu_statistics.cu).

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <thread>

#include "gpu.hpp"
#include "xreduce/backend/registry.hpp"
#include "xreduce/xreduce.hpp"

namespace xreduce::bench {

int run_statistics(const SuiteArgs& args) {
  namespace xr = xreduce;
  xr::Context& ctx = xr::default_context();
  const std::size_t n = std::size_t{1} << (args.quick ? 18 : 27);
  const std::size_t bytes = n * sizeof(float);
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  std::vector<float> data(n);
  std::mt19937_64 rng(36);
  std::normal_distribution<float> normal(3.0f, 2.0f);
  for (float& v : data) v = normal(rng);
  xr::Workload user_code;
  user_code.user_code = true;
  xr::Reducer* pool = ctx.registry().best(xr::Engine::cpu_parallel, user_code);
  volatile std::uint64_t sink = 0;
  const double probe = bytes / time_per_call([&] { sink = sink + read_probe(data.data(), bytes, cores, pool); }, args.repeat) / 1e9;
  struct Case {
    xr::Op op;
    xr::Accuracy accuracy;
  };
  const std::vector<Case> cases{{xr::Op::sum, xr::Accuracy::standard},       {xr::Op::mean, xr::Accuracy::standard},
                                {xr::Op::var, xr::Accuracy::standard},       {xr::Op::std, xr::Accuracy::standard},
                                {xr::Op::norm2, xr::Accuracy::standard},     {xr::Op::norm1, xr::Accuracy::standard},
                                {xr::Op::norminf, xr::Accuracy::standard},   {xr::Op::logsumexp, xr::Accuracy::standard},
                                {xr::Op::count_nonzero, xr::Accuracy::standard}, {xr::Op::nansum, xr::Accuracy::standard},
                                {xr::Op::nanmean, xr::Accuracy::standard},   {xr::Op::nanvar, xr::Accuracy::standard},
                                {xr::Op::nanmax, xr::Accuracy::standard},    {xr::Op::nanargmax, xr::Accuracy::standard},
                                {xr::Op::mean, xr::Accuracy::exact},         {xr::Op::var, xr::Accuracy::exact}};
  std::vector<xr::Reducer*> cpu;
  for (const char* name : {"openmp", "tbb"})
    if (xr::Reducer* r = ctx.registry().find(name); r && r->available() && !args.device_only) cpu.push_back(r);
  std::string md = "# Statistics\n\nThe device rows alone (`--device-only`).\n";
  if (!cpu.empty()) {
    md = "# Statistics on the CPU\n\n## Host data, f32, 2^" + std::to_string(static_cast<int>(std::log2(n))) + " (" +
         std::to_string(bytes >> 20) + " MiB), normal(3, 2), all " + std::to_string(cores) +
         " threads\n\nGB/s of the bytes read, median of " + std::to_string(args.repeat) +
         " calls; in brackets, the share of the all-threads read probe over the same bytes (" + fmt("%.1f", probe) +
         " GB/s, on " + (pool ? std::string(pool->name()) : std::string("one thread")) +
         "'s threads) and the time over the same backend's plain sum in the same run.\n\n| op |";
    for (xr::Reducer* r : cpu) md.append(" ").append(r->name()).append(" |");  // not " " + string: GCC 12 warns (-Wrestrict, its bug 105329)
    md += "\n|---|";
    for (std::size_t k = 0; k < cpu.size(); ++k) md += "---:|";
    md += "\n";
  }
  nlohmann::json rows = nlohmann::json::array();
  rows.push_back({{"what", "read probe"}, {"threads", cores}, {"gbps", probe}});
  Progress progress("statistics", args.quick ? 2 : 0.1 * args.repeat * cases.size() * cpu.size() + 5);
  std::vector<double> sums(cpu.size(), 0);
  for (std::size_t c = 0; c < (cpu.empty() ? 0 : cases.size()); ++c) {
    const Case k = cases[c];
    const std::string name = std::string(to_string(k.op)) + (k.accuracy == xr::Accuracy::exact ? " (exact)" : "");
    progress.update(static_cast<double>(c) / cases.size(), name);
    md += "| " + name + " |";
    for (std::size_t b = 0; b < cpu.size(); ++b) {
      xr::Reducer& r = *cpu[b];
      xr::Request q{data.data(), n, xr::DType::f32, k.op, xr::Memory::host};
      xr::Options o;
      o.accuracy = k.accuracy;
      std::vector<double> raw;
      const double t = time_per_call([&] { r.reduce(q, o); }, args.repeat, &raw);
      if (k.op == xr::Op::sum) sums[b] = t;
      const double gbps = bytes / t / 1e9;
      md += fmt(" %.1f", gbps) + " (" + fmt("%.0f%%", 100 * gbps / probe) + ", " + fmt("%.2fx", t / sums[b]) + ") |";
      rows.push_back({{"op", to_string(k.op)}, {"accuracy", to_string(k.accuracy)}, {"backend", r.name()}, {"threads", cores},
                      {"n", n}, {"median_s", t}, {"gbps", gbps}, {"probe_gbps", probe}, {"fraction_of_probe", gbps / probe},
                      {"over_sum", t / sums[b]}, {"times_s", raw}});
    }
    md += "\n";
  }
  progress.finish();
  nlohmann::json device_rows = nlohmann::json::array();
  if (run_statistics_gpu(args, device_rows, md) != 0) md += "\nNo GPU here: no device-resident rows.\n";
  std::fputs(md.c_str(), stdout);
  write_results(args.out_dir, "statistics",
                {{"dtype", "f32"}, {"n", n}, {"repeat", args.repeat}, {"rows", rows}, {"device_rows", device_rows}}, md);
  return 0;
}

}  // namespace xreduce::bench
