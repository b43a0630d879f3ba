// One host array over every GPU of the machine (cuda.multi_gpu) against one GPU (cuda.shuffle's
// streamed path) in the same run: an f32 sum (or another op: --op var, mean, ...) of 2^log2n
// elements in pageable and in pinned host memory, wall-clock time per call, median of R after one
// warm-up call of each. The two backends take turns, call by call, so that a drift of the host's
// rate (pageable copies move by 10-20% between runs) reaches both alike. `--accuracy exact`:
// the exact sum, mean, var or std, whose values must agree to the bit; `--rows L`: rows of L
// elements, one result each (layout inner), written to a host array. Public API only.
//
//   xreduce_bench_multi_gpu [--log2n 30] [--repeat 5] [--op sum] [--accuracy standard|exact] [--rows L]
//                           [--set KEY=VALUE]... [--out DIR]
//       (DIR/multi-gpu-host.{json,md}; another op: DIR/multi-gpu-host-OP.{json,md}, then -exact,
//       -rowsL, -KEY-VALUE of each setting)

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
  std::size_t row_length = 0;  // 0: a flat array
  std::string out_dir = ".";
  std::optional<xr::Op> op = xr::Op::sum;
  std::optional<xr::Accuracy> accuracy = xr::Accuracy::standard;
  xr::Settings settings;  // --set KEY=VALUE: both backends' settings (streams, copy_threads, ...)
  std::string settings_text;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--log2n") log2n = std::atoi(argv[i + 1]);
    else if (a == "--repeat") repeat = std::max(1, std::atoi(argv[i + 1]));
    else if (a == "--out") out_dir = argv[i + 1];
    else if (a == "--op") op = xr::parse_op(argv[i + 1]);
    else if (a == "--accuracy") accuracy = xr::parse_accuracy(argv[i + 1]);
    else if (a == "--rows") row_length = static_cast<std::size_t>(std::atoll(argv[i + 1]));
    else if (a == "--set") {
      const std::string kv = argv[i + 1];
      const std::size_t eq = kv.find('=');
      if (eq == std::string::npos) {
        std::fprintf(stderr, "xreduce_bench_multi_gpu: --set takes KEY=VALUE, not '%s'\n", kv.c_str());
        return 2;
      }
      settings.set(kv.substr(0, eq), kv.substr(eq + 1));
      settings_text += (settings_text.empty() ? "" : ", ") + kv;
    }
  }
  if (!op || *op == xr::Op::argmin || *op == xr::Op::argmax || *op == xr::Op::sumsq) {
    std::fprintf(stderr, "xreduce_bench_multi_gpu: --op is sum, prod, min, max or a statistic (mean, var, std, norm2, logsumexp, ...)\n");
    return 2;
  }
  const bool exact = accuracy == xr::Accuracy::exact;
  if (!accuracy || (exact && (row_length > 0 || !(*op == xr::Op::sum || xr::exact_statistic(*op))))) {
    std::fprintf(stderr, "xreduce_bench_multi_gpu: --accuracy is standard or exact; exact takes a flat sum, mean, var or std\n");
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
  if (row_length > n || (row_length > 0 && n % row_length != 0)) {
    std::fprintf(stderr, "xreduce_bench_multi_gpu: --rows must divide 2^%d\n", log2n);
    return 2;
  }
  const std::size_t results = row_length > 0 ? n / row_length : 1;
  const xr::DType result_type = xr::result_dtype(xr::DType::f32, *op);
  const std::size_t result_bytes = xr::size_of(result_type);
  std::vector<float> pageable(n);
  for (std::size_t i = 0; i < n; ++i) pageable[i] = static_cast<float>((i * 2654435761u) % 1000003) / 1000003.0f;
  xr::PinnedBuffer pinned(n * sizeof(float));
  std::memcpy(pinned.data(), pageable.data(), n * sizeof(float));
  // Each backend's results: the value, or each row's.
  std::vector<std::vector<double>> got(2, std::vector<double>(results));
  // Returns the seconds of the call alone (not of reading its results back here).
  auto call = [&](xr::Reducer& r, const void* data, std::vector<double>& values) {
    xr::Request q{data, n, xr::DType::f32, *op, xr::Memory::host};
    if (row_length > 0) q = xr::Request::rows(data, results, row_length, xr::DType::f32, *op);
    q.memory = xr::Memory::host;
    std::vector<double> row_results(row_length > 0 ? results : 0);  // room for results of either width
    if (row_length > 0) q.out = row_results.data();
    xr::Options options{.accuracy = *accuracy};
    options.settings = settings;
    const auto t0 = std::chrono::steady_clock::now();
    const xr::Result res = r.reduce(q, options);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (row_length == 0) values[0] = res.value.to_double();
    else
      for (std::size_t k = 0; k < results; ++k)
        values[k] =
            xr::Scalar::from_bytes(result_type, reinterpret_cast<const unsigned char*>(row_results.data()) + k * result_bytes).to_double();
    return seconds;
  };
  auto median = [](std::vector<double> t) {
    std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
    return t[t.size() / 2];
  };
  nlohmann::json rows = nlohmann::json::array();
  const std::string op_name(xr::to_string(*op));
  const std::string what = row_length > 0 ? "each of " + std::to_string(results) + " rows of " + std::to_string(row_length) + " of 2^" +
                                                std::to_string(log2n) + " host elements"
                                          : "2^" + std::to_string(log2n) + " host elements";
  std::string md = "# One host array over every GPU (cuda.multi_gpu) against one (cuda.shuffle)\n\n"
                   "f32 " + std::string(exact ? "exact " : "") + op_name + " of " + what + ", wall-clock per call, median of " +
                   std::to_string(repeat) + ", the two backends taking turns call by call" +
                   (settings_text.empty() ? "" : "; settings " + settings_text) + ".\n\n"
                   "| host memory | cuda.shuffle (one GPU) | cuda.multi_gpu | ratio | values agree |\n|---|---:|---:|---:|---|\n";
  for (const bool is_pinned : {false, true}) {
    if (is_pinned && !pinned.pinned()) continue;
    const void* data = is_pinned ? pinned.data() : static_cast<const void*>(pageable.data());
    call(*one, data, got[0]);  // warm-up: workspaces, staging, the GPUs' contexts
    call(*multi, data, got[1]);
    std::vector<double> times[2];
    for (int k = 0; k < repeat; ++k)
      for (int b = 0; b < 2; ++b) times[b].push_back(call(b == 0 ? *one : *multi, data, got[b]));
    const double t_one = median(times[0]), t_multi = median(times[1]);
    const double gb = n * 4.0 / 1e9;
    // Exact results agree to the bit. Every value is in [0, 1): the sums' bound (64 eps(f32)
    // sum|x|) covers every op's here.
    bool agree = true;
    for (std::size_t k = 0; k < results; ++k)
      agree = agree && (exact ? got[0][k] == got[1][k] : std::fabs(got[0][k] - got[1][k]) <= 64 * 0x1p-23 * std::fabs(got[0][k]));
    char line[256];
    std::snprintf(line, sizeof line, "| %s | %.2f ms, %.1f GB/s | %.2f ms, %.1f GB/s | %.2fx | %s |\n",
                  is_pinned ? "pinned" : "pageable", t_one * 1e3, gb / t_one, t_multi * 1e3, gb / t_multi, t_one / t_multi,
                  agree ? (exact ? "yes, the same bits" : "yes") : "NO");
    md += line;
    rows.push_back({{"memory", is_pinned ? "pinned" : "pageable"}, {"one_gpu_s", t_one}, {"multi_gpu_s", t_multi},
                    {"one_gpu_times_s", times[0]}, {"multi_gpu_times_s", times[1]}, {"ratio", t_one / t_multi},
                    {"one_gpu_value", got[0][0]}, {"multi_gpu_value", got[1][0]}, {"agree", agree}});
  }
  std::fputs(md.c_str(), stdout);
  std::string settings_suffix;  // "-streams-6-copy_threads-8" for --set streams=6 --set copy_threads=8
  for (char c : settings_text)
    if (c != ' ') settings_suffix += c == '=' || c == ',' ? '-' : c;
  if (!settings_suffix.empty()) settings_suffix = "-" + settings_suffix;
  const std::string stem = out_dir + "/multi-gpu-host" + (*op == xr::Op::sum ? "" : "-" + op_name) + (exact ? "-exact" : "") +
                           (row_length > 0 ? "-rows" + std::to_string(row_length) : "") + settings_suffix;
  std::ofstream(stem + ".md") << md;
  std::ofstream(stem + ".json") << nlohmann::json{{"log2n", log2n}, {"repeat", repeat}, {"op", op_name},
                                                  {"accuracy", exact ? "exact" : "standard"}, {"row_length", row_length},
                                                  {"settings", settings_text},
                                                  {"rows", rows}}
                                       .dump(1)
                                << "\n";
  return 0;
}
