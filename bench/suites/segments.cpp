// The `segments` suite of xreduce_bench: segmented f32 sums (Request::segments). On the host,
// every CPU backend on all threads sums 2^26 elements flat, as 2^22 rows of 16 and as 16 rows
// of 2^22, each against its own flat sum in the same run; then (gpu_segments.cu)
// device-resident data against cub::DeviceSegmentedReduce and the read probe.

#include <cmath>
#include <cstdio>
#include <random>

#include "gpu.hpp"
#include "xreduce/registry.hpp"
#include "xreduce/xreduce.hpp"

namespace xreduce::bench {

int run_segments(const SuiteArgs& args) {
  namespace xr = xreduce;
  xr::Context& ctx = xr::default_context();
  const std::size_t n = std::size_t{1} << (args.quick ? 18 : 26);
  std::vector<float> data(n);
  std::mt19937_64 rng(5);
  for (float& v : data) v = static_cast<float>(rng() >> 40) * 0x1p-24f;
  std::vector<float> out(n / 16);
  std::string md = "# Segmented sums\n\n## Host data, f32, all threads\n\nGB/s, median of " + std::to_string(args.repeat) +
                   "; in brackets, the share of the same backend's flat sum in the same run.\n\n"
                   "| backend | flat, 2^" + std::to_string(static_cast<int>(std::log2(n))) + " | " + std::to_string(n / 16) +
                   " rows of 16 | 16 rows of " + std::to_string(n / 16) + " |\n|---|---:|---:|---:|\n";
  nlohmann::json rows = nlohmann::json::array(), gpu_rows = nlohmann::json::array();
  Progress progress("segments", args.quick ? 2 : 40);
  std::vector<xr::Reducer*> cpu;
  for (const auto& e : ctx.registry().entries())
    if (const xr::Capabilities c = e.reducer->capabilities(); c.segments() && c.engine() != xr::Engine::gpu && e.reducer->available())
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
    q.out = out.data();
    for (std::size_t count : {n / 16, std::size_t{16}}) {
      q.segments = xr::Segments::rows(count);
      const double gbps = n * 4 / time_per_call([&] { r.reduce(q); }, args.repeat, &raw) / 1e9;
      md += fmt(" %.1f", gbps) + fmt(" (%.0f%%) |", 100 * gbps / flat);
      rows.push_back({{"backend", r.name()}, {"shape", std::to_string(count) + " rows"}, {"rows", count}, {"n", n},
                      {"gbps", gbps}, {"fraction_of_flat", gbps / flat}, {"times_s", raw}});
    }
    md += "\n";
  }
  progress.finish();
  if (run_segments_gpu(args, gpu_rows, md) != 0) md += "\nNo GPU here: no device-resident rows.\n";
  std::fputs(md.c_str(), stdout);
  write_results(args.out_dir, "segments", {{"dtype", "f32"}, {"op", "sum"}, {"repeat", args.repeat}, {"host_rows", rows},
                                           {"device_rows", gpu_rows}}, md);
  return 0;
}

}  // namespace xreduce::bench
