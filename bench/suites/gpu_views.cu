// The device half of the `views` suite: f32 axis reductions of 2^28 device-resident elements in
// the shapes of the N-D targets (a square over axis 0 and 1, (2^20, 256) over axis 1 and 0,
// (1024, 256, 1024) over axis 1 and over axes (0, 2), a transposed square over axis 1), each by the
// kernel cuda.shuffle runs for its layout class (rows: the segments kernels; columns: the records
// kernel and the views kernel side by side; a middle axis and strided views: the views kernels),
// against the read probe over the same bytes, in the same run. torch's and CuPy's times for the
// same shapes come from bench/python/bench_views_torch.py in the same device session. Time per
// call: CUDA-graph replays of 8 back-to-back calls, median. Each result is checked against a
// double sum on the host. The mean and the variance of each shape are timed too, by the same
// kernels (rows: the segments kernels; the rest: the views kernels), and the views kernels' exact
// sums (kernels/exact_views.cuh) of the same data and of wide and random-bit data; then exact f64
// and bf16 views over every distribution of the exact suite against the plain views kernels of
// their type, each result's bits against the CPU's exact sum.

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench_interface.hpp"
#include "gpu.hpp"
#include "gpu/gpu_timing.cuh"
#include "xreduce/backend/features.hpp"
#include "xreduce/exact.hpp"

namespace xc = xreduce::cuda::bench;

