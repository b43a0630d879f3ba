// The `segments` suite of xreduce_bench: segmented f32 sums (Request::segments). On the host,
// every CPU backend on all threads sums 2^26 elements flat, as 2^22 rows of 16 and as 16 rows
// of 2^22, each against its own flat sum in the same run; then (gpu_segments.cu)
// device-resident data against cub::DeviceSegmentedReduce and the read probe. Between them, auto
// on segmented host data: rows of 1 to 256 from 2^12 to 2^24 elements, every backend that fits,
// and auto's regret weighing segments (DispatchConfig::segment_cost) against counting elements.

#include <cmath>
#include <cstdio>
#include <map>
#include <random>

#include "gpu.hpp"
#include "xreduce/backend/dispatcher.hpp"
#include "xreduce/backend/registry.hpp"
#include "xreduce/xreduce.hpp"

namespace xreduce::bench {
namespace {

//! auto on segmented host data: its choice and regret (its time over the fastest backend's), and
//! the choice it would make counting a segment's elements alone (segment_cost = 0) with that
//! backend's regret.
void auto_on_segments(const SuiteArgs& args, const std::vector<float>& data, nlohmann::json& rows, std::string& md,
                      Progress& progress) {
  Context& ctx = default_context();
  DispatchConfig by_elements = ctx.config().dispatch;
  by_elements.segment_cost = 0;
  const Dispatcher elements_only(ctx.registry(), by_elements);
  md += "\n## auto on segmented host data, f32 sums\n\nsegment_cost = " + std::to_string(ctx.config().dispatch.segment_cost) +
        " (" + (ctx.config().dispatch_origins.count("segment_cost") ? "from the config" : "default") +
        "). Median of " + std::to_string(args.repeat) +
        " calls; regret: the time over the fastest backend's for that shape and size (auto's own call for auto, the named "
        "backend's for the choice by elements alone).\n\n| rows of | N | fastest | auto picks | regret | by elements alone | regret |\n"
        "|---:|---:|---|---|---:|---|---:|\n";
  std::vector<float> out(data.size());
  const int top = args.quick ? 16 : 24;
  const std::size_t lengths[] = {1, 4, 16, 256};
  int done = 0;
  for (std::size_t length : lengths)
    for (int log2n = 12; log2n <= top && (std::size_t{1} << log2n) <= data.size(); log2n += 2, ++done) {
      const std::size_t n = std::size_t{1} << log2n;
      progress.update(0.5 + 0.2 * done / (4.0 * ((top - 12) / 2 + 1)), "auto, rows of " + std::to_string(length));
      Request q = Request::rows(data.data(), n / length, length, DType::f32, Op::sum);
      q.memory = Memory::host;
      q.out = out.data();
      const Workload w = Workload::of(canonical(q));
      std::map<std::string, double> times;
      std::string fastest;
      for (const auto& e : ctx.registry().entries()) {
        if (!Registry::fits(*e.reducer, w)) continue;
        const std::string name(e.reducer->name());
        times[name] = time_per_call([&] { e.reducer->reduce(q); }, args.repeat);
        if (fastest.empty() || times[name] < times[fastest]) fastest = name;
      }
      const double t_auto = time_per_call([&] { ctx.reduce(q); }, args.repeat);
      const std::string pick(ctx.dispatcher().pick(w).name()), naive(elements_only.pick(w).name());
      const double best = times[fastest];
      md += "| " + std::to_string(length) + " | 2^" + std::to_string(log2n) + " | " + fastest + " | " + pick + " | " +
            fmt("%.2f", t_auto / best) + " | " + naive + " | " + fmt("%.2f", times[naive] / best) + " |\n";
      rows.push_back({{"row_length", length}, {"n", n}, {"fastest", fastest}, {"times_s", times}, {"auto_pick", pick},
                      {"auto_s", t_auto}, {"regret", t_auto / best}, {"by_elements_pick", naive},
                      {"by_elements_regret", times[naive] / best}});
    }
}

}  // namespace

int run_segments(const SuiteArgs& args) {
  namespace xr = xreduce;
  xr::Context& ctx = xr::default_context();
  const std::size_t n = std::size_t{1} << (args.quick ? 18 : 26);
  std::vector<float> data(args.device_only ? 0 : n);  // the host rows' data
  std::mt19937_64 rng(5);
  for (float& v : data) v = static_cast<float>(rng() >> 40) * 0x1p-24f;
  std::vector<float> out(n / 16);
  std::string md = args.device_only  // --device-only: no host rows
                       ? "# Segmented sums\n\nThe device rows alone (`--device-only`).\n"
                       : "# Segmented sums\n\n## Host data, f32, all threads\n\nGB/s, median of " + std::to_string(args.repeat) +
                             "; in brackets, the share of the same backend's flat sum in the same run.\n\n"
                             "| backend | flat, 2^" + std::to_string(static_cast<int>(std::log2(n))) + " | " +
                             std::to_string(n / 16) + " rows of 16 | 16 rows of " + std::to_string(n / 16) +
                             " |\n|---|---:|---:|---:|\n";
  nlohmann::json rows = nlohmann::json::array(), gpu_rows = nlohmann::json::array();
  Progress progress("segments", args.quick ? 2 : 40);
  std::vector<xr::Reducer*> cpu;  // none under --device-only
  if (!args.device_only)
    for (const auto& e : ctx.registry().entries())
      if (const xr::Capabilities c = e.reducer->capabilities(); c.takes(xr::Layout::ragged) && c.engine() != xr::Engine::gpu && e.reducer->available())
        cpu.push_back(e.reducer);
  for (std::size_t k = 0; k < cpu.size(); ++k) {
    xr::Reducer& r = *cpu[k];
    progress.update(0.5 * k / cpu.size(), std::string(r.name()));
    xr::Request q{data.data(), n, xr::DType::f32, xr::Op::sum, xr::Memory::host};
    std::vector<double> raw;
    const double flat = n * 4 / time_per_call([&] { r.reduce(q); }, args.repeat, &raw) / 1e9;
    rows.push_back({{"backend", r.name()}, {"shape", "flat"}, {"n", n}, {"gbps", flat}, {"times_s", raw}});
    md += "| ";
    md += r.name();
    md += " | " + fmt("%.1f", flat) + " |";
    for (std::size_t count : {n / 16, std::size_t{16}}) {
      xr::Request per_row = xr::Request::rows(data.data(), count, n / count, xr::DType::f32, xr::Op::sum);
      per_row.memory = xr::Memory::host;
      per_row.out = out.data();
      const double gbps = n * 4 / time_per_call([&] { r.reduce(per_row); }, args.repeat, &raw) / 1e9;
      md += fmt(" %.1f", gbps) + fmt(" (%.0f%%) |", 100 * gbps / flat);
      rows.push_back({{"backend", r.name()}, {"shape", std::to_string(count) + " rows"}, {"rows", count}, {"n", n},
                      {"gbps", gbps}, {"fraction_of_flat", gbps / flat}, {"times_s", raw}});
    }
    md += "\n";
  }
  nlohmann::json auto_rows = nlohmann::json::array();
  if (!args.device_only) auto_on_segments(args, data, auto_rows, md, progress);
  progress.finish();
  if (run_segments_gpu(args, gpu_rows, md) != 0) md += "\nNo GPU here: no device-resident rows.\n";
  std::fputs(md.c_str(), stdout);
  write_results(args.out_dir, "segments", {{"dtype", "f32"}, {"op", "sum"}, {"repeat", args.repeat}, {"host_rows", rows},
                                           {"auto_rows", auto_rows}, {"device_rows", gpu_rows}}, md);
  return 0;
}

}  // namespace xreduce::bench
