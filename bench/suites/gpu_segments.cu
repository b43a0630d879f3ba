// The device half of the `segments` suite: per-segment f32 sums of 2^28 device-resident
// elements cut four ways (2^20 rows of 256, 2^14 rows of 2^14, power-law lengths, lengths
// 1..32), by cuda.shuffle's length-binned kernels (plain and exact sums, the exact ones also
// checked bit for bit against the CPU's; the power-law lengths' exact sums also over the exact
// suite's distributions, of f32, f64, f16 and bf16) and by the cub backend, against
// cub::DeviceSegmentedReduce::Sum called directly on an offsets array (the anchor) and the read
// probe over the same bytes, in the same run. Time per call: CUDA-graph replays of 8
// back-to-back calls (the input is 1 GiB, far past the L2), median.

#include <cuda_runtime.h>

#include <cub/device/device_segmented_reduce.cuh>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench_interface.hpp"
#include "gpu.hpp"
#include "gpu/gpu_timing.cuh"
#include "xreduce/exact.hpp"

namespace xc = xreduce::cuda::bench;

namespace xreduce::bench {
namespace {

constexpr auto check = check_cuda;

struct Shape {
  std::string name;
  std::size_t rows = 0;                // > 0: equal rows
  std::vector<std::uint64_t> offsets;  // always filled (the anchor reads offsets)
};

//! Lengths drawn by `draw` until they cover n elements (the last one cut to fit).
template <class Draw>
std::vector<std::uint64_t> offsets_covering(std::size_t n, Draw draw) {
  std::vector<std::uint64_t> off{0};
  while (off.back() < n) off.push_back(std::min<std::uint64_t>(n, off.back() + draw()));
  return off;
}

std::vector<Shape> shapes(std::size_t n) {
  std::vector<Shape> v;
  for (std::size_t row : {std::size_t{256}, std::size_t{1} << 14}) {
    Shape s{std::to_string(n / row) + " rows of " + std::to_string(row), n / row, {}};
    for (std::size_t r = 0; r <= n / row; ++r) s.offsets.push_back(r * row);
    v.push_back(std::move(s));
  }
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  // Pareto, alpha 1.1, from 16 elements, up to 2^24: most segments short, most elements in long ones.
  v.push_back({"power-law lengths (Pareto 1.1, 16 to 2^24)", 0, offsets_covering(n, [&] {
                 return static_cast<std::uint64_t>(std::min(16.0 * std::pow(1.0 - u(rng), -1.0 / 1.1), 16777216.0));
               })});
  v.push_back({"lengths 1..32", 0, offsets_covering(n, [&] { return 1 + rng() % 32; })});
  return v;
}

}  // namespace

int run_segments_gpu(const SuiteArgs& args, nlohmann::json& rows, std::string& md) {
  if (!gpu_info().present) return 2;
  const std::size_t n = std::size_t{1} << (args.max_log2 ? std::min(args.max_log2, 30) : (args.quick ? 20 : 28));
  const std::size_t bytes = n * sizeof(float);
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  float* x = nullptr;
  unsigned* sink = nullptr;
  check(cudaMalloc(&x, bytes), "cudaMalloc data");
  check(cudaMalloc(&sink, sizeof(unsigned)), "cudaMalloc sink");
  fill_uniform<<<prop.multiProcessorCount * 8, 256>>>(x, n, 3);
  check(cudaDeviceSynchronize(), "fill");
  xc::Kernels ws(device);
  const int calls = 8, reps = std::max(args.repeat, 10);
  auto time = [&](auto&& call) {
    call();  // first call: allocations and CUB's temporary storage, outside the graph
    check(cudaStreamSynchronize(ws.stream()), "warm-up");
    return graph_seconds_per_call(ws.stream(), calls, reps, check, [&](int) { call(); });
  };
  const auto probe_t = time([&] {
    read_probe<<<prop.multiProcessorCount * 8, 256, 0, ws.stream()>>>(reinterpret_cast<const uint4*>(x), bytes / 16, sink);
  });
  const double probe = bytes / median(probe_t) / 1e9;
  md += "\n## Device-resident: per-segment f32 sums of 2^" + std::to_string(static_cast<int>(std::log2(n))) + " elements\n\n" +
        std::string(prop.name) + ". Read probe over the same bytes: " + fmt("%.1f", median(probe_t) * 1e6) + " us, " +
        fmt("%.0f", probe) + " GB/s. Anchor: cub::DeviceSegmentedReduce::Sum on an offsets array. Agreement: the "
        "largest difference from the anchor over all segments, in units of 64 eps(f32) sum|x| (1 is the tolerance).\n\n"
        "| segments | backend | median us | GB/s | % of probe | time / anchor | agreement |\n|---|---|---:|---:|---:|---:|---:|\n";
  rows.push_back({{"backend", "read probe"}, {"n", n}, {"median_s", median(probe_t)}, {"gbps", probe}, {"times_s", probe_t}});
  std::string exact_bits;  // per shape: the exact sums' segments whose bits differ from the CPU's
  std::vector<float> host;  // the data, for the CPU's exact sums
  std::string spreads_md;   // the exact power-law sums by distribution, after the table
  for (const Shape& shape : shapes(n)) {
    const std::size_t count = shape.offsets.size() - 1;
    std::uint64_t* offsets = nullptr;
    float *anchor_out = nullptr, *out = nullptr;
    check(cudaMalloc(&offsets, shape.offsets.size() * 8), "cudaMalloc offsets");
    check(cudaMemcpy(offsets, shape.offsets.data(), shape.offsets.size() * 8, cudaMemcpyHostToDevice), "offsets");
    check(cudaMalloc(&anchor_out, count * sizeof(float)), "cudaMalloc out");
    check(cudaMalloc(&out, count * sizeof(float)), "cudaMalloc out");
    std::size_t temp_bytes = 0;
    check(cub::DeviceSegmentedReduce::Sum(nullptr, temp_bytes, x, anchor_out, static_cast<std::int64_t>(count), offsets, offsets + 1, ws.stream()), "cub");
    void* temp = nullptr;
    check(cudaMalloc(&temp, temp_bytes + 16), "cudaMalloc cub temp");
    const auto anchor_t = time([&] {
      check(cub::DeviceSegmentedReduce::Sum(temp, temp_bytes, x, anchor_out, static_cast<std::int64_t>(count), offsets, offsets + 1, ws.stream()), "cub");
    });
    std::vector<float> anchor(count), mine(count);
    check(cudaMemcpy(anchor.data(), anchor_out, count * sizeof(float), cudaMemcpyDeviceToHost), "anchor back");
    std::vector<double> abs_sum(count);  // every value is in [0, 1): sum|x| is the sum
    for (std::size_t s = 0; s < count; ++s) abs_sum[s] = anchor[s];
    const double anchor_m = median(anchor_t);
    auto row = [&](const std::string& backend, const std::vector<double>& t, double agreement) {
      const double m = median(t), gbps = bytes / m / 1e9;
      md += "| " + shape.name + " | " + backend + " | " + fmt("%.1f", m * 1e6) + " | " + fmt("%.0f", gbps) + " | " +
            fmt("%.1f%%", 100 * gbps / probe) + " | " + fmt("%.3f", m / anchor_m) + " | " +
            (agreement < 0 ? std::string() : fmt("%.3f", agreement)) + " |\n";
      rows.push_back({{"segments", shape.name}, {"count", count}, {"backend", backend}, {"n", n}, {"median_s", m},
                      {"gbps", gbps}, {"fraction_of_probe", gbps / probe}, {"time_over_anchor", m / anchor_m},
                      {"agreement", agreement}, {"times_s", t}});
    };
    row("cub::DeviceSegmentedReduce::Sum (anchor)", anchor_t, -1);
    const Segments segments = shape.rows ? Segments{shape.rows, nullptr} : Segments::at(offsets, count);
    const std::string layout = shape.rows ? ", equal rows" : ", offsets";
    // The results in `out`, back in `mine`: their largest difference from the anchor's.
    auto agreement = [&] {
      check(cudaMemcpy(mine.data(), out, count * sizeof(float), cudaMemcpyDeviceToHost), "results back");
      double worst = 0;
      for (std::size_t s = 0; s < count; ++s)
        worst = std::max(worst, std::fabs(double(mine[s]) - anchor[s]) / std::max(64 * 0x1p-23 * abs_sum[s], 1e-30));
      return worst;
    };
    // The segments of `data` (x's values, on the host) whose exact sums in `got` differ from the
    // CPU's (ExactSum, rounded once).
    auto differing_from_cpu = [&](const auto& data, const auto& got) {
      using T = typename std::decay_t<decltype(data)>::value_type;
      std::size_t differ = 0;
      for (std::size_t s = 0; s < count; ++s) {
        const std::size_t a = shape.rows ? s * (n / shape.rows) : shape.offsets[s];
        const std::size_t e = shape.rows ? a + n / shape.rows : shape.offsets[s + 1];
        ExactSum exact;
        exact.add(data.data() + a, e - a);
        const T want = exact.round<T>();
        differ += std::memcmp(&want, &got[s], sizeof want) != 0;
      }
      return differ;
    };
    for (const char* backend : {"cuda.shuffle", "cub"}) {
      const auto t = time([&] { ws.enqueue_segments(backend, x, n, DType::f32, Op::sum, segments, out); });
      row(backend + layout, t, agreement());
    }
    // Exact sums (Accuracy::exact) by cuda.shuffle's segment kernels: their time against the
    // anchor's and cuda.shuffle's plain sum above, and each segment's bits against the CPU's.
    {
      const auto t = time([&] { ws.enqueue_exact_segments(x, n, DType::f32, segments, out); });
      row("cuda.shuffle exact" + layout, t, agreement());
      if (host.empty()) {  // every shape reads the same uniform data
        host.resize(n);
        check(cudaMemcpy(host.data(), x, bytes, cudaMemcpyDeviceToHost), "data back");
      }
      const std::size_t differ = differing_from_cpu(host, mine);
      rows.back()["segments_differing_from_cpu_exact"] = differ;
      exact_bits += "- " + shape.name + ": " + std::to_string(differ) + " of " + std::to_string(count) + "\n";
      // The power-law segments over the exact suite's distributions (an exact sum's cost may
      // depend on the data, a plain one's does not), of f32, f64, f16 and bf16 (the same offsets over
      // the first n elements): exact over plain cuda.shuffle, the bits checked as above; then the
      // uniform data back for the shapes after.
      if (!shape.rows && shape.name.rfind("power-law", 0) == 0) {
        spreads_md = "\n## Exact power-law segment sums by distribution\n\n" + shape.name + ", " + std::to_string(count) +
                     " segments of 2^" + std::to_string(static_cast<int>(std::log2(n))) +
                     " elements: cuda.shuffle's exact sums over its plain ones, the same data, the same run.\n\n"
                     "| type | distribution | plain us | exact us | exact / plain | segments whose bits differ from the CPU's |\n"
                     "|---|---|---:|---:|---:|---:|\n";
        auto spreads_of = [&](auto tag) {
          using T = decltype(tag);
          constexpr DType kType = dtype_of<T>();
          T* data = reinterpret_cast<T*>(x);  // n elements of T fit x's n floats; f64 takes buffers of its own
          T* results = reinterpret_cast<T*>(out);
          if constexpr (sizeof(T) > sizeof(float)) {
            check(cudaMalloc(&data, n * sizeof(T)), "cudaMalloc f64 data");
            check(cudaMalloc(&results, count * sizeof(T)), "cudaMalloc f64 results");
          }
          std::vector<T> spread_host(n), got(count);
          for (Spread spread : kSpreads) {
            fill_spread<<<prop.multiProcessorCount * 8, 256>>>(data, n, spread, 29);
            check(cudaDeviceSynchronize(), "fill");
            const auto plain_t = time([&] { ws.enqueue_segments("cuda.shuffle", data, n, kType, Op::sum, segments, results); });
            const auto exact_t = time([&] { ws.enqueue_exact_segments(data, n, kType, segments, results); });
            check(cudaMemcpy(got.data(), results, count * sizeof(T), cudaMemcpyDeviceToHost), "results back");
            check(cudaMemcpy(spread_host.data(), data, n * sizeof(T), cudaMemcpyDeviceToHost), "data back");
            const std::size_t wrong = differing_from_cpu(spread_host, got);
            const double p = median(plain_t), e = median(exact_t);
            spreads_md += "| " + std::string(to_string(kType)) + " | " + spread_name(spread, kType == DType::f64) + " | " + fmt("%.1f", p * 1e6) +
                          " | " + fmt("%.1f", e * 1e6) + " | " + fmt("%.2f", e / p) + " | " + std::to_string(wrong) + " |\n";
            rows.push_back({{"segments", shape.name}, {"dtype", std::string(to_string(kType))}, {"distribution", spread_name(spread, kType == DType::f64)},
                            {"n", n}, {"plain_median_s", p}, {"exact_median_s", e}, {"exact_over_plain", e / p},
                            {"segments_differing_from_cpu_exact", wrong}, {"plain_times_s", plain_t}, {"exact_times_s", exact_t}});
          }
          if constexpr (sizeof(T) > sizeof(float)) cudaFree(data), cudaFree(results);
        };
        spreads_of(float{});
        spreads_of(double{});
        spreads_of(f16{});
        spreads_of(bf16{});
        fill_uniform<<<prop.multiProcessorCount * 8, 256>>>(x, n, 3);
        check(cudaDeviceSynchronize(), "fill");
      }
    }
    cudaFree(temp);
    cudaFree(offsets);
    cudaFree(anchor_out);
    cudaFree(out);
  }
  md += "\nExact sums (`cuda.shuffle exact`): the segments whose bits differ from the CPU's exact sum of the same "
        "segment (ExactSum, rounded once), of all:\n\n" + exact_bits + spreads_md;
  cudaFree(x);
  cudaFree(sink);
  return 0;
}

}  // namespace xreduce::bench
