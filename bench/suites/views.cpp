// The `views` suite of xreduce_bench: N-D views read in place against the copy a caller would
// otherwise make. For each layout class (rows, columns, a middle axis, a transpose, two axes of a
// cube, a reversed array), every CPU backend that does views reduces the view of 2^24 f32 in place;
// beside it, in the same run, the same reduction as a gather into contiguous memory (the reduced
// axes last, on all threads) followed by the backend's own reduction of its rows, which is what
// `numpy.ascontiguousarray` and a row reduction cost. The ratio in place / (copy + reduce) is the
// claim: at most 1.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <thread>
#include <vector>

#include "gpu.hpp"
#include "report.hpp"
#include "xreduce/backend/features.hpp"
#include "xreduce/backend/registry.hpp"
#include "xreduce/xreduce.hpp"

namespace xreduce::bench {
namespace {

struct ViewShape {
  std::string name;
  std::vector<std::int64_t> shape, strides;  // strides in elements, over one buffer
  std::int64_t first = 0;                    // element (0, ..., 0)
  Axes axes;
};

//! The elements of view `v` gathered into `out` in C order of its kept axes, then its reduced ones:
//! each result's elements in a row of their own. Threads split the rows.
void gather(const float* base, const ViewShape& v, float* out, std::size_t rows, std::size_t length) {
  std::vector<std::size_t> kept, reduced;
  for (std::size_t k = 0; k < v.shape.size(); ++k) (v.axes.contains(k) ? reduced : kept).push_back(k);
  auto offset_of = [&](const std::vector<std::size_t>& dims, std::size_t i) {
    std::int64_t o = 0;
    for (std::size_t k = dims.size(); k-- > 0;) {
      const auto e = static_cast<std::size_t>(v.shape[dims[k]]);
      o += static_cast<std::int64_t>(i % e) * v.strides[dims[k]];
      i /= e;
    }
    return o;
  };
  const std::vector<std::size_t> outer_reduced(reduced.begin(), reduced.end() - 1);
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (std::size_t r = t; r < rows; r += threads) {
        const float* row = base + v.first + offset_of(kept, r);
        float* to = out + r * length;
        // The innermost reduced axis walked directly; the others through their offsets.
        const std::size_t inner = static_cast<std::size_t>(v.shape[reduced.back()]);
        const std::int64_t step = v.strides[reduced.back()];
        for (std::size_t o = 0; o < length / inner; ++o) {
          const float* from = row + offset_of(outer_reduced, o);
          for (std::size_t i = 0; i < inner; ++i) to[o * inner + i] = from[static_cast<std::int64_t>(i) * step];
        }
      }
    });
  for (auto& th : pool) th.join();
}

