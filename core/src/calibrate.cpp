#include "xreduce/calibrate.hpp"

#include <algorithm>
#include <cmath>
#include <chrono>
#include <fstream>
#include <limits>
#include <sstream>
#include <toml++/toml.h>

#include "xreduce/context.hpp"
#include "xreduce/timing.hpp"
#include "xreduce/error.hpp"
#include "xreduce/pinned.hpp"

namespace xreduce {
namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

//! Median seconds per call over `repeat` batches of about 0.2 ms, by the library's timing rule
//! (xreduce/timing.hpp). Each backend's sweep warms it up once, before its first size
//! (settle() below); within the sweep the calls that size each batch warm the next size.
double median_time(Reducer* r, const Request& q, const Options& o, int repeat) {
  if (!r) return kNever;
  return timing::seconds_per_call([&] { r->reduce(q, o); }, repeat, 2e-4, nullptr, /*warm_up_ms=*/0);
}

//! Whether `r` reads the setting `key`.
bool declares(const Reducer* r, const std::string& key) {
  if (!r) return false;
  for (const SettingInfo& info : r->settings())
    if (info.key == key) return true;
  return false;
}

std::string text_of(double v) {
  std::ostringstream out;
  out.precision(4);
  out << v;
  return out.str();
}

//! The size from which engine b replaces engine a (times ta, tb per size; 0 if never) that keeps
//! the worst slowdown against the faster of the two, over every measured size, smallest: one
//! noisy measurement then costs that size a little, rather than moving the threshold far.
std::uint64_t minimax_threshold(const std::vector<std::size_t>& sizes, const std::vector<double>& ta,
                                const std::vector<double>& tb) {
  auto worst = [&](std::size_t from) {
    double w = 0;
    for (std::size_t i = 0; i < sizes.size(); ++i) w = std::max(w, (i < from ? ta[i] : tb[i]) / std::min(ta[i], tb[i]));
    return w;
  };
  // From "never" down, a smaller threshold must lower the worst slowdown by 2%: below the
  // crossover the two engines tie within the noise, and the noise should not pick the size.
  std::uint64_t threshold = 0;
  double best = worst(sizes.size());
  for (std::size_t s = sizes.size(); s-- > 0;)
    if (const double w = worst(s); w < best / 1.02) {
      best = w;
      threshold = sizes[s];
    }
  return threshold;
}

//! The smallest size from which `wins` holds at every larger measured size; 0 if it never does.
std::uint64_t threshold(const std::vector<std::size_t>& sizes, const std::vector<bool>& wins) {
  std::uint64_t from = 0;
  for (std::size_t i = sizes.size(); i-- > 0;) {
    if (!wins[i]) break;
    from = sizes[i];
  }
  return from;
}

//! `hybrid` must beat the better engine alone by more than this (5%) to be chosen: the two share
//! the host's memory, so its gain is small where it has one (1.25x at 2^28 pinned on the H200
//! host), and a win of a few percent at one size was the noise between two calls, where the
//! split's own costs make it the riskier pick.
constexpr double kHybridMargin = 0.95;

std::string seconds(double s) {
  if (s == kNever) return "-";
  std::ostringstream out;
  out.precision(3);
  out << s * 1e6 << " us";
  return out.str();
}

}  // namespace

