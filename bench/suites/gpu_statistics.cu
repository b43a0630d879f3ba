// The device half of the `statistics` suite: each statistic cuda.shuffle computes (statistics.cuh),
// and the exact mean and var (kernels/exact_sum.cuh, exact_moments.cuh), over 2^28
// device-resident f32, uniform in [0, 1) (the exact var also of the exact suite's other
// distributions, and of bf16 and f16 against their own plain sums), against cuda.shuffle's plain sum, CUB's sum and the read probe over the same
// bytes, in the same run. Time per call: CUDA-graph replays of
// 8 back-to-back calls (the input is 1 GiB, far past the L2), median. bench/python/
// bench_statistics_torch.py times torch's counterparts on the same GPU and joins the two.

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "bench_interface.hpp"
#include "gpu.hpp"
#include "gpu/gpu_timing.cuh"
#include "xreduce/exact.hpp"

namespace xc = xreduce::cuda::bench;

namespace xreduce::bench {

int run_statistics_gpu(const SuiteArgs& args, nlohmann::json& rows, std::string& md) {
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
  fill_uniform<<<prop.multiProcessorCount * 8, 256>>>(x, n, 36);
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
  const int log2n = static_cast<int>(std::log2(n));
  md += "\n## Device-resident: 2^" + std::to_string(log2n) + " f32, uniform in [0, 1), cuda.shuffle\n\n" + std::string(prop.name) +
        ". Read probe over the same bytes: " + fmt("%.1f", median(probe_t) * 1e6) + " us, " + fmt("%.0f", probe) +
        " GB/s. `var` is the kernel of `var_mean`: its partial holds the mean too.\n\n"
        "| op | median us | GB/s | % of probe | time / plain sum | value |\n|---|---:|---:|---:|---:|---|\n";
  auto row = [&](const std::string& what, Op op, const std::vector<double>& t, const std::string& value) {
    const double m = median(t), gbps = bytes / m / 1e9;
    md += "| " + what + " | " + fmt("%.1f", m * 1e6) + " | " + fmt("%.0f", gbps) + " | " + fmt("%.1f%%", 100 * gbps / probe) + " | " +
          fmt("%.2f", m / sum_m) + " | " + value + " |\n";
    rows.push_back({{"what", what}, {"op", to_string(op)}, {"dtype", "f32"}, {"n", n}, {"median_s", m}, {"gbps", gbps},
                    {"probe_gbps", probe}, {"fraction_of_probe", gbps / probe}, {"over_sum", m / sum_m}, {"value", value},
                    {"times_s", t}});
  };
  row("read probe", Op::sum, probe_t, "");
  ws.enqueue("cuda.shuffle", x, n, DType::f32, Op::sum);
  row("sum (cuda.shuffle)", Op::sum, sum_t, ws.collect(DType::f32, Op::sum).value.to_string());
  ws.enqueue("cub", x, n, DType::f32, Op::sum);
  const std::string cub_sum = ws.collect(DType::f32, Op::sum).value.to_string();
  row("sum (cub)", Op::sum, time([&] { ws.enqueue("cub", x, n, DType::f32, Op::sum); }), cub_sum);
  // Exact (Accuracy::exact): the sum (kernels/exact_sum.cuh), which is the exact mean's partial,
  // and the partials of x and x squared (kernels/exact_moments.cuh) of var_mean, std and var,
  // each rounded once on the host as the core rounds them.
  ws.enqueue_exact("cuda.shuffle", x, n, DType::f32);
  const ExactSum exact_sum = ws.collect_exact(n);
  row("mean, exact (the exact sum)", Op::mean, time([&] { ws.enqueue_exact("cuda.shuffle", x, n, DType::f32); }),
      Scalar(exact_mean<float>(exact_sum)).to_string());
  ws.enqueue_exact_moments(x, n, DType::f32);
  const std::vector<ExactSum> moments = ws.collect_exact_moments(n);
  row("var, exact (var_mean: x and x^2 exactly)", Op::var, time([&] { ws.enqueue_exact_moments(x, n, DType::f32); }),
      Scalar(exact_variance<float>(moments[0], moments[1], 0)).to_string() + ", mean " +
          Scalar(exact_mean<float>(moments[0])).to_string());
  for (Op op : {Op::mean, Op::var, Op::std, Op::norm1, Op::norm2, Op::norminf, Op::logsumexp, Op::count_nonzero, Op::nansum,
                Op::nanmax, Op::nanargmax, Op::nanmean, Op::nanvar}) {
    ws.enqueue_statistic(x, n, DType::f32, op);
    const Result r = ws.collect_statistic(n, DType::f32, op);
    row(std::string(to_string(op)), op, time([&] { ws.enqueue_statistic(x, n, DType::f32, op); }),
        r.value.to_string() + (r.index ? " at " + std::to_string(*r.index) : std::string()));
  }
  // The exact var of the exact suite's other distributions: a lane adds the elements of its
  // exponent group in registers and the rest to shared-memory bins, so that its time depends on
  // how far apart the exponents lie (a plain sum's does not: the ratio is to the uniform sum).
  for (const Spread spread : kSpreads) {
    if (spread == Spread::uniform) continue;
    fill_spread<<<prop.multiProcessorCount * 8, 256>>>(x, n, spread, 17);
    check(cudaDeviceSynchronize(), "fill");
    ws.enqueue_exact_moments(x, n, DType::f32);
    const std::vector<ExactSum> m = ws.collect_exact_moments(n);
    row(std::string("var, exact, ") + spread_name(spread, false), Op::var, time([&] { ws.enqueue_exact_moments(x, n, DType::f32); }),
        Scalar(exact_variance<float>(m[0], m[1], 0)).to_string());
  }
  // The 16-bit floats' exact var (uniform in [0, 1), rounded), against a plain sum of the same
  // elements in the same run: 2^log2n of them, half the bytes.
  for (const DType d : {DType::bf16, DType::f16}) {
    if (d == DType::bf16) fill_uniform<<<prop.multiProcessorCount * 8, 256>>>(reinterpret_cast<bf16*>(x), n, 12);
    else fill_uniform<<<prop.multiProcessorCount * 8, 256>>>(reinterpret_cast<f16*>(x), n, 13);
    check(cudaDeviceSynchronize(), "fill");
    const double plain = median(time([&] { ws.enqueue("cuda.shuffle", x, n, d, Op::sum); }));
    ws.enqueue_exact_moments(x, n, d);
    const std::vector<ExactSum> m = ws.collect_exact_moments(n);
    const std::vector<double> t = time([&] { ws.enqueue_exact_moments(x, n, d); });
    const double mt = median(t), gbps = static_cast<double>(bytes) / 2 / mt / 1e9;
    const std::string type(to_string(d)), value = Scalar(exact_variance<float>(m[0], m[1], 0)).to_string() + " (as f32)";
    md += "| var, exact, " + type + " (a plain " + type + " sum: " + fmt("%.1f", plain * 1e6) + " us) | " + fmt("%.1f", mt * 1e6) + " | " +
          fmt("%.0f", gbps) + " | " + fmt("%.1f%%", 100 * gbps / probe) + " | " + fmt("%.2f", mt / plain) + " | " + value + " |\n";
    rows.push_back({{"what", "var, exact"}, {"op", "var"}, {"dtype", type}, {"n", n}, {"median_s", mt}, {"gbps", gbps},
                    {"probe_gbps", probe}, {"fraction_of_probe", gbps / probe}, {"plain_sum_s", plain}, {"over_sum", mt / plain},
                    {"value", value}, {"times_s", t}});
  }
  cudaFree(x);
  cudaFree(sink);
  return 0;
}

}  // namespace xreduce::bench
