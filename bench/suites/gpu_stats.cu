// The device half of the `stats` suite: 2^28 device-resident f32 through cuda.shuffle, a plain
// sum against the four calls of sum, min, max and argmax one after another and against the same
// four in one pass (StatsOp), and mean, std, min and max likewise (StatsMomentsOp), with CUB's sum and the read probe over the same bytes in the same
// run; then per-row sums against per-row stats of 2^20 rows of 256. Time per call: CUDA-graph
// replays of 8 back-to-back calls (the input is 1 GiB, far past the L2), median. The one pass's
// results are checked against the four calls' (the extremes and index the same, the sum within
// the tolerance).

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_interface.hpp"
#include "gpu.hpp"
#include "gpu/gpu_timing.cuh"

namespace xc = xreduce::cuda::bench;

namespace xreduce::bench {

int run_stats_gpu(const SuiteArgs& args, nlohmann::json& rows, std::string& md) {
  if (!gpu_info().present) return 2;
  constexpr auto check = check_cuda;
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
    call();
    check(cudaStreamSynchronize(ws.stream()), "warm-up");
    return graph_seconds_per_call(ws.stream(), calls, reps, check, [&](int) { call(); });
  };
  const auto probe_t = time([&] {
    read_probe<<<prop.multiProcessorCount * 8, 256, 0, ws.stream()>>>(reinterpret_cast<const uint4*>(x), bytes / 16, sink);
  });
  const double probe = bytes / median(probe_t) / 1e9;
  const auto sum_t = time([&] { ws.enqueue("cuda.shuffle", x, n, DType::f32, Op::sum); });
  const double sum_m = median(sum_t);
  md += "\n## Device-resident: 2^" + std::to_string(static_cast<int>(std::log2(n))) + " f32, cuda.shuffle\n\n" +
        std::string(prop.name) + ". Read probe over the same bytes: " + fmt("%.1f", median(probe_t) * 1e6) + " us, " +
        fmt("%.0f", probe) + " GB/s.\n\n| what | median us | GB/s | % of probe | time / plain sum |\n|---|---:|---:|---:|---:|\n";
  // `base`: the plain sum's time this row is a multiple of.
  auto row = [&](const std::string& what, const std::vector<double>& t, double base) {
    const double m = median(t), gbps = bytes / m / 1e9;
    md += "| " + what + " | " + fmt("%.1f", m * 1e6) + " | " + fmt("%.0f", gbps) + " | " + fmt("%.1f%%", 100 * gbps / probe) +
          " | " + fmt("%.2f", m / base) + " |\n";
    rows.push_back({{"what", what}, {"n", n}, {"median_s", m}, {"gbps", gbps}, {"fraction_of_probe", gbps / probe},
                    {"over_sum", m / base}, {"times_s", t}});
  };
  row("read probe", probe_t, sum_m);
  row("sum (cuda.shuffle)", sum_t, sum_m);
  row("sum (cub)", time([&] { ws.enqueue("cub", x, n, DType::f32, Op::sum); }), sum_m);
  const Op four[] = {Op::sum, Op::min, Op::max, Op::argmax};
  row("sum, min, max, argmax: four calls", time([&] {
        for (Op op : four) ws.enqueue("cuda.shuffle", x, n, DType::f32, op);
      }), sum_m);
  row("sum, min, max, argmax (all six): one pass", time([&] { ws.enqueue_stats(x, n, DType::f32); }), sum_m);
  const OpSet moments_ops{Op::mean, Op::std, Op::min, Op::max};
  row("mean, std, min, max: four calls", time([&] {
        ws.enqueue_statistic(x, n, DType::f32, Op::mean);
        ws.enqueue_statistic(x, n, DType::f32, Op::std);
        ws.enqueue("cuda.shuffle", x, n, DType::f32, Op::min);
        ws.enqueue("cuda.shuffle", x, n, DType::f32, Op::max);
      }), sum_m);
  row("mean, std, min, max: one pass", time([&] { ws.enqueue_stats(x, n, DType::f32, moments_ops); }), sum_m);