//! The N-D targets' shapes at 2^26 f32 (2^18 under --quick) on every CPU backend that does views,
//! all threads, as GB/s and a share of the all-threads read probe over the same bytes, in the
//! same run: (2^13, 2^13) over axis 0 and 1, (2^18, 256) over axis 1 and 0, (256, 256, 1024) over
//! axis 1 and axes (0, 2), a transposed (2^13, 2^13) over axis 1. numpy's and torch's times for
//! the same shapes come from bench/python/bench_views_cpu.py in the same session.
void target_shapes_on_cpu(const SuiteArgs& args, const std::vector<Reducer*>& cpu, nlohmann::json& rows, std::string& md) {
  const int log2n = args.quick ? 18 : 26;
  const std::int64_t n = std::int64_t{1} << log2n, side = std::int64_t{1} << (log2n / 2), batch = n >> 18;
  const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(float);
  std::vector<float> data(static_cast<std::size_t>(n));
  std::mt19937_64 rng(11);
  for (float& v : data) v = static_cast<float>(rng() >> 40) * 0x1p-24f;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  Workload user_code;
  user_code.user_code = true;
  Reducer* pool = default_context().registry().best(Engine::cpu_parallel, user_code);
  volatile std::uint64_t sink = 0;
  const double probe = bytes / time_per_call([&] { sink = sink + read_probe(data.data(), bytes, cores, pool); }, args.repeat) / 1e9;
  const std::string s = std::to_string(side);
  const std::vector<ViewShape> shapes{
      {"(" + s + ", " + s + "), axis 0", {side, side}, {side, 1}, 0, Axes{0}},
      {"(" + s + ", " + s + "), axis 1", {side, side}, {side, 1}, 0, Axes{1}},
      {"(" + std::to_string(n / 256) + ", 256), axis 1", {n / 256, 256}, {256, 1}, 0, Axes{1}},
      {"(" + std::to_string(n / 256) + ", 256), axis 0", {n / 256, 256}, {256, 1}, 0, Axes{0}},
      {"(" + std::to_string(batch) + ", 256, 1024), axis 1", {batch, 256, 1024}, {256 * 1024, 1024, 1}, 0, Axes{1}},
      {"(" + std::to_string(batch) + ", 256, 1024), axes (0, 2)", {batch, 256, 1024}, {256 * 1024, 1024, 1}, 0, Axes{0, 2}},
      {"transposed (" + s + ", " + s + "), axis 1", {side, side}, {1, side}, 0, Axes{1}},
  };
  md += "\n## The N-D targets' shapes on the CPU\n\nf32, 2^" + std::to_string(log2n) + " elements, all " + std::to_string(cores) +
        " threads, median of " + std::to_string(args.repeat) + " calls; the all-threads read probe over the same bytes: " +
        fmt("%.1f", probe) + " GB/s. numpy and torch: views-cpu-numpy-torch.md from the same session.\n\n"
        "| array, axes | layout | backend | us | GB/s | % of probe |\n|---|---|---|---:|---:|---:|\n";
  rows.push_back({{"target", "read probe"}, {"threads", cores}, {"gbps", probe}, {"n", n}});
  for (const ViewShape& v : shapes) {
    Request q = Request::over(data.data(), DType::f32, View::of(v.shape.data(), v.strides.data(), v.shape.size()), v.axes);
    q.memory = Memory::host;
    const Request c = canonical(q);
    std::vector<float> out(static_cast<std::size_t>(result_count(c)));
    q.out = out.data();
    for (Reducer* r : cpu) {
      if (r->capabilities().engine() != Engine::cpu_parallel) continue;  // all threads: the parallel backends
      std::vector<double> raw;
      const double t = time_per_call([&] { r->reduce(q); }, args.repeat, &raw), gbps = bytes / t / 1e9;
      md += "| " + v.name + " | " + std::string(to_string(layout_of(c))) + " | " + std::string(r->name()) + " | " +
            fmt("%.1f", t * 1e6) + " | " + fmt("%.1f", gbps) + " | " + fmt("%.1f%%", 100 * gbps / probe) + " |\n";
      rows.push_back({{"target", v.name}, {"layout", to_string(layout_of(c))}, {"backend", r->name()}, {"n", n}, {"median_s", t},
                      {"gbps", gbps}, {"fraction_of_probe", gbps / probe}, {"times_s", raw}});
    }
  }
}

}  // namespace