Calibration calibrate(Context& context, const CalibrationOptions& options) {
  const Registry& registry = context.registry();
  const Workload f32_sum;  // of host data: what every engine is measured on
  Reducer* serial = registry.best(Engine::cpu_serial, f32_sum);
  std::vector<Reducer*> parallels;  // every CPU-parallel backend: the fastest here is preferred
  for (const auto& c : registry.candidates(f32_sum))
    if (c.engine == Engine::cpu_parallel) parallels.push_back(c.reducer);
  Reducer* gpu = registry.best(Engine::gpu, f32_sum);
  // The CPU+GPU backend, when it takes a GPU share to tune (as `hybrid` does).
  Reducer* hybrid = registry.best(Engine::cpu_gpu, f32_sum);
  if (!declares(hybrid, "gpu_fraction") || !declares(hybrid, "gpu_fraction_pinned")) hybrid = nullptr;
  if (!serial) throw Error(ErrorCode::unavailable, "calibrate: no single-thread CPU backend");

  const std::size_t max_n = std::max<std::size_t>(options.max_count, 1024);
  std::vector<float> pageable(max_n);
  for (std::size_t i = 0; i < max_n; ++i) pageable[i] = static_cast<float>((i * 2654435761u) % 1000) * 0.001f;
  PinnedBuffer pinned(gpu ? max_n * sizeof(float) : 0, registry);
  const bool have_pinned = gpu && pinned.pinned();
  if (have_pinned) std::copy(pageable.begin(), pageable.end(), pinned.as<float>().begin());

  Calibration cal;
  std::vector<std::size_t> sizes;
  for (std::size_t n = 1024; n <= max_n; n *= 2) sizes.push_back(n);
  auto on_pageable = [&](std::size_t n) { return Request{pageable.data(), n, DType::f32, Op::sum, Memory::host}; };

  // The CPU backends: each swept over every size on its own, in two rounds, keeping each size's
  // faster round. Measured size by size in turn, a backend ran beside the other runtime's idle
  // threads, which spin for a while before they sleep (OpenMP's and oneTBB's both do), and the
  // calibration chose by that. The single-thread backend's sweep stops where it is 4x slower than
  // the fastest parallel one: it cannot win at larger sizes.
  std::vector<std::vector<double>> t_parallels(parallels.size(), std::vector<double>(sizes.size(), kNever));
  std::vector<double> t_serial(sizes.size(), kNever);
  auto settle = [&](Reducer* r) {  // the previous backend's threads asleep, this one's cores at speed
    timing::warm_up([&] { r->reduce(on_pageable(std::min<std::size_t>(max_n, 1 << 20)), {}); });
  };
  // Progress: every sweep counts the same, and within one a size by its elements (time grows with them).
  const int sweeps = 2 * static_cast<int>(parallels.size() + 1) + (gpu ? 1 : 0) + (gpu && hybrid ? 1 : 0);
  int sweep = 0;
  double all_elements = 0;
  for (std::size_t n : sizes) all_elements += static_cast<double>(n);
  auto tell = [&](const std::string& what, std::size_t i) {
    if (!options.progress) return;
    double done = 0;
    for (std::size_t k = 0; k < i; ++k) done += static_cast<double>(sizes[k]);
    options.progress(std::min(1.0, (sweep + done / all_elements) / sweeps),
                     what + " 2^" + std::to_string(static_cast<int>(std::log2(sizes[i]))) + " elements");
  };
  for (int round = 1; round <= 2; ++round) {
    for (std::size_t b = 0; b < parallels.size(); ++b, ++sweep) {
      const std::string what = std::string(parallels[b]->name()) + ", round " + std::to_string(round) + " of 2,";
      settle(parallels[b]);
      for (std::size_t i = 0; i < sizes.size(); ++i) {
        tell(what, i);
        t_parallels[b][i] = std::min(t_parallels[b][i], median_time(parallels[b], on_pageable(sizes[i]), {}, options.repeat));
      }
    }
    const std::string what = std::string(serial->name()) + ", round " + std::to_string(round) + " of 2,";
    settle(serial);
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      tell(what, i);
      double fastest_parallel = kNever;  // at the previous size
      for (const auto& t : t_parallels) fastest_parallel = std::min(fastest_parallel, i > 0 ? t[i - 1] : kNever);
      if (t_serial[i] == kNever && i > 0 && t_serial[i - 1] > 4 * fastest_parallel) break;
      t_serial[i] = std::min(t_serial[i], median_time(serial, on_pageable(sizes[i]), {}, options.repeat));
    }
    ++sweep;
  }

  // The CPU-parallel backend(s) whose worst slowdown against the fastest one, size by size from
  // 2^16 on, is smallest: auto's promise is a bound on that slowdown, not a total. One backend
  // may win the middle sizes and another the largest, so a switch at one size is allowed, when it
  // lowers the worst slowdown by more than 2%.
  std::vector<double> t_parallel(sizes.size(), kNever);  // the chosen backend at each size
  if (!parallels.empty()) {
    const std::size_t first = static_cast<std::size_t>(std::find_if(sizes.begin(), sizes.end(), [](std::size_t n) {
                                                          return n >= (std::size_t{1} << 16);
                                                        }) - sizes.begin());
    std::vector<double> fastest(sizes.size(), kNever);
    for (const auto& t : t_parallels)
      for (std::size_t i = 0; i < t.size(); ++i) fastest[i] = std::min(fastest[i], t[i]);
    // worst(low, high, s): the worst slowdown with `low` below sizes[s] and `high` from it on.
    auto worst = [&](std::size_t low, std::size_t high, std::size_t s) {
      double w = 0;
      for (std::size_t i = first; i < sizes.size(); ++i) w = std::max(w, t_parallels[i < s ? low : high][i] / fastest[i]);
      return w;
    };
    std::size_t low = 0, high = 0, split = sizes.size();
    double best_single = kNever;
    for (std::size_t b = 0; b < parallels.size(); ++b)
      if (const double w = worst(b, b, sizes.size()); w < best_single) {
        best_single = w;
        low = high = b;
      }
    double best_switch = best_single;
    for (std::size_t l = 0; l < parallels.size(); ++l)
      for (std::size_t h = 0; h < parallels.size(); ++h)
        for (std::size_t s = first + 1; l != h && s < sizes.size(); ++s)
          if (const double w = worst(l, h, s); w < best_switch && w < best_single / 1.02) {
            best_switch = w;
            low = l;
            high = h;
            split = s;
          }
    cal.dispatch.parallel_backend = std::string(parallels[low]->name());
    if (split < sizes.size()) {
      cal.dispatch.parallel_large_min_count = sizes[split];
      cal.dispatch.parallel_backend_large = std::string(parallels[high]->name());
    }
    for (std::size_t i = 0; i < sizes.size(); ++i) t_parallel[i] = t_parallels[i < split ? low : high][i];
  }

  std::vector<double> t_gpu_pageable(sizes.size(), kNever), t_gpu_pinned(sizes.size(), kNever);
  for (std::size_t i = 0; gpu && i < sizes.size(); ++i) {
    tell(std::string(gpu->name()) + ", pageable and pinned data,", i);
    t_gpu_pageable[i] = median_time(gpu, on_pageable(sizes[i]), {}, options.repeat);
    if (have_pinned)
      t_gpu_pinned[i] = median_time(gpu, Request{pinned.data(), sizes[i], DType::f32, Op::sum, Memory::host}, {}, options.repeat);
  }
  if (gpu) ++sweep;
  std::vector<bool> gpu_wins_pageable, gpu_wins_pinned;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const double cpu = std::min(t_serial[i], t_parallel[i]);
    gpu_wins_pageable.push_back(t_gpu_pageable[i] < cpu);
    gpu_wins_pinned.push_back(t_gpu_pinned[i] < cpu);
  }
  // What a segment costs, in elements: the single-thread backend on 2^16 elements in the cache,
  // flat and as rows of 16 (short rows, where the rows' own cost shows; Dispatcher weighs
  // segmented requests by it). Rows of 1, 2, 4 and 8 cost less (their loops unroll: 1 to 6
  // elements a row on the 2-core machine), other short lengths about what rows of 16 cost (13 to 20).
  {
    constexpr std::size_t kElements = std::size_t{1} << 16, kRow = 16;
    if (max_n >= kElements) {
      std::vector<float> rows_out(kElements / kRow);
      const Request flat_one = on_pageable(kElements);
      Request rows = Request::rows(flat_one.data, kElements / kRow, kRow, DType::f32, Op::sum);
      rows.memory = flat_one.memory;
      rows.out = rows_out.data();
      const double flat = median_time(serial, on_pageable(kElements), {}, options.repeat);
      const double segmented = median_time(serial, rows, {}, options.repeat);
      cal.dispatch.segment_cost = static_cast<std::uint64_t>(std::llround(std::max(0.0, kRow * (segmented / flat - 1))));
      cal.log.push_back("segments: " + std::to_string(kElements) + " elements flat " + seconds(flat) + ", as rows of " +
                        std::to_string(kRow) + " " + seconds(segmented) + ": segment_cost " +
                        std::to_string(cal.dispatch.segment_cost));
    }
  }
  const std::uint64_t parallel_from = minimax_threshold(sizes, t_serial, t_parallel);
  cal.dispatch.parallel_min_count = parallel_from;  // 0: never
  cal.dispatch.gpu_min_count_pageable = threshold(sizes, gpu_wins_pageable);
  cal.dispatch.gpu_min_count_pinned = threshold(sizes, gpu_wins_pinned);

  // Hybrid: split so both parts take the same time (from the largest size's rates), then see
  // from which size on it beats the better of CPU alone and GPU alone.
  std::vector<double> t_hybrid_pageable(sizes.size(), kNever), t_hybrid_pinned(sizes.size(), kNever);
  if (hybrid && gpu) {
    const std::size_t last = sizes.size() - 1;
    const double cpu_rate = 1 / std::min(t_serial[last], t_parallel[last]);
    // Start from the split that balances the two rates, then try around it: the parts share the
    // host's memory bandwidth, so the balance point moves when both run at once.
    auto with = [&](std::size_t n, double fraction) {
      Options o;
      if (declares(hybrid, "cpu_backend") && !cal.dispatch.parallel_backend_for(n).empty())
        o.settings.set("cpu_backend", cal.dispatch.parallel_backend_for(n), "calibrate");
      o.settings.set("gpu_fraction", text_of(fraction), "calibrate");
      return o;
    };
    auto best_split = [&](const void* data, double estimate) {
      double best_fraction = estimate, best_time = kNever;
      for (double f : {estimate * 0.7, estimate * 0.85, estimate, estimate * 1.15, estimate * 1.3}) {
        const double fraction = std::stod(text_of(std::min(f, 0.95)));  // the value the config will hold
        const double t = median_time(hybrid, Request{data, max_n, DType::f32, Op::sum, Memory::host}, with(max_n, fraction), options.repeat);
        if (t < best_time) {
          best_time = t;
          best_fraction = fraction;
        }
      }
      return best_fraction;
    };
    tell(std::string(hybrid->name()) + "'s GPU share at", last);
    double fraction_pinned = 0;
    const double fraction_pageable =
        best_split(pageable.data(), (1 / t_gpu_pageable[last]) / (1 / t_gpu_pageable[last] + cpu_rate));
    if (have_pinned) fraction_pinned = best_split(pinned.data(), (1 / t_gpu_pinned[last]) / (1 / t_gpu_pinned[last] + cpu_rate));
    Settings& tuned = cal.backend_settings[std::string(hybrid->name())];
    tuned.set("gpu_fraction_pageable", text_of(fraction_pageable), "calibrate");
    tuned.set("gpu_fraction_pinned", text_of(fraction_pinned), "calibrate");
    std::vector<bool> wins_pageable, wins_pinned;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      const std::size_t n = sizes[i];
      const double cpu = std::min(t_serial[i], t_parallel[i]);
      tell(std::string(hybrid->name()) + ", pageable and pinned data,", i);
      if (n >= (std::size_t{1} << 20)) {  // below that the split costs more than it saves
        t_hybrid_pageable[i] = median_time(hybrid, Request{pageable.data(), n, DType::f32, Op::sum, Memory::host},
                                           with(n, fraction_pageable), options.repeat);
        if (have_pinned)
          t_hybrid_pinned[i] = median_time(hybrid, Request{pinned.data(), n, DType::f32, Op::sum, Memory::host},
                                           with(n, fraction_pinned), options.repeat);
      }
      wins_pageable.push_back(t_hybrid_pageable[i] < kHybridMargin * std::min(cpu, t_gpu_pageable[i]));
      wins_pinned.push_back(t_hybrid_pinned[i] < kHybridMargin * std::min(cpu, t_gpu_pinned[i]));
    }
    cal.dispatch.cpu_gpu_min_count_pageable = threshold(sizes, wins_pageable);
    cal.dispatch.cpu_gpu_min_count_pinned = threshold(sizes, wins_pinned);
  }
  if (options.progress) options.progress(1.0, "done");
  for (std::size_t i = 0; i < sizes.size(); ++i)
    cal.log.push_back("n = " + std::to_string(sizes[i]) + ": single-thread " + seconds(t_serial[i]) + ", parallel " +
                      seconds(t_parallel[i]) + ", GPU pageable " + seconds(t_gpu_pageable[i]) + ", GPU pinned " +
                      seconds(t_gpu_pinned[i]) + ", CPU+GPU pageable " + seconds(t_hybrid_pageable[i]) + ", CPU+GPU pinned " +
                      seconds(t_hybrid_pinned[i]));
  return cal;
}

