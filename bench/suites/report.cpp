#include "report.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "gpu.hpp"
#include "xreduce/backend/reducer.hpp"
#include "xreduce/version.hpp"

namespace xreduce::bench {
namespace {

// Reads every 64-bit word with eight independent integer sums: no floating-point dependency,
// nothing for the core to wait on but memory. The result is kept so the loop is not removed.
std::uint64_t probe_slice(const std::uint64_t* w, std::size_t n) {
  std::uint64_t s[8] = {};
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) s[j] += w[i + j];
  for (; i < n; ++i) s[0] += w[i];
  return s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
}

std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

std::string slug(const std::string& text) {
  std::string s;
  for (char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c))) s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else if (!s.empty() && s.back() != '-') s += '-';
  }
  while (!s.empty() && s.back() == '-') s.pop_back();
  return s;
}

std::string clock_text(double seconds) {
  char buf[32];
  const int s = static_cast<int>(std::lround(std::max(0.0, seconds)));
  std::snprintf(buf, sizeof buf, "%d:%02d", s / 60, s % 60);
  return buf;
}

}  // namespace

nlohmann::json machine_json() {
  nlohmann::json m{{"cpu", cpu_model()}, {"threads", std::thread::hardware_concurrency()}};
  const GpuInfo gpu = gpu_info();
  if (gpu.present) m["gpu"] = {{"name", gpu.name}, {"driver", gpu.driver}, {"runtime", gpu.runtime}, {"sm_count", gpu.sm_count}};
  return m;
}

std::string machine_slug(bool want_gpu) {
  const GpuInfo gpu = gpu_info();
  if (want_gpu && gpu.present) return slug(gpu.name);
  std::string model = cpu_model();
  // "AMD EPYC 7B13 64-Core Processor" -> "amd-epyc"; the thread count says how much of it we had.
  std::string vendor_family;
  int words = 0;
  for (std::size_t i = 0; i < model.size() && words < 2; ++i) {
    if (model[i] == ' ') ++words;
    if (words < 2) vendor_family += model[i];
  }
  return slug(vendor_family) + "-" + std::to_string(std::thread::hardware_concurrency()) + "-threads";
}

Progress::Progress(std::string suite, double estimated_seconds)
    : suite_(std::move(suite)), start_(std::chrono::steady_clock::now()) {
  std::fprintf(stderr, "[%s] estimated time: %s (min:s)\n", suite_.c_str(), clock_text(estimated_seconds).c_str());
}

void Progress::update(double done, const std::string& what) {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double left = done > 0.02 ? elapsed * (1 - done) / done : 0;
  std::fprintf(stderr, "\r[%s] %3.0f%%  %-44.44s  elapsed %s, left ~%s ", suite_.c_str(), 100 * done, what.c_str(),
               clock_text(elapsed).c_str(), done > 0.02 ? clock_text(left).c_str() : "?");
  std::fflush(stderr);
}

void Progress::finish() {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::fprintf(stderr, "\r[%s] done in %s%60s\n", suite_.c_str(), clock_text(elapsed).c_str(), "");
}

//! The commit measured: XREDUCE_COMMIT if set (scripts/gpu-check.sh sets it where the tree has no
//! .git), else git's short hash of the source tree this program was built from, with "+changes"
//! where tracked files differ from it, else "unknown".
std::string commit_measured() {
  if (const char* commit = std::getenv("XREDUCE_COMMIT"); commit && *commit) return commit;
  auto git = [](const std::string& args) {
    std::string out;
    std::string command = "git -C '" XREDUCE_SOURCE_DIR "' ";
    command.append(args).append(" 2>/dev/null");
    if (FILE* pipe = popen(command.c_str(), "r")) {
      char buffer[256];
      while (std::fgets(buffer, sizeof buffer, pipe)) out += buffer;
      if (pclose(pipe) != 0) out.clear();
    }
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    return out;
  };
  const std::string hash = git("rev-parse --short HEAD");
  if (hash.empty()) return "unknown";
  return git("status --porcelain --untracked-files=no").empty() ? hash : hash + "+changes";
}

void write_results(const std::string& dir, const std::string& name, nlohmann::json body, const std::string& markdown) {
  std::filesystem::create_directories(dir);
  body["schema"] = 1;
  body["suite"] = name;
  body["date"] = utc_date();
  body["commit"] = commit_measured();
  body["version"] = XREDUCE_VERSION_STRING;
  body["machine"] = machine_json();
  std::ofstream(std::filesystem::path(dir) / (name + ".json")) << body.dump(1) << "\n";
  // The markdown ends with where and when it was measured, as the JSON says it.
  const nlohmann::json& m = body["machine"];
  std::string where = m.value("cpu", std::string("unknown CPU")) + ", " + std::to_string(m.value("threads", 0)) + " threads";
  if (m.contains("gpu")) where += ", " + m["gpu"].value("name", std::string("GPU"));
  std::ofstream(std::filesystem::path(dir) / (name + ".md"))
      << markdown << "\n_Measured " << body["date"].get<std::string>() << " at commit " << body["commit"].get<std::string>()
      << " on " << where << "._\n";
  std::fprintf(stderr, "wrote %s/%s.{json,md}\n", dir.c_str(), name.c_str());
}

std::uint64_t read_probe(const void* data, std::size_t bytes, std::size_t slices, Reducer* pool) {
  struct Job {
    const std::uint64_t* w;
    std::size_t words, per;
    std::vector<std::uint64_t> out;
  } job{static_cast<const std::uint64_t*>(data), bytes / 8, 0, std::vector<std::uint64_t>(slices)};
  job.per = (job.words + slices - 1) / slices;
  auto slice = [](void* context, std::size_t t) {
    Job& j = *static_cast<Job*>(context);
    const std::size_t first = std::min(j.words, t * j.per);
    j.out[t] = probe_slice(j.w + first, std::min(j.per, j.words - first));
  };
  if (pool) pool->run_chunks(slices, slice, &job, 0);
  else for (std::size_t t = 0; t < slices; ++t) slice(&job, t);
  std::uint64_t s = 0;
  for (auto v : job.out) s += v;
  return s;
}


}  // namespace xreduce::bench
