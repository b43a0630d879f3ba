// The `dtypes` suite of xreduce_bench: sums of every element type over the same bytes. On the
// host, 1 GiB of each type: `sequential` against the one-thread read probe and the CPU-parallel
// backends against the all-threads probe, in the same run; then (gpu_dtypes.cu) 2^30 device-resident
// elements of each type.

#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <thread>

#include "gpu.hpp"
#include "xreduce/backend/registry.hpp"
#include "xreduce/xreduce.hpp"

namespace xreduce::bench {

namespace {

//! `bytes` of elements of `dtype` at random: floats in [0, 1) (f16, bf16: their bit patterns
//! below 1.0), integers over their range, bools 0 or 1.
std::vector<std::uint64_t> random_elements(DType dtype, std::size_t bytes, std::uint64_t seed) {
  std::vector<std::uint64_t> words(bytes / 8);  // 8-byte aligned storage for any type
  std::mt19937_64 rng(seed);
  auto* b = reinterpret_cast<unsigned char*>(words.data());
  if (dtype == DType::f32) {
    for (std::size_t i = 0; i < bytes / 4; ++i) {
      const float v = static_cast<float>(rng() >> 40) * 0x1p-24f;
      std::memcpy(b + 4 * i, &v, 4);
    }
    return words;
  }
  for (std::uint64_t& w : words) w = rng();
  switch (dtype) {
    case DType::f16:
    case DType::bf16: {
      const std::uint16_t mask = dtype == DType::f16 ? 0x3bff : 0x3f7f;  // below 1.0
      for (std::size_t i = 0; i < bytes / 2; ++i) {
        std::uint16_t h;
        std::memcpy(&h, b + 2 * i, 2);
        h &= mask;
        std::memcpy(b + 2 * i, &h, 2);
      }
      break;
    }
    case DType::boolean:
      for (std::size_t i = 0; i < bytes; ++i) b[i] &= 1;
      break;
    default: break;
  }
  return words;
}

}  // namespace

int run_dtypes(const SuiteArgs& args) {
  namespace xr = xreduce;
  xr::Context& ctx = xr::default_context();
  const std::size_t bytes = std::size_t{1} << (args.quick ? 22 : 30);
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  std::vector<xr::Reducer*> parallel;
  for (const char* name : {"openmp", "tbb"})
    if (xr::Reducer* r = ctx.registry().find(name); r && r->available()) parallel.push_back(r);
  std::string md = "# Every element type: sums over the same bytes\n\n## Host data, " + std::to_string(bytes >> 20) +
                   " MiB of each type\n\nGB/s of the bytes read, median of " + std::to_string(args.repeat) +
                   "; each backend beside the read probe over the same bytes on the same threads (the calling thread for "
                   "`sequential`, all " + std::to_string(cores) +
                   " of the backend's own for the others), the two taking turns; in brackets, the backend's share of "
                   "that probe.\n\n| type | probe, 1 thread | sequential |";
  for (xr::Reducer* r : parallel) md += " probe, " + std::string(r->name()) + "'s threads | " + std::string(r->name()) + " |";
  md += "\n|---|---:|---:|";
  for (std::size_t k = 0; k < parallel.size(); ++k) md += "---:|---:|";
  md += "\n";
  nlohmann::json rows = nlohmann::json::array(), gpu_rows = nlohmann::json::array();
  const DType types[] = {DType::f32, DType::f16, DType::bf16, DType::i8, DType::u8, DType::i16, DType::u16, DType::boolean};
  const std::size_t host_types = args.device_only ? 0 : std::size(types);  // --device-only: no host rows
  if (host_types == 0) md = "# Every element type: sums over the same bytes\n\nThe device rows alone (`--device-only`).\n";
  Progress progress("dtypes", args.quick || host_types == 0 ? 2 : host_types * (2.0 + 0.1 * args.repeat * (2 + parallel.size())));
  for (std::size_t k = 0; k < host_types; ++k) {
    const DType dtype = types[k];
    const std::string type(to_string(dtype));
    progress.update(0.8 * k / std::size(types), type);
    const std::vector<std::uint64_t> data = random_elements(dtype, bytes, 21 + k);
    const std::size_t n = bytes / size_of(dtype);
    volatile std::uint64_t sink = 0;
    const xr::Request q{data.data(), n, dtype, xr::Op::sum, xr::Memory::host};
    // Each backend and the read probe on its own threads take turns (timing.hpp): their ratio
    // is the figure, and a shared host's drift between two runs one after the other would be in
    // it. Pairs, not one round of every backend: a round that runs openmp's threads and then
    // tbb's gives tbb cores that openmp's threads still spin on (tbb read at 65-74% of the probe
    // so on the H200 host, against 92-108% in pairs: bench/results/nvidia-h200/dtypes.md).
    // `sequential` on the calling thread, the others on all of theirs.
    auto pair = [&](xr::Reducer& r, bool one_thread) {
      const std::size_t threads = one_thread ? 1 : cores;
      const std::vector<std::function<void()>> calls{
          [&] { sink = sink + read_probe(data.data(), bytes, threads, one_thread ? nullptr : &r); },
          [&] {
            xr::Options o;
            o.threads = one_thread ? 1 : 0;
            r.reduce(q, o);
          }};
      std::vector<std::vector<double>> raw;
      const std::vector<double> t = xr::timing::seconds_per_call_in_turns(calls, args.repeat, 1e-3, &raw);
      const double probe = bytes / t[0] / 1e9, gbps = bytes / t[1] / 1e9;
      rows.push_back({{"dtype", type}, {"what", "read probe"}, {"threads", threads}, {"on", r.name()}, {"gbps", probe}, {"times_s", raw[0]}});
      rows.push_back({{"dtype", type}, {"what", "sum"}, {"backend", r.name()}, {"threads", threads}, {"n", n}, {"median_s", t[1]},
                      {"gbps", gbps}, {"probe_gbps", probe}, {"fraction_of_probe", gbps / probe}, {"times_s", raw[1]}});
      md += " " + fmt("%.1f", probe) + " | " + fmt("%.1f", gbps) + " (" + fmt("%.0f%%", 100 * gbps / probe) + ") |";
    };
    md += "| " + type + " |";
    pair(ctx.registry().get("sequential"), true);
    for (xr::Reducer* r : parallel) pair(*r, false);
    md += "\n";
  }
  progress.finish();
  if (run_dtypes_gpu(args, gpu_rows, md) != 0) md += "\nNo GPU here: no device-resident rows.\n";
  std::fputs(md.c_str(), stdout);
  write_results(args.out_dir, "dtypes", {{"repeat", args.repeat}, {"host_rows", rows}, {"device_rows", gpu_rows}}, md);
  return 0;
}

}  // namespace xreduce::bench