void Calibration::apply_to(Config& config) const {
  config.dispatch = dispatch;
  for (const auto& [name, settings] : backend_settings) config.backend_settings[name].merge(settings);
}

std::vector<std::pair<std::string, std::string>> Calibration::keys() const {
  auto count = [](std::uint64_t v) { return std::to_string(v); };
  std::vector<std::pair<std::string, std::string>> k{
      {"dispatch.parallel_min_count", count(dispatch.parallel_min_count)},
      {"dispatch.parallel_backend", dispatch.parallel_backend},
      {"dispatch.parallel_large_min_count", count(dispatch.parallel_large_min_count)},
      {"dispatch.parallel_backend_large", dispatch.parallel_backend_large},
      {"dispatch.gpu_min_count_pinned", count(dispatch.gpu_min_count_pinned)},
      {"dispatch.gpu_min_count_pageable", count(dispatch.gpu_min_count_pageable)},
      {"dispatch.cpu_gpu_min_count_pinned", count(dispatch.cpu_gpu_min_count_pinned)},
      {"dispatch.cpu_gpu_min_count_pageable", count(dispatch.cpu_gpu_min_count_pageable)},
      {"dispatch.segment_cost", count(dispatch.segment_cost)}};
  for (const auto& [name, settings] : backend_settings)
    for (const auto& [key, value] : settings.entries()) k.emplace_back("backends." + name + "." + key, value.text);
  return k;
}

