// xreduce_bench: the benchmark suites, one command each (also `xreduce bench SUITE`).
//
//   xreduce_bench SUITE [--out DIR] [--max-log2 L] [--repeat R] [--quick]
//
// Suites: progression, gpu-reduce, transfer (GPU), crossover, calibrate, cpu, dtypes, exact, segments, stats, statistics, views. Each prints an estimate of its
// time, a progress line, and a markdown table, and writes SUITE.json (every raw timing) and
// SUITE.md under DIR (default $XDG_DATA_HOME/xreduce/bench/<machine>/, outside the source tree).
// bench/plot_suites.py draws the PNGs.

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <iostream>
#include <map>
#include <random>
#include <thread>

#include "gpu.hpp"
#include "xreduce/xreduce.hpp"
#include "xreduce/backend/registry.hpp"
#include "xreduce/calibrate.hpp"
#include "xreduce/pinned.hpp"
#include "xreduce/backend/reducer.hpp"

namespace xr = xreduce;
using namespace xreduce::bench;

namespace {

std::vector<float> random_floats(std::size_t n, std::uint64_t seed) {
  std::vector<float> v(n);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0, 1);
  for (float& x : v) x = u(rng);
  return v;
}

// --- cpu: the CPU backends on all cores and on one, with their error, against read probes -----

int run_cpu(const SuiteArgs& args) {
  const int lo = args.quick ? 10 : std::max(args.min_log2, 10), hi = args.max_log2 ? args.max_log2 : (args.quick ? 14 : 28);
  xr::Context& ctx = xr::default_context();
  struct Variant {
    std::string backend;
    int threads;  // 0: all
  };
  std::vector<Variant> variants;
  for (const char* name : {"sequential", "sequential.naive", "tbb", "openmp"}) {
    xr::Reducer* r = ctx.registry().find(name);
    if (!r || !r->available()) continue;
    variants.push_back({name, 0});
    if (r->capabilities().engine() == xr::Engine::cpu_parallel) variants.push_back({name, 1});
  }
  double estimate = 0;
  for (int l = lo; l <= hi; ++l) estimate += (args.repeat + 2) * std::ldexp(4.0, l) / 3e9 * variants.size() + std::ldexp(4.0, l) / 1e8;
  Progress progress("cpu", estimate);
  const std::vector<float> data = random_floats(std::size_t{1} << hi, 7);
  nlohmann::json rows = nlohmann::json::array(), probes = nlohmann::json::array();
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  // The all-threads probe runs on the pool of the CPU-parallel backend a user's operator would get.
  xr::Workload user_code;
  user_code.user_code = true;
  xr::Reducer* pool = ctx.registry().best(xr::Engine::cpu_parallel, user_code);
  std::string md = "# CPU backends: f32 sum, all threads and one\n\nGB/s on the bytes read, median of " + std::to_string(args.repeat) +
                   "; in brackets, the share of a read probe over the same bytes (eight independent 64-bit integer sums: "
                   "one thread for single-thread runs, all " + std::to_string(cores) + " for the others, on " +
                   (pool ? std::string(pool->name()) + "'s threads" : std::string("one thread: no CPU-parallel backend")) +
                   "; below 2^16 elements the parallel backends run in one chunk on the calling thread, where they can beat "
                   "a probe that wakes a pool); relative error "
                   "against the exactly rounded sum (values uniform in [0, 1)).\n\n| N | probe, 1 thread | probe, all threads |";
  for (const Variant& v : variants) md += " " + v.backend + (v.threads == 1 ? " (1 thread)" : "") + " |";
  md += "\n|---:|---:|---:|";
  for (std::size_t k = 0; k < variants.size(); ++k) md += "---:|";
  md += "\n";
  for (int l = lo; l <= hi; ++l) {
    const std::size_t n = std::size_t{1} << l;
    const xr::Request q{data.data(), n, xr::DType::f32, xr::Op::sum, xr::Memory::host};
    progress.update(sweep_done(lo, hi, l, 0), "2^" + std::to_string(l) + ": exact reference");
    const xr::Reference ref = xr::exact_reference(q);
    const double exact = ref.value.get<float>();
    // The read probes over the same bytes: single-thread backends against the one-thread probe,
    // the parallel ones against the all-threads probe.
    volatile std::uint64_t sink = 0;
    const double probe_one = n * 4.0 / time_per_call([&] { sink = sink + read_probe(data.data(), n * 4, 1, nullptr); }, args.repeat) / 1e9;
    const double probe_all = n * 4.0 / time_per_call([&] { sink = sink + read_probe(data.data(), n * 4, cores, pool); }, args.repeat) / 1e9;
    md += "| 2^" + std::to_string(l) + " | " + fmt("%.1f", probe_one) + " | " + fmt("%.1f", probe_all) + " |";
    probes.push_back({{"log2n", l}, {"n", n}, {"one_thread_gbps", probe_one}, {"all_threads_gbps", probe_all}, {"threads", cores}});
    for (std::size_t k = 0; k < variants.size(); ++k) {
      const Variant& v = variants[k];
      progress.update(sweep_done(lo, hi, l, (k + 1.0) / (variants.size() + 1)), "2^" + std::to_string(l) + ": " + v.backend);
      xr::Reducer& r = ctx.registry().get(v.backend);
      xr::Options o;
      o.threads = v.threads;
      xr::Result result;
      std::vector<double> raw;
      const double t = time_per_call([&] { result = r.reduce(q, o); }, args.repeat, &raw);
      const double gbps = n * 4.0 / t / 1e9;
      const double rel = std::fabs(result.value.get<float>() - exact) / std::fabs(exact);
      const bool one_thread = v.threads == 1 || r.capabilities().engine() == xr::Engine::cpu_serial;
      const double probe = one_thread ? probe_one : probe_all;
      md += " " + fmt("%.1f", gbps) + " GB/s (" + fmt("%.0f", 100 * gbps / probe) + "%), err " +
            (rel == 0 ? std::string("0") : fmt("%.1e", rel)) + " |";
      rows.push_back({{"log2n", l}, {"n", n}, {"backend", v.backend}, {"threads", v.threads}, {"median_s", t}, {"gbps", gbps},
                      {"probe_gbps", probe}, {"fraction_of_probe", gbps / probe},
                      {"value", result.value.to_string()}, {"exact", ref.value.to_string()}, {"relative_error", rel},
                      {"times_s", raw}});
    }
    md += "\n";
  }
  progress.finish();
  std::fputs(md.c_str(), stdout);
  write_results(args.out_dir, "cpu", {{"dtype", "f32"}, {"op", "sum"}, {"repeat", args.repeat}, {"rows", rows}, {"probes", probes}}, md);
  return 0;
}

