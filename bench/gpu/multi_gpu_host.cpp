// One host array over every GPU of the machine (cuda.multi_gpu) against one GPU (cuda.shuffle's
// streamed path) in the same run: an f32 sum (or another op: --op var, mean, ...) of 2^log2n
// elements in pageable and in pinned host memory, wall-clock time per call, median of R after one
// warm-up call. Public API only.
//
//   xreduce_bench_multi_gpu [--log2n 30] [--repeat 5] [--op sum] [--out DIR]
//       (DIR/multi-gpu-host.{json,md}; another op: DIR/multi-gpu-host-OP.{json,md})

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "xreduce/pinned.hpp"
#include "xreduce/backend/registry.hpp"
#include "xreduce/xreduce.hpp"

namespace xr = xreduce;

int main(int argc, char** argv) {
  int log2n = 30, repeat = 5;
  std::string out_dir = ".";
  std::optional<xr::Op> op = xr::Op::sum;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--log2n") log2n = std::atoi(argv[i + 1]);
    else if (a == "--repeat") repeat = std::max(1, std::atoi(argv[i + 1]));
    else if (a == "--out") out_dir = argv[i + 1];
    else if (a == "--op") op = xr::parse_op(argv[i + 1]);
  }
  if (!op || *op == xr::Op::argmin || *op == xr::Op::argmax || *op == xr::Op::sumsq) {
    std::fprintf(stderr, "xreduce_bench_multi_gpu: --op is sum, prod, min, max or a statistic (mean, var, std, norm2, logsumexp, ...)\n");
    return 2;
  }
  xr::Registry& registry = xr::default_context().registry();
  xr::Reducer* multi = registry.find("cuda.multi_gpu");
  xr::Reducer* one = registry.find("cuda.shuffle");
  if (!multi || !one || !multi->available()) {
    std::fprintf(stderr, "xreduce_bench_multi_gpu: cuda.multi_gpu cannot run here%s\n",
                 multi ? (": " + multi->available().reason).c_str() : "");
    return 2;
  }
  const std::size_t n = std::size_t{1} << log2n;
  std::vector<float> pageable(n);
  for (std::size_t i = 0; i < n; ++i) pageable[i] = static_cast<float>((i * 2654435761u) % 1000003) / 1000003.0f;
  xr::PinnedBuffer pinned(n * sizeof(float));
  std::memcpy(pinned.data(), pageable.data(), n * sizeof(float));
  auto median_seconds = [&](xr::Reducer& r, const void* data, double* value) {
    const xr::Request q{data, n, xr::DType::f32, *op, xr::Memory::host};
    *value = r.reduce(q).value.to_double();  // warm-up: workspaces, staging, the GPUs' contexts
    std::vector<double> t;
    for (int k = 0; k < repeat; ++k) {
      const auto t0 = std::chrono::steady_clock::now();
      r.reduce(q);
      t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
    return t[t.size() / 2];
  };
  nlohmann::json rows = nlohmann::json::array();
  const std::string op_name(xr::to_string(*op));
  std::string md = "# One host array over every GPU (cuda.multi_gpu) against one (cuda.shuffle)\n\n"
                   "f32 " + op_name + " of 2^" + std::to_string(log2n) + " host elements, wall-clock per call, median of " +
                   std::to_string(repeat) + ".\n\n| host memory | cuda.shuffle (one GPU) | cuda.multi_gpu | ratio | values agree |\n"
                   "|---|---:|---:|---:|---|\n";
  for (const bool is_pinned : {false, true}) {
    if (is_pinned && !pinned.pinned()) continue;
    const void* data = is_pinned ? pinned.data() : static_cast<const void*>(pageable.data());
    double v_one = 0, v_multi = 0;
    const double t_one = median_seconds(*one, data, &v_one), t_multi = median_seconds(*multi, data, &v_multi);
    const double gb = n * 4.0 / 1e9;
    // Every value is in [0, 1): the sums' bound (64 eps(f32) sum|x|) covers every op's here.
    const bool agree = std::fabs(v_one - v_multi) <= 64 * 0x1p-23 * std::fabs(v_one);
    char line[256];
    std::snprintf(line, sizeof line, "| %s | %.2f ms, %.1f GB/s | %.2f ms, %.1f GB/s | %.2fx | %s |\n",
                  is_pinned ? "pinned" : "pageable", t_one * 1e3, gb / t_one, t_multi * 1e3, gb / t_multi, t_one / t_multi,
                  agree ? "yes" : "NO");
    md += line;
    rows.push_back({{"memory", is_pinned ? "pinned" : "pageable"}, {"one_gpu_s", t_one}, {"multi_gpu_s", t_multi},
                    {"ratio", t_one / t_multi}, {"one_gpu_value", v_one}, {"multi_gpu_value", v_multi}, {"agree", agree}});
  }
  std::fputs(md.c_str(), stdout);
  const std::string stem = out_dir + "/multi-gpu-host" + (*op == xr::Op::sum ? "" : "-" + op_name);
  std::ofstream(stem + ".md") << md;
  std::ofstream(stem + ".json") << nlohmann::json{{"log2n", log2n}, {"repeat", repeat}, {"op", op_name}, {"rows", rows}}.dump(1) << "\n";
  return 0;
}