  // The one pass against the four calls.
  const OpSet ops{Op::sum, Op::min, Op::max, Op::argmax};
  float sum = 0, lo = 0, hi = 0, hi_value = 0;
  std::uint64_t hi_index = 0;
  OpsOut out;
  out.values[static_cast<int>(Op::sum)] = &sum;
  out.values[static_cast<int>(Op::min)] = &lo;
  out.values[static_cast<int>(Op::max)] = &hi;
  out.values[static_cast<int>(Op::argmax)] = &hi_value;
  out.indices[static_cast<int>(Op::argmax)] = &hi_index;
  ws.enqueue_stats(x, n, DType::f32);
  ws.collect_stats(DType::f32, ops, out);
  Result alone[4];
  for (int k = 0; k < 4; ++k) {
    ws.enqueue("cuda.shuffle", x, n, DType::f32, four[k]);
    alone[k] = ws.collect(DType::f32, four[k]);
  }
  const double sum_alone = alone[0].value.get<float>();
  const bool same = std::fabs(sum - sum_alone) <= 2 * 64 * 0x1p-23 * sum_alone && lo == alone[1].value.get<float>() &&
                    hi == alone[2].value.get<float>() && hi_value == alone[3].value.get<float>() && hi_index == alone[3].index;
  md += std::string("\nThe one pass agrees with the four calls: ") + (same ? "yes" : "NO") + " (sum " + fmt("%.9g", sum) +
        " against " + fmt("%.9g", sum_alone) + ", argmax index " + std::to_string(hi_index) + ").\n";
  rows.push_back({{"what", "agreement"}, {"agrees", same}});

  // mean and std among several against each alone: within twice their stated bounds (f32
  // results, so a few units of the last place).
  float mean = 0, deviation = 0, lo2 = 0, hi2 = 0;
  OpsOut moments_out;
  moments_out.values[static_cast<int>(Op::mean)] = &mean;
  moments_out.values[static_cast<int>(Op::std)] = &deviation;
  moments_out.values[static_cast<int>(Op::min)] = &lo2;
  moments_out.values[static_cast<int>(Op::max)] = &hi2;
  ws.enqueue_stats(x, n, DType::f32, moments_ops);
  ws.collect_stats(DType::f32, moments_ops, moments_out);
  ws.enqueue_statistic(x, n, DType::f32, Op::mean);
  const float mean_alone = ws.collect_statistic(n, DType::f32, Op::mean).value.get<float>();
  ws.enqueue_statistic(x, n, DType::f32, Op::std);
  const float std_alone = ws.collect_statistic(n, DType::f32, Op::std).value.get<float>();
  const bool moments_same = std::fabs(mean - mean_alone) <= 4 * 0x1p-23 * std::fabs(mean_alone) &&
                            std::fabs(deviation - std_alone) <= 4 * 0x1p-23 * std_alone && lo2 == lo && hi2 == hi;
  md += std::string("mean, std, min, max in one pass agree with the calls alone: ") + (moments_same ? "yes" : "NO") + " (mean " +
        fmt("%.9g", mean) + " against " + fmt("%.9g", mean_alone) + ", std " + fmt("%.9g", deviation) + " against " +
        fmt("%.9g", std_alone) + ").\n";
  rows.push_back({{"what", "agreement of mean, std, min, max"}, {"agrees", moments_same}});

  // Per-row stats of 2^20 rows of 256 (the tiles of kernels/segmented.cuh, at half size).
  const std::size_t count = n / 256;
  void* results = nullptr;
  check(cudaMalloc(&results, count * 8 * 6), "cudaMalloc results");
  OpsOut per_row;
  per_row.values[static_cast<int>(Op::sum)] = results;
  per_row.values[static_cast<int>(Op::min)] = static_cast<char*>(results) + count * 8;
  per_row.values[static_cast<int>(Op::max)] = static_cast<char*>(results) + count * 16;
  per_row.values[static_cast<int>(Op::argmax)] = static_cast<char*>(results) + count * 24;
  per_row.indices[static_cast<int>(Op::argmax)] = reinterpret_cast<std::uint64_t*>(static_cast<char*>(results) + count * 32);
  md += "\n" + std::to_string(count) + " rows of 256:\n\n| what | median us | GB/s | % of probe | time / per-row sums |\n|---|---:|---:|---:|---:|\n";
  const auto rows_t = time([&] { ws.enqueue_segments("cuda.shuffle", x, n, DType::f32, Op::sum, Segments{count, nullptr}, results); });
  row("per-row sums", rows_t, median(rows_t));
  row("per-row sum, min, max, argmax: one pass", time([&] {
        ws.enqueue_segment_stats(x, n, DType::f32, ops, Segments{count, nullptr}, per_row);
      }), median(rows_t));
  cudaFree(results);
  cudaFree(x);
  cudaFree(sink);
  return 0;
}

}  // namespace xreduce::bench
