#include "output.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <thread>

#include "xreduce/backend/features.hpp"

namespace xreduce::cli {

namespace xr = xreduce;
using nlohmann::json;

json value_json(const xr::Scalar& s) {
  return xr::visit_dtype(s.dtype(), [&](auto tag) -> json {
    using T = decltype(tag);
    T v = s.get<T>();
    if constexpr (is_float_v<T>) {
      const double d = static_cast<double>(v);
      if (!std::isfinite(d)) return s.to_string();  // JSON has no NaN or infinity
      if constexpr (is_float16_v<T>) return d;        // exact: every f16 and bf16 is a double
      else return v;
    } else {
      return v;
    }
  });
}

//! A result's value: one number, or the list of column results of records, or of segments.
json value_json(const xr::Result& r, bool segmented) {
  if (r.values.empty() && !segmented) return value_json(r.value);
  json list = json::array();
  for (const xr::Scalar& v : r.values) list.push_back(value_json(v));
  return list;
}

//! Segments' indices, no_index as null (an empty segment has none).
json indices_json(const xr::Result& r) {
  json list = json::array();
  for (std::uint64_t i : r.indices) list.push_back(i == xr::no_index ? json(nullptr) : json(i));
  return list;
}

//! The value, or a list of them; a long list (segments) as its first eight and last two, with
//! `indices` (argmin/argmax of segments) beside each value.
std::string value_text(const xr::Result& r, bool segmented) {
  if (r.values.empty() && !segmented) return r.value.to_string();
  auto item = [&](std::size_t k) {
    std::string text = r.values[k].to_string();
    if (k < r.indices.size()) text += r.indices[k] == xr::no_index ? " @none" : " @" + std::to_string(r.indices[k]);
    return text;
  };
  const std::size_t n = r.values.size();
  std::string text = "[";
  for (std::size_t k = 0; k < n; ++k) {
    if (segmented && n > 12 && k == 8) {
      text += ", ... (" + std::to_string(n - 10) + " more)";
      k = n - 3;
      continue;
    }
    text += (k ? ", " : "") + item(k);
  }
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

namespace {
//! The names of the values whose bits are set, from `all` (a feature's every value).
template <class All>
std::vector<std::string> names_of(std::uint32_t bits, const All& all) {
  std::vector<std::string> out;
  for (auto v : all)
    if (bits & (1u << static_cast<unsigned>(v))) out.emplace_back(to_string(v));
  return out;
}
std::string joined(const std::vector<std::string>& words, const char* between = " ") {
  std::string text;
  for (const std::string& w : words) text += (text.empty() ? "" : between) + w;
  return text;
}
constexpr std::array<xr::Memory, 2> kMemories{xr::Memory::host, xr::Memory::device};
constexpr std::array<xr::Accuracy, 2> kAccuracies{xr::Accuracy::standard, xr::Accuracy::exact};
}  // namespace

std::string feature_set_text(const xr::FeatureSet& s) {
  const auto dtypes = names_of(s.dtype_bits(), xr::all_dtypes), layouts = names_of(s.layout_bits(), xr::all_layouts);
  std::string text = (dtypes.size() == xr::all_dtypes.size() ? std::string("every dtype") : joined(dtypes)) + ": " +
                     joined(names_of(s.op_set().bits(), xr::all_ops)) + "; " +
                     (layouts.size() == xr::all_layouts.size() ? std::string("every layout") : "layouts " + joined(layouts)) +
                     "; " + joined(names_of(s.memory_bits(), kMemories), ", ") + " memory";
  if (s.accuracy_bits() & (1u << static_cast<unsigned>(xr::Accuracy::exact)))
    text += (s.accuracy_bits() & 1u) ? "; exact sums too" : "; exact sums";
  if (s.pass_bits() & xr::FeatureSet::kSeveral) text += (s.pass_bits() & xr::FeatureSet::kOne) ? "; several together too" : "; several together";
  if (s.promise() == xr::Support::inexact) text += "; INEXACT";
  return text;
}

json feature_set_json(const xr::FeatureSet& s) {
  json passes = json::array();
  if (s.pass_bits() & xr::FeatureSet::kOne) passes.push_back("one");
  if (s.pass_bits() & xr::FeatureSet::kSeveral) passes.push_back("several");
  return {{"dtypes", names_of(s.dtype_bits(), xr::all_dtypes)}, {"ops", names_of(s.op_set().bits(), xr::all_ops)},
          {"layouts", names_of(s.layout_bits(), xr::all_layouts)}, {"accuracy", names_of(s.accuracy_bits(), kAccuracies)},
          {"memory", names_of(s.memory_bits(), kMemories)}, {"passes", passes}, {"support", to_string(s.promise())}};
}

void print_backends(xr::Context& ctx) {
  const int w = name_width(ctx.registry());
  std::printf("  %-*s %-13s %-9s %s\n", w, "backend", "engine", "priority", "availability");
  double asking_gpu = 0;  // the first GPU backend asked starts the driver: say what that cost
  for (const auto& e : ctx.registry().entries()) {
    const xr::Engine engine = e.reducer->capabilities().engine();
    const auto t0 = std::chrono::steady_clock::now();
    xr::Availability a = e.reducer->available();
    if (engine == xr::Engine::gpu || engine == xr::Engine::cpu_gpu)
      asking_gpu += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("  %-*s %-13s %-9d %s\n", w, std::string(e.reducer->name()).c_str(), std::string(to_string(engine)).c_str(),
                e.priority, a ? "available" : ("unavailable: " + a.reason).c_str());
  }
  for (const auto& r : ctx.registry().plugin_reports())
    if (!r.loaded) std::printf("  plugin not loaded: %s\n", r.message.c_str());
  if (asking_gpu > 0.005)
    std::printf("  (asking whether the GPU backends can run started the GPU's driver: %s, once per process; a CPU "
                "reduction never does)\n", seconds_text(asking_gpu).c_str());
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


void print_dispatch(const Context& ctx) {
  const Config& c = ctx.config();
  const DispatchConfig& d = c.dispatch;
  std::printf("\nthresholds of auto ([dispatch]; \"default\": %s):\n",
              c.dispatch_defaults.empty() ? "the library's built-in values" : c.dispatch_defaults.c_str());
  const auto count = [](std::uint64_t n) { return n == 0 ? std::string("0 (never)") : std::to_string(n); };
  const std::pair<const char*, std::string> rows[] = {
      {"parallel_min_count", count(d.parallel_min_count)},
      {"parallel_backend", d.parallel_backend.empty() ? "(by priority)" : d.parallel_backend},
      {"parallel_large_min_count", count(d.parallel_large_min_count)},
      {"parallel_backend_large", d.parallel_backend_large.empty() ? "-" : d.parallel_backend_large},
      {"gpu_min_count_pinned", count(d.gpu_min_count_pinned)},
      {"gpu_min_count_pageable", count(d.gpu_min_count_pageable)},
      {"cpu_gpu_min_count_pinned", count(d.cpu_gpu_min_count_pinned)},
      {"cpu_gpu_min_count_pageable", count(d.cpu_gpu_min_count_pageable)},
      {"segment_cost", std::to_string(d.segment_cost)}};
  for (const auto& [key, value] : rows) {
    const auto from = c.dispatch_origins.find(std::string_view(key));
    std::printf("  %-27s %-12s %s\n", key, value.c_str(), from == c.dispatch_origins.end() ? "default" : from->second.c_str());
  }
}

//! One stat of a result with several ops, in the one-op form that value_json and value_text take.
Result stat_part(const OpResult& s) {
  Result r{s.value, s.index, {}};
  r.values = s.values;
  r.indices = s.indices;
  return r;
}

//! Each stat's value (a list for segments) and, for argmin/argmax, index: {"sum": {"value": ...}, ...}.
json stats_json(const Result& r, bool segmented) {
  json out = json::object();
  for (const OpResult& s : r.ops) {
    const Result part = stat_part(s);
    json one{{"value", value_json(part, segmented)}};
    if (returns_index(s.op)) one["index"] = segmented ? indices_json(part) : json(*s.index);
    out[std::string(to_string(s.op))] = one;
  }
  return out;
}

//! "sum=1.5 max=3 argmax=3@7", or a stat a line for segments (`indent` before each but the first).
std::string stats_text(const Result& r, bool segmented, const std::string& indent = " ") {
  std::string text;
  for (const OpResult& s : r.ops) {
    if (!text.empty()) text += segmented ? "\n" + indent : " ";
    const Result part = stat_part(s);
    text += std::string(to_string(s.op)) + (segmented ? " " : "=") + value_text(part, segmented);
    if (!segmented && s.index) text += "@" + std::to_string(*s.index);
  }
  return text;
}

//! The reference of a request with several ops, as a Result's stats.
Result reference_stats(const Reference& ref, const Request& q) {
  Result r;
  std::size_t k = 0;
  for (Op s : all_ops) {
    if (!q.ops.contains(s) || k >= ref.ops.size()) continue;
    const Reference& one = ref.ops[k++];
    OpResult part{s, one.value, one.index};
    for (const Reference& seg : one.results) {
      part.values.push_back(seg.value);
      if (seg.index) part.indices.push_back(*seg.index);
    }
    r.ops.push_back(std::move(part));
  }
  return r;
}

//! What --op or --ops asked for, as the output names it.
std::string what_text(const std::string& op, const Request& q) {
  if (q.ops.empty()) return op;
  std::string text;
  for (Op s : all_ops)
    if (q.ops.contains(s)) text += (text.empty() ? "" : ",") + std::string(to_string(s));
  return text;
}

//! Whether the request's results are an array (Result::values): a view that keeps an axis or its
//! dimensions, or segments.
bool listed(const Request& q) { return !result_shape(q).empty(); }

//! The elements a request reads.
std::uint64_t elements(const Request& q) {
  if (q.view.rank == 0) return q.count;
  std::uint64_t n = 1;
  for (std::size_t k = 0; k < q.view.rank; ++k) n *= static_cast<std::uint64_t>(q.view.shape[k]);
  return n;
}

//! "(3, 4, 5)".
std::string tuple_text(const std::vector<std::int64_t>& v) {
  std::string text;
  for (std::int64_t x : v) text += (text.empty() ? "" : ", ") + std::to_string(x);
  return "(" + text + ")";
}

//! A view's shape and the axes it reduces, ", shape (100, 3), axes (0)"; ", 5 segments"; or nothing.
std::string shape_text(const Request& q) {
  if (q.segments.segmented()) return ", " + std::to_string(q.segments.count) + " segments";
  if (q.view.rank == 0) return "";
  std::vector<std::int64_t> shape(q.view.shape, q.view.shape + q.view.rank), axes;
  for (std::size_t k = 0; k < q.view.rank; ++k)
    if (q.axes.contains(k)) axes.push_back(static_cast<std::int64_t>(k));
  return ", shape " + tuple_text(shape) + (axes.empty() ? ", every axis" : ", axes " + tuple_text(axes)) +
         (q.keepdims ? ", keepdims" : "");
}

//! The request's form for JSON: its shape (a flat array's is [n]), the axes it reduces, and its
//! results' shape.
void shape_json(json& out, const Request& q, const Result* r) {
  json shape = json::array(), axes = json::array();
  if (q.view.rank == 0) shape.push_back(q.count);
  for (std::size_t k = 0; k < q.view.rank; ++k) {
    shape.push_back(q.view.shape[k]);
    if (q.axes.empty() || q.axes.contains(k)) axes.push_back(k);
  }
  out["shape"] = shape;
  if (q.view.rank > 0) out["axes"] = axes;
  if (q.segments.segmented()) out["segments"] = q.segments.count;
  if (r && listed(q)) out["result_shape"] = r->shape;
}

void print_run(const RunArgs& args, const Request& q, const std::string& description, const std::string& backend_line,
               const Result& r, double seconds, Accuracy accuracy, int ranks) {
  const std::uint64_t n = elements(q);
  if (args.json) {
    const bool segmented = listed(q);
    json out{{"backend", r.backend}, {"op", what_text(args.op, q)}, {"dtype", to_string(q.dtype)}, {"n", n},
             {"accuracy", to_string(accuracy)}, {"value", value_json(r, segmented)}, {"seconds", seconds}};
    shape_json(out, q, &r);
    if (!q.ops.empty()) {
      out.erase("value");
      out["stats"] = stats_json(r, segmented);
    } else if (segmented) {
      if (returns_index(q.op)) out["index"] = indices_json(r);
    } else if (r.index) {
      out["index"] = *r.index;
    }
    if (ranks > 0) out["ranks"] = ranks;
    std::cout << out.dump() << "\n";
    return;
  }
  std::printf("data     %s, n = %llu%s\n", description.c_str(), static_cast<unsigned long long>(n), shape_text(q).c_str());
  std::printf("backend  %s\n", backend_line.c_str());
  if (!q.ops.empty()) {  // a stat a line
    for (const OpResult& st : r.ops) {
      std::printf("%-8s %s\n", std::string(to_string(st.op)).c_str(), value_text(stat_part(st), listed(q)).c_str());
      if (st.index && !listed(q)) std::printf("index    %llu\n", static_cast<unsigned long long>(*st.index));
    }
  } else {
    std::printf("%-8s %s%s\n", args.op.c_str(), value_text(r, listed(q)).c_str(),
                exact_sum(q.dtype, q.op, accuracy) ? "   (exact sum, rounded once)" : "");
    if (r.index && !listed(q)) std::printf("index    %llu\n", static_cast<unsigned long long>(*r.index));
  }
  std::printf("time     %s%s, %s GB/s\n", seconds_text(seconds).c_str(), args.repeat > 1 ? " (median)" : "",
              gbps(n * size_of(q.dtype), seconds).c_str());
}

//! The reference's results (of an array result) as a Result's values and indices.
Result reference_parts(const Reference& ref) {
  Result parts;
  for (const auto& c : ref.results) {
    parts.values.push_back(c.value);
    if (c.index) parts.indices.push_back(*c.index);
  }
  return parts;
}

int print_validation(Context& ctx, const ValidateArgs& args, const Request& q, const std::string& description,
                     const ValidationReport& report, Accuracy accuracy, int ranks) {
  const std::uint64_t n = elements(q);
  const double tol = tolerance(q, report.reference, accuracy);
  if (args.json) {
    json rows = json::array();
    for (const auto& row : report.rows) {
      json j{{"backend", row.backend}, {"exact", row.exact}, {"agrees", row.agrees}};
      if (row.ran && !q.ops.empty()) {
        j["stats"] = stats_json(*row.result, listed(q));
        j["deviation"] = std::isfinite(row.error) ? json(row.error) : json("inf");
        j["seconds"] = row.seconds;
      } else if (row.ran) {
        j["value"] = value_json(*row.result, listed(q));
        if (listed(q) && returns_index(q.op)) j["index"] = indices_json(*row.result);
        else if (row.result->index) j["index"] = *row.result->index;
        j["deviation"] = std::isfinite(row.error) ? json(row.error) : json("inf");
        j["seconds"] = row.seconds;
      } else {
        j["value"] = nullptr;
        j["error"] = row.failure;
      }
      rows.push_back(j);
    }
    const Result parts = reference_parts(report.reference);
    json reference = listed(q) ? value_json(parts, true) : value_json(report.reference.value);
    if (!q.ops.empty()) reference = stats_json(reference_stats(report.reference, q), listed(q));
    json out{{"op", what_text(args.op, q)}, {"dtype", to_string(q.dtype)}, {"n", n},
             {"accuracy", to_string(accuracy)}, {"tolerance", tol},
             {"reference", reference}, {"results", rows}, {"ok", report.ok()}};
    shape_json(out, q, nullptr);
    if (listed(q) && returns_index(q.op)) out["reference_index"] = indices_json(parts);
    else if (report.reference.index) out["reference_index"] = *report.reference.index;
    if (ranks > 0) out["ranks"] = ranks;
    std::cout << out.dump(2) << "\n";
    return report.ok() ? kExitOk : kExitDisagree;
  }
  std::printf("data       %s, n = %llu%s\n", description.c_str(), static_cast<unsigned long long>(n), shape_text(q).c_str());
  const bool several = listed(q);
  if (!q.ops.empty()) {
    std::printf("reference  of %s: %s   (tolerance %.3g)\n\n", std::string(to_string(q.dtype)).c_str(),
                stats_text(reference_stats(report.reference, q), listed(q), "           ").c_str(), tol);
    const int w = name_width(ctx.registry());
    std::printf("  %-*s %-12s %-10s %s\n", w, "backend", "|error|", "time", "verdict (every op, every segment)");
    for (const auto& row : report.rows) {
      if (!row.ran) {
        if (row.failure_code != ErrorCode::unavailable) std::printf("  %-*s %s\n", w, row.backend.c_str(), row.failure.c_str());
        continue;
      }
      char err[32];
      std::snprintf(err, sizeof err, "%.3g", row.error);
      std::printf("  %-*s %-12s %-10s %s\n", w, row.backend.c_str(), err, seconds_text(row.seconds).c_str(),
                  row.agrees ? "agrees" : row.exact ? "DISAGREES" : "disagrees (declares itself inexact)");
      if (!listed(q)) std::printf("  %-*s %s\n", w, "", stats_text(*row.result, false).c_str());
    }
    print_unavailable(report.rows);
    std::printf("\n%s\n", report.ok() ? "every backend that promises exactness agrees"
                                      : "a backend that promises exactness disagrees or failed");
    return report.ok() ? kExitOk : kExitDisagree;
  }
  const std::string reference = several ? value_text(reference_parts(report.reference), true) : report.reference.value.to_string();
  std::printf("reference  %s of %s = %s", args.op.c_str(), std::string(to_string(q.dtype)).c_str(), reference.c_str());
  if (report.reference.index && !several)
    std::printf(" at index %llu", static_cast<unsigned long long>(*report.reference.index));
  if (exact_sum(q.dtype, q.op, accuracy)) std::printf("   (accuracy exact: the same bits, or disagree)\n\n");
  else std::printf("   (tolerance %.3g)\n\n", tol);
  const int w = name_width(ctx.registry());
  std::printf("  %-*s %-22s %-12s %-10s %s\n", w, "backend", "value", "|error|", "time", "verdict");
  for (const auto& row : report.rows) {
    if (!row.ran) {
      if (row.failure_code != ErrorCode::unavailable) std::printf("  %-*s %s\n", w, row.backend.c_str(), row.failure.c_str());
      continue;
    }
    std::string value = value_text(*row.result, listed(q));
    if (row.result->index && !listed(q)) value += " @" + std::to_string(*row.result->index);
    char err[32];
    std::snprintf(err, sizeof err, "%.3g", row.error);
    std::string verdict = row.agrees ? "agrees" : row.exact ? "DISAGREES" : "disagrees (declares itself inexact)";
    std::printf("  %-*s %-22s %-12s %-10s %s\n", w, row.backend.c_str(), value.c_str(), err,
                seconds_text(row.seconds).c_str(), verdict.c_str());
  }
  print_unavailable(report.rows);
  std::printf("\n%s\n", report.ok() ? "every backend that promises exactness agrees"
                                    : "a backend that promises exactness disagrees or failed");
  return report.ok() ? kExitOk : kExitDisagree;
}

}  // namespace xreduce::cli