// --- calibrate: what `xreduce calibrate` measures, and how long it takes ------------------------

struct Calibrated {
  xr::Calibration calibration;
  double seconds;
};

Calibrated calibrate_timed(xr::Context& ctx, bool quick) {
  xr::CalibrationOptions options;
  if (quick) options.max_count = std::size_t{1} << 16;
  Progress progress("calibrate", quick ? 1 : 15);
  options.progress = [&](double done, const std::string& what) { progress.update(done, what); };
  const auto t0 = std::chrono::steady_clock::now();
  Calibrated c{xr::calibrate(ctx, options), 0};
  c.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  progress.finish();
  return c;
}

nlohmann::json dispatch_json(const xr::Calibration& c) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [key, value] : c.keys()) j[key] = value;
  return j;
}

int run_calibrate(const SuiteArgs& args) {
  const Calibrated c = calibrate_timed(xr::default_context(), args.quick);
  std::string md = "# Calibration\n\n`xreduce calibrate` took " + fmt("%.1f", c.seconds) + " s here.\n\n| key | value |\n|---|---|\n";
  const nlohmann::json result = dispatch_json(c.calibration);
  for (const auto& [key, value] : result.items()) md += "| " + key + " | " + value.dump() + " |\n";
  md += "\nMeasured (median per size):\n\n";
  for (const std::string& line : c.calibration.log) md += "- " + line + "\n";
  std::fputs(md.c_str(), stdout);
  if (!args.config.empty()) xr::write_calibration(args.config, c.calibration);
  write_results(args.out_dir, "calibrate",
                {{"seconds", c.seconds}, {"result", result}, {"log", c.calibration.log}}, md);
  return 0;
}

// --- crossover: every backend at every size, where the GPU starts to pay, and auto's regret -----