namespace xreduce::bench {
namespace {

constexpr auto check = check_cuda;

struct AxisShape {
  std::string name;
  std::vector<std::int64_t> shape;  // of the C-order array
  Axes axes;
  bool transposed = false;  // the array's transpose is reduced over `axes`
};

//! The double sums of a C-order array of `shape` (up to 3 dimensions) over `reduced` (bits of
//! its own axes), in C order of the kept axes.
std::vector<double> host_sums(const std::vector<float>& x, std::vector<std::int64_t> shape, std::uint32_t reduced) {
  while (shape.size() < 3) shape.insert(shape.begin(), 1), reduced <<= 1;
  std::int64_t kept_step[3] = {}, results = 1;
  for (int k = 2; k >= 0; --k)
    if (!((reduced >> k) & 1u)) kept_step[k] = results, results *= shape[k];
  std::vector<double> sums(static_cast<std::size_t>(results), 0.0);
  std::size_t p = 0;
  for (std::int64_t i = 0; i < shape[0]; ++i)
    for (std::int64_t j = 0; j < shape[1]; ++j) {
      const std::int64_t at = i * kept_step[0] + j * kept_step[1];
      for (std::int64_t k = 0; k < shape[2]; ++k) sums[static_cast<std::size_t>(at + k * kept_step[2])] += x[p++];
    }
  return sums;
}

//! Exact sums of T (f64, bf16) of a middle axis and of two outer axes of 2^log2n elements, over
//! each distribution of the exact suite: the time over the plain views kernels' on the same data,
//! and the results whose bits differ from the CPU's ExactSum of their elements.
template <class T, class Time>
void exact_views_by_distribution(const cudaDeviceProp& prop, xc::Kernels& ws, Time&& time, int log2n, nlohmann::json& rows,
                                 std::string& md) {
  constexpr DType kType = dtype_of<T>();
  const std::string type(to_string(kType));
  const std::int64_t n = std::int64_t{1} << log2n, rows_of = 256, width = 1024, batch = n / (rows_of * width);
  T* x = nullptr;
  T* out = nullptr;
  check(cudaMalloc(&x, static_cast<std::size_t>(n) * sizeof(T)), "cudaMalloc data");
  check(cudaMalloc(&out, static_cast<std::size_t>(batch * width) * sizeof(T)), "cudaMalloc results");
  md += "\n## Device-resident: exact " + type + " views by distribution\n\n2^" + std::to_string(log2n) + " " + type + " as (" +
        std::to_string(batch) + ", 256, 1024): cuda.shuffle's exact sums over its plain ones, the same data, the same run.\n\n"
        "| array, axes | layout | distribution | plain us | exact us | exact / plain | results whose bits differ from the CPU's |\n"
        "|---|---|---|---:|---:|---:|---:|\n";
  std::vector<T> host(static_cast<std::size_t>(n)), got;
  std::vector<double> elements;
  const std::int64_t shape[3] = {batch, rows_of, width};
  for (const Axes axes : {Axes{1}, Axes{0, 2}}) {
    const bool middle = axes.contains(1);
    const std::string name = std::string("(") + std::to_string(batch) + ", 256, 1024), " + (middle ? "axis 1" : "axes (0, 2)");
    Request q = Request::over(x, kType, View::of(shape, nullptr, 3), axes);
    q.memory = Memory::device;
    const Request c = canonical(q);
    const auto results = static_cast<std::size_t>(result_count(c));
    got.resize(results);
    for (Spread spread : kSpreads) {
      fill_spread<<<prop.multiProcessorCount * 8, 256>>>(x, static_cast<std::size_t>(n), spread, 31);
      check(cudaDeviceSynchronize(), "fill");
      const auto plain_t = time([&] { ws.enqueue_view(c, out); });
      const auto exact_t = time([&] { ws.enqueue_exact_view(c, out); });
      check(cudaMemcpy(got.data(), out, results * sizeof(T), cudaMemcpyDeviceToHost), "results back");
      check(cudaMemcpy(host.data(), x, host.size() * sizeof(T), cudaMemcpyDeviceToHost), "data back");
      std::size_t differ = 0;
      for (std::size_t o = 0; o < results; ++o) {  // axis 1: result (b, w) of 256 rows; axes (0, 2): row r of every batch
        ExactSum exact;
        auto element = [&](std::int64_t i) {  // exactly (bf16 by the float it widens to)
          const T v = host[static_cast<std::size_t>(i)];
          if constexpr (std::is_same_v<T, double>) return v;
          else return static_cast<double>(static_cast<float>(v));
        };
        if (middle) {
          const std::int64_t b = static_cast<std::int64_t>(o) / width, w = static_cast<std::int64_t>(o) % width;
          elements.resize(rows_of);
          for (std::int64_t r = 0; r < rows_of; ++r) elements[r] = element((b * rows_of + r) * width + w);
        } else {
          elements.resize(static_cast<std::size_t>(batch * width));
          for (std::int64_t b = 0; b < batch; ++b)
            for (std::int64_t w = 0; w < width; ++w) elements[b * width + w] = element((b * rows_of + static_cast<std::int64_t>(o)) * width + w);
        }
        exact.add(elements.data(), elements.size());
        const T want = exact.round<T>();
        differ += std::memcmp(&want, &got[o], sizeof want) != 0;
      }
      const double p = median(plain_t), e = median(exact_t);
      md += "| " + name + " | " + std::string(to_string(layout_of(c))) + " | " + spread_name(spread, sizeof(T) == 8) + " | " +
            fmt("%.1f", p * 1e6) + " | " + fmt("%.1f", e * 1e6) + " | " + fmt("%.2f", e / p) + " | " + std::to_string(differ) + " |\n";
      rows.push_back({{"array", name}, {"dtype", type}, {"layout", to_string(layout_of(c))}, {"kernel", "views, exact"},
                      {"distribution", spread_name(spread, sizeof(T) == 8)}, {"n", n}, {"results", results}, {"plain_median_s", p},
                      {"median_s", e}, {"exact_over_plain", e / p}, {"results_differing_from_cpu_exact", differ},
                      {"plain_times_s", plain_t}, {"times_s", exact_t}});
    }
  }
  cudaFree(x);
  cudaFree(out);
}

}  // namespace

int run_views_gpu(const SuiteArgs& args, nlohmann::json& rows, std::string& md) {
  if (!gpu_info().present) return 2;
  const int log2n = args.max_log2 ? std::min(args.max_log2, 30) : (args.quick ? 20 : 28);
  const std::int64_t n = std::int64_t{1} << log2n, side = std::int64_t{1} << (log2n / 2), batch = n >> 18;
  const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(float);
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  float* x = nullptr;
  float* out = nullptr;
  unsigned* sink = nullptr;
  check(cudaMalloc(&x, bytes), "cudaMalloc data");
  check(cudaMalloc(&out, static_cast<std::size_t>(n / 256 + side) * sizeof(float)), "cudaMalloc results");
  check(cudaMalloc(&sink, sizeof(unsigned)), "cudaMalloc sink");
  fill_uniform<<<prop.multiProcessorCount * 8, 256>>>(x, static_cast<std::size_t>(n), 5);
  // The exact sums also over the exact suite's wide and random-bit data (spreads.hpp), whose
  // results the tests check against MPFR (tests/gpu/views.cpp); here only timed.
  const Spread wide_spreads[] = {Spread::wide, Spread::random_bits};
  float* wide[2] = {};
  for (int k = 0; k < 2; ++k) {
    check(cudaMalloc(&wide[k], bytes), "cudaMalloc wide data");
    fill_spread<<<prop.multiProcessorCount * 8, 256>>>(wide[k], static_cast<std::size_t>(n), wide_spreads[k], 17);
  }
  check(cudaDeviceSynchronize(), "fill");
  std::vector<float> host(static_cast<std::size_t>(n));
  check(cudaMemcpy(host.data(), x, bytes, cudaMemcpyDeviceToHost), "data to the host");
  xc::Kernels ws(device);
  const int calls = 8, reps = std::max(args.repeat, 10);
  auto time = [&](auto&& call) {
    call();  // first call: allocations, outside the graph
    check(cudaStreamSynchronize(ws.stream()), "warm-up");
    return graph_seconds_per_call(ws.stream(), calls, reps, check, [&](int) { call(); });
  };
  const auto probe_t = time([&] {
    read_probe<<<prop.multiProcessorCount * 8, 256, 0, ws.stream()>>>(reinterpret_cast<const uint4*>(x), bytes / 16, sink);
  });
  const double probe = bytes / median(probe_t) / 1e9;
  md += "\n## Device-resident: f32 axis reductions of 2^" + std::to_string(log2n) + " elements\n\n" + std::string(prop.name) +
        ". Read probe over the same bytes: " + fmt("%.1f", median(probe_t) * 1e6) + " us, " + fmt("%.0f", probe) +
        " GB/s. The kernel cuda.shuffle runs for each layout class; for columns, both column kernels. Agreement: the "
        "largest difference from a double sum on the host over all results, in units of 64 eps(f32) sum|x| (1 is the "
        "tolerance).\n\n| array, axes | layout | kernel | median us | GB/s | % of probe | agreement |\n|---|---|---|---:|---:|---:|---:|\n";
  rows.push_back({{"kernel", "read probe"}, {"n", n}, {"median_s", median(probe_t)}, {"gbps", probe}, {"times_s", probe_t}});
  const std::vector<AxisShape> shapes{
      {"(" + std::to_string(side) + ", " + std::to_string(side) + "), axis 0", {side, side}, Axes{0}},
      {"(" + std::to_string(side) + ", " + std::to_string(side) + "), axis 1", {side, side}, Axes{1}},
      {"(" + std::to_string(n / 256) + ", 256), axis 1", {n / 256, 256}, Axes{1}},
      {"(" + std::to_string(n / 256) + ", 256), axis 0", {n / 256, 256}, Axes{0}},
      {"(" + std::to_string(batch) + ", 256, 1024), axis 1", {batch, 256, 1024}, Axes{1}},
      {"(" + std::to_string(batch) + ", 256, 1024), axes (0, 2)", {batch, 256, 1024}, Axes{0, 2}},
      {"transposed (" + std::to_string(side) + ", " + std::to_string(side) + "), axis 1", {side, side}, Axes{1}, true},
  };
  std::string sweep_md;
  for (const AxisShape& s : shapes) {
    View view = View::of(s.shape.data(), nullptr, s.shape.size());
    if (s.transposed) view = view.with_strides({1, s.shape[0]});
    if (s.transposed) std::swap(view.shape[0], view.shape[1]);
    Request q = Request::over(x, DType::f32, view, s.axes);
    q.memory = Memory::device;
    const Request c = canonical(q);
    const Layout layout = layout_of(c);
    const std::size_t results = static_cast<std::size_t>(result_count(c));
    // The array's own axes reduced: a transpose over axis 1 is the array over axis 0.
    const std::vector<double> expected = host_sums(host, s.shape, s.transposed ? 1u : s.axes.bits());
    // `got` empty: a statistic whose values tests/gpu/views.cpp checks, not this suite ("-").
    auto row = [&](const std::string& kernel, const std::vector<double>& t, const std::vector<float>& got) {
      double worst = got.empty() ? std::nan("") : 0;
      for (std::size_t r = 0; r < got.size(); ++r)
        worst = std::max(worst, std::fabs(got[r] - expected[r]) / std::max(64 * 0x1p-23 * expected[r], 1e-30));
      const double m = median(t), gbps = bytes / m / 1e9;
      md += "| " + s.name + " | " + std::string(to_string(layout)) + " | " + kernel + " | " + fmt("%.1f", m * 1e6) + " | " +
            fmt("%.0f", gbps) + " | " + fmt("%.1f%%", 100 * gbps / probe) + " | " + (got.empty() ? "-" : fmt("%.3f", worst)) +
            " |\n";
      rows.push_back({{"array", s.name}, {"layout", to_string(layout)}, {"kernel", kernel}, {"n", n}, {"results", results},
                      {"median_s", m}, {"gbps", gbps}, {"fraction_of_probe", gbps / probe}, {"agreement", worst}, {"times_s", t}});
    };
    std::vector<float> got(results);
    auto fetch = [&] { check(cudaMemcpy(got.data(), out, results * sizeof(float), cudaMemcpyDeviceToHost), "results back"); };
    // Statistics by the same kernels, each result finished on the GPU: the mean (checked as its
    // count times itself against the sums) and the variance (its values: tests/gpu/views.cpp).
    const double count = static_cast<double>(n) / static_cast<double>(results);
    auto statistic_rows = [&](const std::string& kernel, auto&& enqueue) {
      for (Op op : {Op::mean, Op::var}) {
        const auto ts = time([&] { enqueue(op); });
        fetch();
        if (op == Op::mean)
          for (float& g : got) g = static_cast<float>(g * count);
        row(kernel + ", " + std::string(to_string(op)), ts, op == Op::mean ? got : std::vector<float>{});
      }
    };
    if (layout == Layout::inner) {
      auto rows = [&](Op op) {
        ws.enqueue_segments("cuda.shuffle", x, static_cast<std::size_t>(n), DType::f32, op, Segments{results, nullptr}, out);
      };
      const auto t = time([&] { rows(Op::sum); });
      fetch();
      row("rows (segments kernels)", t, got);
      statistic_rows("rows", rows);
      continue;
    }
    if (layout == Layout::outer) {
      const auto t = time([&] { ws.enqueue_records(x, static_cast<std::size_t>(c.view.shape[0]), results, DType::f32, Op::sum); });
      const Result r = ws.collect_records(DType::f32, Op::sum, results);
      for (std::size_t k = 0; k < results; ++k) got[k] = r.values[k].get<float>();
      row("records", t, got);
    }
    const auto t = time([&] { ws.enqueue_view(c, out); });
    fetch();
    row("views", t, got);
    const auto exact_t = time([&] { ws.enqueue_exact_view(c, out); });  // each result rounded once
    fetch();
    row("views, exact", exact_t, got);
    for (int k = 0; k < 2; ++k) {
      Request on_wide = c;
      on_wide.data = wide[k];
      row("views, exact, " + std::string(spread_name(wide_spreads[k], false)), time([&] { ws.enqueue_exact_view(on_wide, out); }), {});
    }
    statistic_rows("views", [&](Op op) {
      Request stat = c;
      stat.op = op;
      ws.enqueue_view(stat, out);
    });
    // The views kernels' run-time tuning (ViewTuning), swept: the data for its defaults.
    for (int tile_x : {32, 64, 128, 256})
      for (int waves : {1, 2, 4}) {
        const auto swept = time([&] { ws.enqueue_view(c, out, tile_x, waves); });
        fetch();
        sweep_md += "| " + s.name + " | " + std::to_string(tile_x) + " | " + std::to_string(waves) + " | " +
                    fmt("%.1f", median(swept) * 1e6) + " | " + fmt("%.1f%%", 100 * bytes / median(swept) / 1e9 / probe) + " |\n";
        rows.push_back({{"array", s.name}, {"layout", to_string(layout)}, {"kernel", "sweep"}, {"max_tile_x", tile_x},
                        {"waves", waves}, {"n", n}, {"median_s", median(swept)}, {"times_s", swept}});
      }
  }
  exact_views_by_distribution<double>(prop, ws, time, log2n - 1, rows, md);
  exact_views_by_distribution<bf16>(prop, ws, time, log2n, rows, md);
  md += "\n### The views kernels' tuning, swept (ViewTuning: the most threads across a row, the blocks aimed at in waves)\n\n"
        "| array, axes | max_tile_x | waves | median us | % of probe |\n|---|---:|---:|---:|---:|\n" + sweep_md;
  cudaFree(x);
  for (float* w : wide) cudaFree(w);
  cudaFree(out);
  cudaFree(sink);
  return 0;
}

}  // namespace xreduce::bench
