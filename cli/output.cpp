#include "output.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <thread>

namespace xreduce::cli {

namespace xr = xreduce;
using nlohmann::json;

json value_json(const xr::Scalar& s) {
  return xr::visit_dtype(s.dtype(), [&](auto tag) -> json {
    using T = decltype(tag);
    T v = s.get<T>();
    if constexpr (std::is_floating_point_v<T>)
      if (!std::isfinite(v)) return s.to_string();  // JSON has no NaN or infinity
    return v;
  });
}

//! A result's value: one number, or the list of column results of records.
json value_json(const xr::Result& r) {
  if (r.values.empty()) return value_json(r.value);
  json list = json::array();
  for (const xr::Scalar& v : r.values) list.push_back(value_json(v));
  return list;
}

std::string value_text(const xr::Result& r) {
  if (r.values.empty()) return r.value.to_string();
  std::string text = "[";
  for (const xr::Scalar& v : r.values) text += (text.size() > 1 ? ", " : "") + v.to_string();
  return text + "]";
}

std::string gbps(std::size_t bytes, double seconds) {
  if (seconds <= 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", static_cast<double>(bytes) / seconds / 1e9);
  return buf;
}

std::string seconds_text(double s) {
  char buf[32];
  if (s < 1e-3) std::snprintf(buf, sizeof buf, "%.1f us", s * 1e6);
  else if (s < 1) std::snprintf(buf, sizeof buf, "%.2f ms", s * 1e3);
  else std::snprintf(buf, sizeof buf, "%.2f s", s);
  return buf;
}

std::string machine_line() {
  std::string model = "unknown CPU";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  const double gib = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1 << 30);
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s, %u hardware threads, %.0f GiB memory", model.c_str(),
                std::thread::hardware_concurrency(), gib);
  return buf;
}

int name_width(const xr::Registry& registry) {
  std::size_t w = 7;  // "backend"
  for (const auto& e : registry.entries()) w = std::max(w, e.reducer->name().size());
  return static_cast<int>(w);
}

void print_backends(xr::Context& ctx) {
  const int w = name_width(ctx.registry());
  std::printf("  %-*s %-13s %-9s %s\n", w, "backend", "engine", "priority", "availability");
  for (const auto& e : ctx.registry().entries()) {
    xr::Availability a = e.reducer->available();
    std::printf("  %-*s %-13s %-9d %s\n", w, std::string(e.reducer->name()).c_str(),
                std::string(to_string(e.reducer->capabilities().engine())).c_str(), e.priority,
                a ? "available" : ("unavailable: " + a.reason).c_str());
  }
  for (const auto& r : ctx.registry().plugin_reports())
    if (!r.loaded) std::printf("  plugin not loaded: %s\n", r.message.c_str());
}

void print_unavailable(const std::vector<xr::ValidationRow>& rows) {
  std::map<std::string, std::vector<std::string>> by_reason;  // the message less the backend's name
  for (const auto& row : rows) {
    if (row.ran || row.failure_code != xr::ErrorCode::unavailable) continue;
    const std::string named = "backend '" + row.backend + "' is unavailable: ";
    const std::string reason = row.failure.rfind(named, 0) == 0 ? row.failure.substr(named.size()) : row.failure;
    by_reason[reason].push_back(row.backend);
  }
  for (const auto& [reason, names] : by_reason) {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    std::printf("  not run, unavailable here (%s): %s\n", reason.c_str(), list.c_str());
  }
}

}  // namespace xreduce::cli