int run_views(const SuiteArgs& args) {
  namespace xr = xreduce;
  xr::Context& ctx = xr::default_context();
  const int log2n = args.quick ? 16 : 24;
  const std::int64_t n = std::int64_t{1} << log2n, side = std::int64_t{1} << (log2n / 2), cube = std::int64_t{1} << (log2n / 3);
  std::vector<float> data(static_cast<std::size_t>(n));
  std::mt19937_64 rng(7);
  for (float& v : data) v = static_cast<float>(rng() >> 40) * 0x1p-24f;
  const std::vector<ViewShape> shapes{
      {"rows (" + std::to_string(side) + " x " + std::to_string(side) + "), axis 1", {side, side}, {side, 1}, 0, Axes{1}},
      {"columns, axis 0", {side, side}, {side, 1}, 0, Axes{0}},
      {"middle axis (64, " + std::to_string(n / 64 / 256) + ", 256), axis 1", {64, n / 64 / 256, 256}, {n / 64, 256, 1}, 0, Axes{1}},
      {"transposed rows, axis 1", {side, side}, {1, side}, 0, Axes{1}},
      {"cube (" + std::to_string(cube) + "^3), axes 0 and 2", {cube, cube, cube}, {cube * cube, cube, 1}, 0, Axes{0, 2}},
      {"reversed rows, axis 1", {side, side}, {side, -1}, side - 1, Axes{1}},
  };
  std::string md = "# N-D views read in place\n\nf32, 2^" + std::to_string(log2n) +
                   " elements, all threads, median of " + std::to_string(args.repeat) +
                   " calls. In place: the view reduced as it lies. Copy + reduce: the same elements gathered into "
                   "contiguous rows (all threads), then that backend's row reduction, in the same run. Ratio: in place "
                   "over copy + reduce.\n\n| view | layout | backend | in place, us | GB/s | copy + reduce, us | ratio |\n"
                   "|---|---|---|---:|---:|---:|---:|\n";
  nlohmann::json rows = nlohmann::json::array();
  std::vector<xr::Reducer*> cpu;
  for (const auto& e : ctx.registry().entries())
    if (const xr::Capabilities c = e.reducer->capabilities();
        c.takes(xr::Layout::strided) && c.engine() != xr::Engine::gpu && e.reducer->available())
      cpu.push_back(e.reducer);
  Progress progress("views", args.quick ? 2 : 60);
  std::vector<float> copy(static_cast<std::size_t>(args.device_only ? 0 : n));
  std::size_t done = 0;
  for (const ViewShape& v : args.device_only ? std::vector<ViewShape>{} : shapes) {
    const xr::View view = xr::View::of(v.shape.data(), v.strides.data(), v.shape.size());
    xr::Request q = xr::Request::over(data.data() + v.first, xr::DType::f32, view, v.axes);
    q.memory = xr::Memory::host;
    const xr::Request c = xr::canonical(q);
    const std::size_t results = static_cast<std::size_t>(xr::result_count(c)), length = static_cast<std::size_t>(n) / results;
    std::vector<float> out(results);
    q.out = out.data();
    for (xr::Reducer* r : cpu) {
      progress.update(static_cast<double>(done++) / (shapes.size() * cpu.size()), v.name + ", " + std::string(r->name()));
      std::vector<double> raw, raw_copy;
      const double in_place = time_per_call([&] { r->reduce(q); }, args.repeat, &raw);
      xr::Request contiguous = xr::Request::rows(copy.data(), results, length, xr::DType::f32, xr::Op::sum);
      contiguous.memory = xr::Memory::host;
      contiguous.out = out.data();
      const double copied = time_per_call([&] {
        gather(data.data(), v, copy.data(), results, length);
        r->reduce(contiguous);
      }, args.repeat, &raw_copy);
      const double gbps = static_cast<double>(n) * 4 / in_place / 1e9;
      md += "| " + v.name + " | " + std::string(xr::to_string(xr::layout_of(c))) + " | " + std::string(r->name()) + " | " +
            fmt("%.1f", in_place * 1e6) + " | " + fmt("%.1f", gbps) + " | " + fmt("%.1f", copied * 1e6) + " | " +
            fmt("%.2f", in_place / copied) + " |\n";
      rows.push_back({{"view", v.name}, {"layout", xr::to_string(xr::layout_of(c))}, {"backend", r->name()}, {"n", n},
                      {"median_s", in_place}, {"gbps", gbps}, {"copy_and_reduce_s", copied}, {"ratio", in_place / copied},
                      {"times_s", raw}, {"copy_times_s", raw_copy}});
    }
  }
  progress.finish();
  if (!args.device_only) target_shapes_on_cpu(args, cpu, rows, md);
  nlohmann::json gpu_rows = nlohmann::json::array();
  std::string gpu_md;
  if (run_views_gpu(args, gpu_rows, gpu_md) != 0) gpu_md = "\nNo GPU here: no device-resident rows.\n";
  md += gpu_md;
  std::fputs(md.c_str(), stdout);
  write_results(args.out_dir, "views", {{"dtype", "f32"}, {"repeat", args.repeat}, {"rows", rows}, {"device_rows", gpu_rows}}, md);
  return 0;
}

}  // namespace xreduce::bench