int run_crossover(const SuiteArgs& args) {
  // Calibrate first, then measure through a context that uses the calibration: the regret is
  // that of `auto` after `xreduce calibrate`, as a user would have it. Uncalibrated: `auto` as a
  // new user first runs it, on the default thresholds (DispatchConfig::defaults_for).
  const Calibrated cal = args.uncalibrated ? Calibrated{} : calibrate_timed(xr::default_context(), args.quick);
  xr::Config config = args.uncalibrated ? xr::Config::from_string("", "(the defaults)") : xr::default_context().config();
  if (!args.uncalibrated) cal.calibration.apply_to(config);
  config.backend = "auto";
  const std::string when = args.uncalibrated ? "uncalibrated: the default thresholds (" + config.dispatch_defaults + ")"
                                             : "after calibration (" + fmt("%.1f", cal.seconds) + " s)";
  xr::Context ctx(config);

  const int hi = args.max_log2 ? args.max_log2 : (args.quick ? 12 : 30), lo = args.min_log2;
  const std::size_t max_n = std::size_t{1} << hi;
  const std::vector<float> data = random_floats(max_n, 11);
  xr::PinnedBuffer pinned(max_n * sizeof(float), ctx.registry());
  if (pinned.pinned()) std::copy(data.begin(), data.end(), pinned.as<float>().begin());
  void* device = device_alloc(max_n * sizeof(float));
  if (device) copy_to_device(device, data.data(), max_n * sizeof(float));

  struct Residency {
    std::string name;
    const void* data;
    xr::Memory memory;
  };
  std::vector<Residency> residencies{{"pageable", data.data(), xr::Memory::host}};
  if (pinned.pinned()) residencies.push_back({"pinned", pinned.data(), xr::Memory::host});
  if (device) residencies.push_back({"device", device, xr::Memory::device});

  double estimate = 0;
  for (int l = lo; l <= hi; ++l) estimate += residencies.size() * (0.02 + (args.repeat + 1) * std::ldexp(4.0, l) / 2e9 * 8);
  Progress progress("crossover", estimate);
  nlohmann::json rows = nlohmann::json::array();
  std::string md = "# Crossover: every backend, f32 sum, N = 2^" + std::to_string(lo) + " to 2^" + std::to_string(hi) +
                   "\n\nTime per call through `Context::reduce` (the backend named, or `auto`), median of " +
                   std::to_string(args.repeat) + " samples or more (30 where a sample is under 2 ms), taken in three rounds over "
                   "the backends, each backend's back to back after 20 ms of warm-up calls; " + when + ". Regret = time(auto) / time(fastest exact backend). Choice regret = "
                   "time(the backend auto picks, named) / time(fastest): what the choice costs, apart from the "
                   "difference between two measurements of one backend. Auto / pick, paired: the median ratio of a batch "
                   "of auto's calls to a batch of its pick's beside it, a batch of each in turn (auto's own cost, with "
                   "the host's fast and slow spells falling on both alike). Pick / fastest, paired: the same for the pick beside "
                   "the fastest (chosen from the rounds, its margin measured afresh: the least of a dozen noisy medians is "
                   "low by luck). Paired regret = the two paired ratios multiplied.\n";
  std::map<std::string, double> worst_regret, worst_choice, worst_paired;
  for (std::size_t r_index = 0; r_index < residencies.size(); ++r_index) {
    const Residency& res = residencies[r_index];
    md += "\n## " + res.name +
          " data\n\n| N | fastest | us | auto picks | named us | auto us | regret | choice regret | auto / pick, paired | pick / fastest, paired | paired regret | GPU beats CPU |\n"
          "|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|\n";
    for (int l = lo; l <= hi; ++l) {
      const std::size_t n = std::size_t{1} << l;
      const xr::Request q{res.data, n, xr::DType::f32, xr::Op::sum, res.memory};
      std::vector<std::string> names;  // exact backends that read this memory, then auto
      for (const auto& e : ctx.registry().entries()) {
        const xr::Capabilities c = e.reducer->capabilities();
        if (c.support(q.dtype, q.op) == xr::Support::exact && c.reads(res.memory) && e.reducer->available())
          names.emplace_back(e.reducer->name());
      }
      names.emplace_back("auto");
      progress.update((r_index + sweep_done(lo, hi, l, 0)) / residencies.size(),
                      res.name + " 2^" + std::to_string(l) + " (" + std::to_string(names.size()) + " backends)");
      const std::string picked = std::string(ctx.resolve(q, {.backend = "auto"}).reducer->name());
      // Each backend's samples back to back after 20 ms of warm-up calls (run in turn call by call, one
      // backend's spinning or sleeping worker threads slow the next one down), in three rounds
      // over all backends, so that a slow spell of this shared machine does not fall on one alone.
      constexpr int kRounds = 3;
      std::vector<std::vector<double>> samples(names.size());
      std::vector<int> batch(names.size(), 1), per_round(names.size(), 1);
      for (std::size_t b = 0; b < names.size(); ++b) {
        const xr::Options o{.backend = names[b]};
        ctx.reduce(q, o);
        double once = 0;
        batch[b] = xr::timing::batch_size([&] { ctx.reduce(q, o); }, 1e-3, 100000, &once);
        // Short calls are at the mercy of the machine's other tenants: more samples where cheap.
        const int total = once * batch[b] < 2e-3 ? 3 * args.repeat : args.repeat;
        per_round[b] = (total + kRounds - 1) / kRounds;
      }
      for (int round = 0; round < kRounds; ++round)
        for (std::size_t b = 0; b < names.size(); ++b) {
          const xr::Options o{.backend = names[b]};
          warm_up([&] { ctx.reduce(q, o); });
          xr::timing::batch_samples([&] { ctx.reduce(q, o); }, batch[b], per_round[b], samples[b]);
        }
      std::size_t fastest = 0;
      std::vector<double> med(names.size());
      double best_cpu = 1e30, best_gpu = 1e30;
      for (std::size_t b = 0; b < names.size(); ++b) {
        med[b] = median(samples[b]);
        if (names[b] == "auto") continue;
        if (med[b] < med[fastest]) fastest = b;
        const xr::Engine e = ctx.registry().get(names[b]).capabilities().engine();
        if (e == xr::Engine::gpu) best_gpu = std::min(best_gpu, med[b]);
        if (e == xr::Engine::cpu_serial || e == xr::Engine::cpu_parallel) best_cpu = std::min(best_cpu, med[b]);
      }
      const double t_auto = med.back(), regret = t_auto / med[fastest];
      const std::size_t pick = static_cast<std::size_t>(std::find(names.begin(), names.end(), picked) - names.begin());
      const double t_pick = pick < names.size() ? med[pick] : t_auto, choice = t_pick / med[fastest];
      // auto beside its pick, then the pick beside the fastest: a batch of each in turn (which goes
      // first swapped every pair), so that the host's fast and slow spells fall on both alike (on
      // the H200 host one backend's time at 2^16 jumps between 5.2 and 8.5 us from round to round,
      // and a GPU call on device data between 15 and 21 us). The fastest is chosen from the rounds
      // and its margin measured afresh: the least of a dozen noisy medians is low by luck, and
      // that luck is no regret. Two different backends are each warmed up before each batch
      // (warm_each): a batch of tbb right after one of openmp ran 3 to 11 times slower on the H200
      // host (openmp's threads still spinning); auto and its pick run the same code and need not.
      // Paired regret = auto / pick x pick / fastest, both paired.
      const auto paired_ratio = [&](const std::string& first, const std::string& second, int count, int calls, bool warm_each) {
        const xr::Options o_first{.backend = first}, o_second{.backend = second};
        const auto run = [&](const xr::Options& o, std::vector<double>& out) {
          if (warm_each) warm_up([&] { ctx.reduce(q, o); });
          xr::timing::batch_samples([&] { ctx.reduce(q, o); }, calls, 1, out);
        };
        warm_up([&] {
          ctx.reduce(q, o_first);
          ctx.reduce(q, o_second);
        });
        std::vector<double> ratios, a, b;
        for (int k = 0; k < count; ++k) {
          a.clear(), b.clear();
          if (k % 2) run(o_second, b);
          run(o_first, a);
          if (k % 2 == 0) run(o_second, b);
          ratios.push_back(a.front() / b.front());
        }
        return median(ratios);
      };
      double overhead = 1, choice_paired = 1;
      if (pick < names.size()) {
        overhead = paired_ratio("auto", picked, per_round[pick] * kRounds, batch[pick], /*warm_each=*/false);
        if (pick != fastest)
          choice_paired = paired_ratio(picked, names[fastest], std::min(per_round[pick] * kRounds, 10), batch[pick], /*warm_each=*/true);
      }
      const double paired = choice_paired * overhead;
      worst_regret[res.name] = std::max(worst_regret[res.name], regret);
      worst_choice[res.name] = std::max(worst_choice[res.name], choice);
      worst_paired[res.name] = std::max(worst_paired[res.name], paired);
      const std::string gpu_wins = best_gpu < 1e30 && best_cpu < 1e30 ? (best_gpu < best_cpu ? "yes" : "no") : "-";
      md += "| 2^" + std::to_string(l) + " | " + names[fastest] + " | " + fmt("%.2f", med[fastest] * 1e6) + " | " + picked + " | " +
            fmt("%.2f", t_pick * 1e6) + " | " + fmt("%.2f", t_auto * 1e6) + " | " + fmt("%.2f", regret) + " | " +
            fmt("%.2f", choice) + " | " + fmt("%.3f", overhead) + " | " + fmt("%.3f", choice_paired) + " | " + fmt("%.2f", paired) + " | " +
            gpu_wins + " |\n";
      nlohmann::json times = nlohmann::json::object();
      for (std::size_t b = 0; b < names.size(); ++b) times[names[b]] = {{"median_s", med[b]}, {"batch", batch[b]}, {"times_s", samples[b]}};
      rows.push_back({{"residency", res.name}, {"log2n", l}, {"n", n}, {"fastest", names[fastest]}, {"auto_pick", picked},
                      {"regret", regret}, {"choice_regret", choice}, {"auto_over_pick_paired", overhead},
                      {"pick_over_fastest_paired", choice_paired},
                      {"paired_regret", paired}, {"backends", times}});
    }
  }
  if (device) device_free(device);
  progress.finish();
  md += "\nWorst regret:";
  for (const auto& [name, r] : worst_regret) md += " " + name + " " + fmt("%.2f", r) + ";";
  md += "\nWorst choice regret:";
  for (const auto& [name, r] : worst_choice) md += " " + name + " " + fmt("%.2f", r) + ";";
  md += "\nWorst paired regret:";
  for (const auto& [name, r] : worst_paired) md += " " + name + " " + fmt("%.2f", r) + ";";
  md += "\n";
  std::fputs(md.c_str(), stdout);
  write_results(args.out_dir, args.uncalibrated ? "crossover-uncalibrated" : "crossover",
                {{"dtype", "f32"}, {"op", "sum"}, {"repeat", args.repeat}, {"uncalibrated", args.uncalibrated},
                 {"defaults", config.dispatch_defaults}, {"calibration_seconds", cal.seconds},
                 {"calibration", dispatch_json(cal.calibration)}, {"worst_regret", worst_regret},
                 {"worst_choice_regret", worst_choice}, {"worst_paired_regret", worst_paired}, {"rows", rows}},
                md);
  return 0;
}

