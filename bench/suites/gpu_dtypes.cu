// The device half of the `dtypes` suite: sums of 2^30 device-resident elements of every element
// type through cuda.shuffle, cuda.single_pass and CUB, each against the read probe over the same
// bytes in the same run; several ops in one pass and exact sums of the 16-bit floats against a
// plain sum of the same data. Time per call: CUDA-graph replays of back-to-back calls (every input
// is past the L2), median. The kernels' sums are checked against CUB's (integers: the same value;
// floats: within the stated bound).

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
namespace {

//! Fills x[0..n) with random bits under `mask` (splitmix64 of the index): integers over their
//! whole range, bools 0 or 1, or every finite bit pattern of a 16-bit float.
template <class W>
__global__ void fill_bits(W* x, std::size_t n, W mask, unsigned long long seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    x[i] = static_cast<W>(splitmix64(i + seed)) & mask;
  }
}

struct TypeCase {
  DType dtype;
  const char* data;  //!< what the elements are, for the table
};

}  // namespace

int run_dtypes_gpu(const SuiteArgs& args, nlohmann::json& rows, std::string& md) {
  if (!gpu_info().present) return 2;
  constexpr auto check = check_cuda;
  const int log2n = args.max_log2 ? std::min(args.max_log2, 30) : (args.quick ? 20 : 30);
  const std::size_t n = std::size_t{1} << log2n;
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  void* x = nullptr;
  unsigned* sink = nullptr;
  check(cudaMalloc(&x, n * 4), "cudaMalloc data");  // room for the widest type here, f32
  check(cudaMalloc(&sink, sizeof(unsigned)), "cudaMalloc sink");
  xc::Kernels ws(device);
  const int calls = 4, reps = std::max(args.repeat, 10);
  auto time = [&](auto&& call) {
    call();
    check(cudaStreamSynchronize(ws.stream()), "warm-up");
    return graph_seconds_per_call(ws.stream(), calls, reps, check, [&](int) { call(); });
  };
  const unsigned grid = prop.multiProcessorCount * 8;
  md += "\n## Device-resident: sums of 2^" + std::to_string(log2n) + " elements of each type\n\n" + std::string(prop.name) +
        ". GB/s of the bytes read; the read probe reads the same bytes in the same run. Median of " + std::to_string(reps) +
        " graph replays of " + std::to_string(calls) + " calls.\n\n"
        "| type | data | bytes | probe GB/s | cuda.shuffle | cuda.single_pass | cub | shuffle = cub |\n"
        "|---|---|---:|---:|---:|---:|---:|---|\n";
  const TypeCase cases[] = {{DType::f32, "uniform [0, 1)"}, {DType::bf16, "uniform [0, 1), rounded"},
                            {DType::f16, "uniform [0, 1), rounded"}, {DType::u8, "random bytes"},
                            {DType::i8, "random bytes"}, {DType::boolean, "random 0 / 1"},
                            {DType::u16, "random"}, {DType::i16, "random"}};
  std::string several_md, exact_md;
  for (const TypeCase& c : cases) {
    const std::size_t bytes = n * size_of(c.dtype);
    switch (c.dtype) {
      case DType::f32: fill_uniform<<<grid, 256>>>(static_cast<float*>(x), n, 11); break;
      case DType::bf16: fill_uniform<<<grid, 256>>>(static_cast<bf16*>(x), n, 12); break;
      case DType::f16: fill_uniform<<<grid, 256>>>(static_cast<f16*>(x), n, 13); break;
      case DType::boolean: fill_bits<<<grid, 256>>>(static_cast<unsigned char*>(x), n, static_cast<unsigned char>(1), 14); break;
      case DType::u8: case DType::i8: fill_bits<<<grid, 256>>>(static_cast<unsigned char*>(x), n, static_cast<unsigned char>(0xff), 15); break;
      default: fill_bits<<<grid, 256>>>(static_cast<unsigned short*>(x), n, static_cast<unsigned short>(0xffff), 16); break;
    }
    check(cudaGetLastError(), "fill");
    check(cudaDeviceSynchronize(), "fill");
    const auto probe_t = time([&] {
      read_probe<<<grid, 256, 0, ws.stream()>>>(reinterpret_cast<const uint4*>(x), bytes / 16, sink);
    });
    const double probe = bytes / median(probe_t) / 1e9;
    const std::string type(to_string(c.dtype));
    md += "| " + type + " | " + c.data + " | " + std::to_string(bytes) + " | " + fmt("%.0f", probe) + " |";
    rows.push_back({{"dtype", type}, {"what", "read probe"}, {"n", n}, {"bytes", bytes}, {"median_s", median(probe_t)},
                    {"gbps", probe}, {"times_s", probe_t}});
    double sum_median = 0;
    for (const char* backend : {"cuda.shuffle", "cuda.single_pass", "cub"}) {
      const auto t = time([&] { ws.enqueue(backend, x, n, c.dtype, Op::sum); });
      const double m = median(t), gbps = bytes / m / 1e9;
      if (std::string(backend) == "cuda.shuffle") sum_median = m;
      md += " " + fmt("%.0f", gbps) + " (" + fmt("%.1f%%", 100 * gbps / probe) + ") |";
      rows.push_back({{"dtype", type}, {"what", "sum"}, {"backend", backend}, {"n", n}, {"bytes", bytes}, {"median_s", m},
                      {"gbps", gbps}, {"fraction_of_probe", gbps / probe}, {"times_s", t}});
    }
    ws.enqueue("cuda.shuffle", x, n, c.dtype, Op::sum);
    const Result ours = ws.collect(c.dtype, Op::sum);
    ws.enqueue("cub", x, n, c.dtype, Op::sum);
    const Result cubs = ws.collect(c.dtype, Op::sum);
    const double a = ours.value.to_double(), b = cubs.value.to_double();
    // Integers: the same count; floats: both within 64 eps(f32) of the sum of magnitudes (all positive here).
    // (f16 sums of 2^30 such elements overflow: both infinite is agreement.)
    const bool same = is_floating(c.dtype) ? a == b || std::fabs(a - b) <= 2 * 64 * 0x1p-23 * std::fabs(b) : ours.value == cubs.value;
    md += std::string(" ") + (same ? "yes" : "NO") + " (" + ours.value.to_string() + ") |\n";
    rows.push_back({{"dtype", type}, {"what", "agreement"}, {"value", ours.value.to_string()}, {"cub", cubs.value.to_string()},
                    {"agrees", same}});

    if (c.dtype == DType::f32 || c.dtype == DType::bf16 || c.dtype == DType::f16) {
      auto over_sum = [&](std::string& table, const std::string& what, const std::vector<double>& t) {
        const double m = median(t), gbps = bytes / m / 1e9;
        table += "| " + type + " | " + what + " | " + fmt("%.1f", m * 1e6) + " | " + fmt("%.0f", gbps) + " | " +
                 fmt("%.1f%%", 100 * gbps / probe) + " | " + fmt("%.2f", m / sum_median) + " |\n";
        rows.push_back({{"dtype", type}, {"what", what}, {"n", n}, {"bytes", bytes}, {"median_s", m}, {"gbps", gbps},
                        {"fraction_of_probe", gbps / probe}, {"over_sum", m / sum_median}, {"times_s", t}});
      };
      several_md += "| " + type + " | sum (cuda.shuffle) | " + fmt("%.1f", sum_median * 1e6) + " | " +
                    fmt("%.0f", bytes / sum_median / 1e9) + " | " + fmt("%.1f%%", 100 * bytes / sum_median / 1e9 / probe) +
                    " | 1.00 |\n";
      over_sum(several_md, "sum, min, max, argmax (all six): one pass", time([&] { ws.enqueue_stats(x, n, c.dtype); }));
      for (const char* backend : {"cuda.single_pass", "cuda.shuffle"})
        over_sum(exact_md, std::string("exact sum (") + backend + ")", time([&] { ws.enqueue_exact(backend, x, n, c.dtype); }));
      if (c.dtype != DType::f32) {  // the same over random finite bit patterns: every exponent, both signs
        const auto mask = static_cast<unsigned short>(c.dtype == DType::f16 ? 0xfbff : 0xff7f);
        fill_bits<<<grid, 256>>>(static_cast<unsigned short*>(x), n, mask, 17);
        check(cudaGetLastError(), "fill");
        check(cudaDeviceSynchronize(), "fill");
        over_sum(exact_md, "exact sum (cuda.single_pass), random finite bit patterns",
                 time([&] { ws.enqueue_exact("cuda.single_pass", x, n, c.dtype); }));
      }
    }
  }
  const std::string head = "| type | what | median us | GB/s | % of probe | time / plain sum (cuda.shuffle) |\n|---|---|---:|---:|---:|---:|\n";
  md += "\n### Several ops in one pass\n\n" + head + several_md;
  md += "\n### Exact sums (the exact sum rounded once), same data\n\n" + head + exact_md;
  cudaFree(x);
  cudaFree(sink);
  return 0;
}

}  // namespace xreduce::bench