void write_calibration(const std::filesystem::path& file, const Calibration& cal) {
  toml::table root;
  if (std::filesystem::exists(file)) {
    Config::from_file(file);  // refuse to rewrite a file that does not parse as a config
    root = toml::parse_file(file.string());
  }
  auto count = [](std::uint64_t v) { return static_cast<std::int64_t>(std::min<std::uint64_t>(v, std::uint64_t{1} << 62)); };
  toml::table dispatch = root["dispatch"].as_table() ? *root["dispatch"].as_table() : toml::table{};
  dispatch.insert_or_assign("parallel_min_count", count(cal.dispatch.parallel_min_count));
  if (!cal.dispatch.parallel_backend.empty()) dispatch.insert_or_assign("parallel_backend", cal.dispatch.parallel_backend);
  dispatch.insert_or_assign("parallel_large_min_count", count(cal.dispatch.parallel_large_min_count));
  if (!cal.dispatch.parallel_backend_large.empty())
    dispatch.insert_or_assign("parallel_backend_large", cal.dispatch.parallel_backend_large);
  else
    dispatch.erase("parallel_backend_large");
  dispatch.insert_or_assign("gpu_min_count_pinned", count(cal.dispatch.gpu_min_count_pinned));
  dispatch.insert_or_assign("gpu_min_count_pageable", count(cal.dispatch.gpu_min_count_pageable));
  dispatch.insert_or_assign("cpu_gpu_min_count_pinned", count(cal.dispatch.cpu_gpu_min_count_pinned));
  dispatch.insert_or_assign("cpu_gpu_min_count_pageable", count(cal.dispatch.cpu_gpu_min_count_pageable));
  dispatch.insert_or_assign("segment_cost", count(cal.dispatch.segment_cost));
  dispatch.erase("hybrid_min_count_pinned");  // the old names, which these replace
  dispatch.erase("hybrid_min_count_pageable");
  root.insert_or_assign("dispatch", dispatch);
  if (!cal.backend_settings.empty()) {
    toml::table backends = root["backends"].as_table() ? *root["backends"].as_table() : toml::table{};
    for (const auto& [name, settings] : cal.backend_settings) {
      toml::table table = backends[name].as_table() ? *backends[name].as_table() : toml::table{};
      for (const auto& [key, value] : settings.entries()) table.insert_or_assign(key, std::stod(value.text));
      backends.insert_or_assign(name, table);
    }
    root.insert_or_assign("backends", backends);
    if (cal.backend_settings.count("hybrid")) root.erase("hybrid");  // the old place of [backends.hybrid]
  }
  std::error_code ec;
  if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path(), ec);
  std::ofstream out(file);
  if (!out) throw Error(ErrorCode::config, "cannot write config file " + file.string());
  out << "# Thresholds measured by `xreduce calibrate`; other settings are kept as they were.\n" << root << "\n";
  if (!out) throw Error(ErrorCode::config, "cannot write config file " + file.string());
}

}  // namespace xreduce