// --- transfer's CPU columns -------------------------------------------------------------------

int run_transfer_suite(const SuiteArgs& args) {
  xr::Context& ctx = xr::default_context();
  auto timer = [&](std::string backend) -> HostTimer {
    return [&ctx, backend, repeat = args.repeat](const float* x, std::size_t n) {
      const xr::Request q{x, n, xr::DType::f32, xr::Op::sum, xr::Memory::host};
      const xr::Options o{.backend = backend};
      return time_per_call([&] { ctx.reduce(q, o); }, repeat);
    };
  };
  std::string best = "sequential";
  for (const auto& e : ctx.registry().entries())
    if (e.reducer->capabilities().engine() == xr::Engine::cpu_parallel && e.reducer->available()) {
      best = std::string(e.reducer->name());
      if (!ctx.config().dispatch.parallel_backend.empty()) best = ctx.config().dispatch.parallel_backend;
      break;
    }
  TransferCpu cpu{timer("sequential.naive"), timer(best), best, {}};
  if (xr::Reducer* h = ctx.registry().find("hybrid"); h && h->available()) cpu.hybrid = timer("hybrid");
  return run_transfer(args, cpu);
}

//! Where results go by default: $XDG_DATA_HOME/xreduce/bench, else ~/.local/share/xreduce/bench,
//! else (no home) xreduce-bench-results in the current folder.
std::string default_results_root() {
  if (const char* data = std::getenv("XDG_DATA_HOME"); data && *data) return std::string(data) + "/xreduce/bench";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.local/share/xreduce/bench";
  return "xreduce-bench-results";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"xreduce_bench: benchmark suites, each writing SUITE.json and SUITE.md"};
  std::string suite;
  SuiteArgs args;
  const std::map<std::string, std::string> suites{
      {"progression", "seed 004's Table 1: the kernel progression, CUB and Thrust, against the read probe (GPU)"},
      {"gpu-reduce", "every CUDA backend, device data, 2^10 to 2^30, and records, against the read probe (GPU)"},
      {"transfer", "seed 000's tables 1-3: H2D + kernel + D2H against the CPU, by size and block size (GPU)"},
      {"crossover", "every backend from 2^0 to 2^30 elements, host and device data: auto's choice and regret"},
      {"calibrate", "what `xreduce calibrate` measures, and how long it takes"},
      {"cpu", "the CPU backends on all threads and one, with their relative error"},
      {"dtypes", "sums of every element type over the same bytes against the read probes, host and device data; on the GPU, CUB, several ops and exact sums of the 16-bit floats"},
      {"exact", "exact sums against plain ones, f32 and f64, every backend with both, host and device data"},
      {"segments", "per-segment sums: CPU rows against flat sums, device data against cub::DeviceSegmentedReduce and the read probe"},
      {"stats", "several ops in one pass (sum, min, max, argmax) against a plain sum and against four calls, host and device data"},
      {"statistics", "mean, var, std, the norms, logsumexp, the nan* ops and exact mean and var on the CPU backends (host data) and on cuda.shuffle (device data, where a GPU is), against the read probe and a plain sum"},
      {"views", "N-D views (rows, columns, a middle axis, a transpose, a cube, reversed) reduced in place against copy + reduce, host data; "
                "device data in the N-D targets' shapes against the read probe"}};
  std::string help = "Suite:";
  for (const auto& [name, what] : suites) help += "\n  " + name + ": " + what;
  app.add_option("suite", suite, help)->required()->check(CLI::IsMember([&] {
    std::vector<std::string> names;
    for (const auto& [name, what] : suites) names.push_back(name);
    return names;
  }()));
  app.add_option("--out", args.out_dir,
                 "Results folder (default: $XDG_DATA_HOME/xreduce/bench/<machine>, else ~/.local/share/xreduce/bench/<machine>)");
  app.add_option("--min-log2", args.min_log2, "Smallest size, as a power of 2 (where a suite sweeps sizes)")->check(CLI::Range(0, 34));
  app.add_option("--max-log2", args.max_log2, "Largest size, as a power of 2 (0: the suite's own)")->check(CLI::Range(0, 34));
  app.add_option("--repeat", args.repeat, "Samples per point, at least 10 (the median is reported)")->capture_default_str();
  app.add_flag("--quick", args.quick, "Small sizes only: a smoke run");
  app.add_flag("--device-only", args.device_only, "dtypes, exact, segments, statistics, views: only the rows of device-resident data (no host part)");
  app.add_option("--config", args.config, "calibrate: also write the thresholds into this config file");
  app.add_flag("--uncalibrated", args.uncalibrated,
               "crossover: auto on the default thresholds, as before `xreduce calibrate` (writes crossover-uncalibrated.*)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help: CLI11 prints it
    // As the xreduce command says its errors: one line, exit 2 (CLI11's own codes run to 100s).
    std::cerr << "xreduce_bench: error: " << e.what() << "\n(xreduce bench --help)\n";
    return 2;
  }
  args.repeat = std::max(args.repeat, 10);
  const bool gpu_suite = suite == "progression" || suite == "transfer" || suite == "gpu-reduce";
  // Results go outside the source tree unless asked: a benchmark run from a checkout should not
  // leave files among the committed ones (scripts/ pass --out bench/results/... when they mean to).
  if (args.out_dir.empty()) args.out_dir = default_results_root() + "/" + machine_slug(gpu_suite || gpu_info().present);
  try {
    if (suite == "cpu") return run_cpu(args);
    if (suite == "exact") return run_exact(args);
    if (suite == "segments") return run_segments(args);
    if (suite == "stats") return run_stats(args);
    if (suite == "statistics") return run_statistics(args);
    if (suite == "dtypes") return run_dtypes(args);
    if (suite == "views") return run_views(args);
    if (suite == "calibrate") return run_calibrate(args);
    if (suite == "crossover") return run_crossover(args);
    if (suite == "progression") return run_progression(args);
    if (suite == "gpu-reduce") return run_gpu_reduce(args);
    return run_transfer_suite(args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "\nxreduce_bench %s: %s\n", suite.c_str(), e.what());
    return 1;
  }
}
