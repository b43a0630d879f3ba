// The `stats` suite of xreduce_bench: several ops in one pass (Request::ops). On the host, every
// CPU backend that does them, on all threads, over 2^26 f32: a plain sum, the four calls of sum,
// min, max and argmax one after another, and the same four in one pass (and all six), each as a
// multiple of the plain sum's time in the same run; then (gpu_stats.cu) device-resident data.

#include <cmath>
#include <cstdio>
#include <random>

#include "gpu.hpp"
#include "xreduce/backend/registry.hpp"
#include "xreduce/xreduce.hpp"

namespace xreduce::bench {

int run_stats(const SuiteArgs& args) {
  namespace xr = xreduce;
  xr::Context& ctx = xr::default_context();
  const std::size_t n = std::size_t{1} << (args.quick ? 18 : 26);
  std::vector<float> data(n);
  std::mt19937_64 rng(5);
  for (float& v : data) v = static_cast<float>(rng() >> 40) * 0x1p-24f;
  const xr::OpSet four{xr::Op::sum, xr::Op::min, xr::Op::max, xr::Op::argmax};
  const xr::OpSet six{xr::Op::sum, xr::Op::min, xr::Op::max, xr::Op::argmin, xr::Op::argmax, xr::Op::sumsq};
  std::string md = "# Several ops in one pass\n\n## Host data, f32, 2^" + std::to_string(static_cast<int>(std::log2(n))) +
                   ", all threads\n\nMedian of " + std::to_string(args.repeat) +
                   " calls; in brackets, the time over the same backend's plain sum in the same run.\n\n"
                   "| backend | sum, us | sum, min, max, argmax as four calls | the four in one pass | all six in one pass |\n"
                   "|---|---:|---:|---:|---:|\n";
  nlohmann::json rows = nlohmann::json::array(), gpu_rows = nlohmann::json::array();
  Progress progress("stats", args.quick ? 2 : 30);
  std::vector<xr::Reducer*> cpu;
  for (const auto& e : ctx.registry().entries())
    if (const xr::Capabilities c = e.reducer->capabilities(); c.takes_several() && c.engine() != xr::Engine::gpu && e.reducer->available())
      cpu.push_back(e.reducer);
  for (std::size_t k = 0; k < cpu.size(); ++k) {
    xr::Reducer& r = *cpu[k];
    progress.update(0.5 * k / cpu.size(), std::string(r.name()));
    const xr::Request q{data.data(), n, xr::DType::f32, xr::Op::sum, xr::Memory::host};
    std::vector<double> raw;
    const double sum = time_per_call([&] { r.reduce(q); }, args.repeat, &raw);
    rows.push_back({{"backend", r.name()}, {"what", "sum"}, {"n", n}, {"median_s", sum}, {"times_s", raw}});
    md += "| " + std::string(r.name()) + " | " + fmt("%.1f", sum * 1e6) + " |";
    auto row = [&](const std::string& what, double t) {
      md += fmt(" %.1f", t * 1e6) + fmt(" (%.2fx) |", t / sum);
      rows.push_back({{"backend", r.name()}, {"what", what}, {"n", n}, {"median_s", t}, {"over_sum", t / sum}, {"times_s", raw}});
    };
    row("four calls", time_per_call([&] {
          for (xr::Op op : {xr::Op::sum, xr::Op::min, xr::Op::max, xr::Op::argmax}) {
            xr::Request one = q;
            one.op = op;
            r.reduce(one);
          }
        }, args.repeat, &raw));
    for (xr::OpSet ops : {four, six}) {
      xr::Request several = q;
      several.ops = ops;
      row(ops == four ? "four in one pass" : "six in one pass", time_per_call([&] { r.reduce(several); }, args.repeat, &raw));
    }
    md += "\n";
  }
  progress.finish();
  if (run_stats_gpu(args, gpu_rows, md) != 0) md += "\nNo GPU here: no device-resident rows.\n";
  std::fputs(md.c_str(), stdout);
  write_results(args.out_dir, "stats", {{"dtype", "f32"}, {"repeat", args.repeat}, {"host_rows", rows}, {"device_rows", gpu_rows}}, md);
  return 0;
}

}  // namespace xreduce::bench
