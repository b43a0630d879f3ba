// The xreduce command: a tour of the machine's backends, and list / run / validate.
// Exit codes: 0 ok, 1 a backend that promises exactness disagreed, 2 usage or input error.

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <thread>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "args.hpp"
#include "distributed.hpp"
#include "input.hpp"
#include "output.hpp"
#include "xreduce/xreduce.hpp"
#include "xreduce/timing.hpp"
#include "xreduce/backend/features.hpp"
#include "xreduce/backend/registry.hpp"
#include "xreduce/calibrate.hpp"
#include "xreduce/device_buffer.hpp"
#include "xreduce/backend/reducer.hpp"

namespace xr = xreduce;
using nlohmann::json;
using namespace xreduce::cli;  // the output helpers (output.hpp)

namespace {

using xr::timing::median;

// --- xreduce (no subcommand): the tour -----------------------------------------------------

int tour(xr::Context& ctx) {
  std::printf("xreduce %s: reductions on the best engine for the call\n\n", XREDUCE_VERSION_STRING);
  std::printf("machine: %s\n\nbackends:\n", machine_line().c_str());
  print_backends(ctx);

  const std::size_t n = std::size_t{1} << 24;
  xr::cli::Array a = xr::cli::generate(xr::DType::f32, n, 1);
  xr::Request q{a.data, a.count, a.dtype, xr::Op::sum, xr::Memory::host};
  std::printf("\nsum of 2^24 random f32 (seed 1), each available backend, median of 5 runs:\n");
  xr::ValidationReport report = xr::validate(ctx, q);
  std::printf("  reference (exactly rounded): %s\n", report.reference.value.to_string().c_str());
  const int w = name_width(ctx.registry());
  std::printf("  %-*s %-14s %-10s %-10s %-8s %s\n", w, "backend", "value", "agrees", "time", "GB/s", "");
  for (const auto& row : report.rows) {
    if (!row.ran) {
      if (row.failure_code != xr::ErrorCode::unavailable) std::printf("  %-*s %s\n", w, row.backend.c_str(), row.failure.c_str());
      continue;
    }
    std::vector<double> times{row.seconds};
    xr::Reducer& r = ctx.registry().get(row.backend);
    for (int k = 0; k < 4; ++k) {
      auto t0 = std::chrono::steady_clock::now();
      r.reduce(q);
      times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    const double t = median(times);
    std::printf("  %-*s %-14s %-10s %-10s %-8s %s\n", w, row.backend.c_str(), row.result->value.to_string().c_str(),
                row.agrees ? "yes" : (row.exact ? "NO" : "no"), seconds_text(t).c_str(),
                gbps(n * sizeof(float), t).c_str(), row.exact ? "" : "(declares itself inexact)");
  }
  auto choice = ctx.resolve(q, {.backend = "auto"});
  print_unavailable(report.rows);
  std::printf("\nauto picks '%s' here: %s\n", std::string(choice.reducer->name()).c_str(), choice.reason.c_str());
  std::printf("\nNext: xreduce list | xreduce run --help | xreduce validate --help | xreduce bench --help\n");
  return report.ok() ? kExitOk : kExitDisagree;
}

// --- xreduce list --------------------------------------------------------------------------

//! Each backend's own settings ([backends.NAME] in the config file, --set per call).
void print_settings(xr::Context& ctx) {
  std::printf("\nsettings (config [backends.NAME] for a backend or a plugin, or --set KEY=VALUE on run and validate):\n");
  for (const auto& e : ctx.registry().entries())
    for (const xr::SettingInfo& s : e.reducer->settings())
      std::printf("  %-25s %-22s %-10s %s\n", std::string(e.reducer->name()).c_str(), s.key.c_str(),
                  s.default_value.empty() ? "-" : s.default_value.c_str(), s.doc.c_str());
}

int list(xr::Context& ctx, bool as_json) {
  if (!as_json) {
    std::printf("backends (highest priority first):\n");
    print_backends(ctx);
    std::printf("\ncapabilities: the requests each backend does, a set a line (a request runs where one set holds its dtype,\n"
                "op, layout, memory and accuracy; layouts: all = a flat array, inner = rows, outer = columns/records,\n"
                "middle = batches of columns, strided = any other view, ragged = segments at offsets):\n");
    for (const auto& e : ctx.registry().entries()) {
      const xr::Capabilities c = e.reducer->capabilities();
      const std::string name(e.reducer->name());
      bool first = true;
      for (const xr::FeatureSet& s : c) {
        std::printf("  %-*s %s\n", name_width(ctx.registry()), first ? name.c_str() : "", feature_set_text(s).c_str());
        first = false;
      }
      if (first) std::printf("  %-*s (nothing)\n", name_width(ctx.registry()), name.c_str());
    }
    print_settings(ctx);
    print_dispatch(ctx);
    return kExitOk;
  }
  json out = json::array();
  for (const auto& e : ctx.registry().entries()) {
    xr::Capabilities c = e.reducer->capabilities();
    xr::Availability a = e.reducer->available();
    json settings = json::array();
    for (const xr::SettingInfo& s : e.reducer->settings())
      settings.push_back({{"key", s.key}, {"default", s.default_value}, {"doc", s.doc}});
    json sets = json::array();
    std::uint32_t layouts = 0;
    for (const xr::FeatureSet& s : c) {
      sets.push_back(feature_set_json(s));
      layouts |= s.layout_bits();
    }
    xr::Features exact_sum;
    exact_sum.accuracy = xr::Accuracy::exact;
    json layout_names = json::array();
    for (xr::Layout l : xr::all_layouts)
      if (layouts & (1u << static_cast<unsigned>(l))) layout_names.push_back(to_string(l));
    out.push_back({{"backend", e.reducer->name()}, {"engine", to_string(c.engine())}, {"priority", e.priority},
                   {"origin", e.origin}, {"available", a.ok}, {"reason", a.reason}, {"capabilities", sets},
                   {"host_memory", c.reads(xr::Memory::host)}, {"device_memory", c.reads(xr::Memory::device)},
                   {"layouts", layout_names}, {"exact_sums", c.support(exact_sum) != xr::Support::none},
                   {"settings", settings}});
  }
  std::cout << out.dump(2) << "\n";
  return kExitOk;
}

// --- xreduce run ---------------------------------------------------------------------------

//! `a` copied into `buffer` (device memory, allocated here): the same array where the GPU reads it.
xr::cli::Array on_device(const xr::cli::Array& a, std::optional<xr::DeviceBuffer>& buffer, const xr::Registry& registry) {
  if (!a.data) return a;
  const std::size_t bytes = a.count * xr::size_of(a.dtype);
  buffer.emplace(bytes, registry);
  buffer->copy_from(a.data, bytes);
  xr::cli::Array copy = a;
  copy.data = buffer->data();
  copy.description += ", in device memory";
  return copy;
}

int run(xr::Context& ctx, const RunArgs& args, const DataArgs& d) {
  const bool device = args.memory == "device";
  if (d.distributed && device)
    throw CLI::ValidationError("--memory device with --distributed: the ranks' shards are host memory here (xreduce::nccl "
                               "reduces device shards from C++)");
  if (d.distributed) return run_distributed(ctx, args, d);
  xr::cli::Array a = load(d);
  xr::cli::Array offsets = load_offsets(d);
  const auto [op, ops] = ops_of(args.op, args.ops);
  // Host memory, which the command read or made itself: said so, no module is asked where it
  // lives, and a CPU reduction never starts the GPU's driver. With --memory device, the data and
  // the segments' offsets (the kernels read both) are copied to the GPU first.
  std::optional<xr::DeviceBuffer> data_buffer, offsets_buffer;
  if (device) {
    a = on_device(a, data_buffer, ctx.registry());
    offsets = on_device(offsets, offsets_buffer, ctx.registry());
  }
  const xr::Request q = request_for(a, d, op, device ? xr::Memory::device : xr::Memory::host, offsets, ops);
  xr::Options o = options_of(args.backend, args.block_size, args.threads, args.accuracy, args.settings);
  if (!args.result_dtype.empty()) o.result_dtype = xr::parse_dtype(args.result_dtype);
  const xr::Accuracy accuracy = o.accuracy.value_or(ctx.config().accuracy);
  auto choice = ctx.resolve(q, o);
  // Many results (rows, segments, axes kept) are timed going to a buffer of their own in host
  // memory, made and touched before the clock starts, as a program that keeps them would have:
  // Result::values, a Scalar made for each result, is the printing's, not the reduction's. Timed
  // with them, 2^22 rows of 4 f32 took 34 ms on one thread and on two alike, where the sum takes
  // 3. (Host memory for device data too: it is what Result::values came through, and exact
  // partials handed back, as of exact column sums, are rounded into the buffer on the host.) One
  // more call, untimed, gives the values printed.
  xr::Request timed = q;
  std::vector<unsigned char> values;
  std::vector<std::uint64_t> indices;
  const std::vector<std::int64_t> shape = xr::result_shape(q);
  if (!shape.empty() && q.ops.empty()) {
    const std::size_t results = xr::result_count(q);
    values.assign(std::max<std::size_t>(1, results * xr::size_of(xr::result_dtype(q.dtype, q.op, o.result_dtype))), 0);
    timed.out = values.data();
    if (xr::returns_index(q.op)) indices.assign(std::max<std::size_t>(1, results), 0), timed.out_index = indices.data();
  }
  std::vector<double> times;
  xr::Result r;
  for (int k = 0; k < args.repeat; ++k) {
    auto t0 = std::chrono::steady_clock::now();
    r = ctx.reduce(timed, o);
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  if (timed.out) r = ctx.reduce(q, o);  // the values to print
  print_run(args, q, a.description, r.backend + " (" + choice.reason + ")", r, median(times), accuracy);
  if (!args.output.empty()) write_output(args.output, q, r);
  return kExitOk;
}

// --- xreduce validate ----------------------------------------------------------------------

int validate(xr::Context& ctx, const ValidateArgs& args, const DataArgs& d) {
  if (d.distributed) return validate_distributed(ctx, args, d);
  xr::cli::Array a = load(d);
  const xr::cli::Array offsets = load_offsets(d);
  const auto [op, ops] = ops_of(args.op, args.ops);
  const xr::Request q = request_for(a, d, op, xr::Memory::host, offsets, ops);
  const xr::Options o = options_of({}, args.block_size, args.threads, args.accuracy);
  const xr::Accuracy accuracy = o.accuracy.value_or(ctx.config().accuracy);
  return print_validation(ctx, args, q, a.description, xr::validate(ctx, q, o, args.backends), accuracy);
}

// --- xreduce bench -------------------------------------------------------------------------

//! Runs xreduce_bench (installed beside this program) with the arguments after `bench`.
int run_bench(const std::vector<std::string>& rest, const char* argv0) {
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) self = argv0;
  const std::filesystem::path program = self.parent_path() / "xreduce_bench";
  if (!std::filesystem::exists(program)) {
    std::cerr << "xreduce: error: " << program.string() << " is missing (it is built with the benchmarks)\n";
    return kExitUsage;
  }
  std::vector<std::string> args{program.string()};
  args.insert(args.end(), rest.begin(), rest.end());
  if (rest.empty()) args.push_back("--help");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  execv(program.c_str(), argv.data());
  std::cerr << "xreduce: error: cannot run " << program.string() << ": " << std::strerror(errno) << "\n";
  return kExitUsage;
}

// --- xreduce calibrate ----------------------------------------------------------------------

struct CalibrateArgs {
  std::string config;
  std::size_t max_count = std::size_t{1} << 28;
  bool dry_run = false;
};

int calibrate(xr::Context& ctx, const CalibrateArgs& args) {
  std::filesystem::path file = args.config;
  if (file.empty()) file = ctx.config().file.empty() ? xr::Config::user_file() : ctx.config().file;
  if (file.empty() && !args.dry_run) throw CLI::ValidationError("no config file to write: give --config FILE");
  xr::CalibrationOptions options;
  options.max_count = args.max_count;
  options.progress = [](double done, const std::string& what) {
    std::fprintf(stderr, "\rcalibrate: %3.0f%%  %-60s", 100 * done, what.c_str());
  };
  const auto t0 = std::chrono::steady_clock::now();
  const xr::Calibration cal = xr::calibrate(ctx, options);
  std::fputc('\n', stderr);  // past the progress line
  for (const auto& line : cal.log) std::printf("  %s\n", line.c_str());
  std::printf("\n");
  for (const auto& [key, value] : cal.keys()) std::printf("%s = %s\n", key.c_str(), value.empty() ? "\"\"" : value.c_str());
  std::printf("(thresholds: 0 is never)\n");
  std::printf("measured in %.1f s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  if (args.dry_run) return kExitOk;
  xr::write_calibration(file, cal);
  std::printf("written to %s\n", file.c_str());
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"xreduce: reduce large arrays (sum, prod, min, max, argmin, argmax, sumsq; mean, var, std, norms, logsumexp, nan*), whole or along axes, on the best engine.\n"
               "With no subcommand: a tour of this machine's backends on 2^24 random f32.\n"
               "Environment: XREDUCE_BACKEND, XREDUCE_CONFIG, XREDUCE_PLUGIN_PATH (see docs/dispatch.md).\n"
               "Exit codes: 0 ok, 1 a backend that promises exactness disagreed, 2 usage or input error.",
               "xreduce"};
  app.set_version_flag("--version", XREDUCE_VERSION_STRING);
  app.require_subcommand(0, 1);

  bool list_json = false;
  auto* list_cmd = app.add_subcommand("list", "Backends, their capabilities, and whether they can run here");
  list_cmd->add_flag("--json", list_json, "Print JSON");

  RunArgs run_args;
  DataArgs run_data;
  auto* run_cmd = app.add_subcommand("run", "One reduction, timed (the reduction alone, not loading or generating; many results go to a host buffer of their own while timed)");
  run_cmd->add_option("--backend", run_args.backend,
                      "A backend name (see `xreduce list`) or auto; default: XREDUCE_BACKEND, else the config file, else auto");
  add_op_options(run_cmd, run_args.op, run_args.ops, run_data.correction);
  add_data_options(run_cmd, run_data);
  add_how_options(run_cmd, run_args.block_size, run_args.threads, run_args.accuracy);
  run_cmd->add_option("--result-dtype", run_args.result_dtype,
                      "Sums, products and sums of squares of floats: the result's type, f32 or f64 as wide as the element "
                      "type or wider (an f16 sum as f32 is finite past 65504); default: the element type")
      ->check(CLI::IsMember({"f32", "f64", "f16", "bf16"}));
  run_cmd->add_option("--set", run_args.settings, "KEY=VALUE: a setting of the backend that runs (`xreduce list` shows each backend's); repeatable");
  run_cmd->add_option("--repeat", run_args.repeat, "Run this many times and report the median time")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  run_cmd->add_flag("--json", run_args.json, "Print one JSON document: backend, op, dtype, n, shape, axes, accuracy, value (a list for results that are an array, with result_shape), index, seconds; with --ops, stats: each op's value (and index)");
  run_cmd->add_option("--memory", run_args.memory,
                      "Where the data is when it is reduced: host, or device (copied to the current GPU first, through the CUDA "
                      "module; the time is the reduction's alone, as for host data). Not with --distributed")
      ->check(CLI::IsMember({"host", "device"}))
      ->capture_default_str();
  run_cmd->add_option("--output", run_args.output,
                      "Write the results to FILE.npy, an array of their shape (0-d for one result): the values, or for "
                      "argmin/argmax the indices (int64), as numpy's argmax(axis=) gives them");

  ValidateArgs val_args;
  DataArgs val_data;
  auto* val_cmd = app.add_subcommand("validate",
                                     "Every capable backend on the same data against an exact reference; exit 1 if a "
                                     "backend that promises exactness disagrees");
  add_op_options(val_cmd, val_args.op, val_args.ops, val_data.correction);
  add_data_options(val_cmd, val_data);
  val_cmd->add_option("--backends", val_args.backends, "Only these backends (comma-separated)")->delimiter(',');
  add_how_options(val_cmd, val_args.block_size, val_args.threads, val_args.accuracy);
  val_cmd->add_flag("--json", val_args.json, "Print one JSON document: reference and results");

  CalibrateArgs cal_args;
  auto* cal_cmd = app.add_subcommand("calibrate",
                                     "Measure where this machine's backends pay (CPU-parallel, GPU for pageable and "
                                     "pinned host data, hybrid split, what a segment costs) and write the thresholds to the config file");
  cal_cmd->add_option("--config", cal_args.config,
                      "Config file to update (default: XREDUCE_CONFIG, else ~/.config/xreduce/config.toml)");
  cal_cmd->add_option("--max-count", cal_args.max_count, "Largest f32 array measured")
      ->check(CLI::Range(std::size_t{1} << 12, std::size_t{1} << 31))
      ->capture_default_str();
  cal_cmd->add_flag("--dry-run", cal_args.dry_run, "Measure and print, write nothing");

  auto* bench_cmd = app.add_subcommand(
      "bench", "Run a benchmark suite (progression, gpu-reduce, transfer, crossover, calibrate, cpu, dtypes, exact, segments, stats, statistics, views): xreduce bench SUITE [--out DIR] "
               "[--max-log2 L] [--repeat R] [--quick]; `xreduce bench --help` lists them. Runs xreduce_bench beside this program");
  bench_cmd->prefix_command();  // everything after `bench` goes to xreduce_bench as it is
  bench_cmd->set_help_flag();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version: CLI11 prints them
    // One style for every error, the parser's and the program's: one line, then where to look.
    std::cerr << "xreduce: error: " << e.what() << "\n(xreduce --help, or xreduce SUBCOMMAND --help)\n";
    return kExitUsage;
  }
  if (bench_cmd->parsed()) return run_bench(bench_cmd->remaining(), argv[0]);
  try {
    xr::Context ctx;
    for (const std::string& note : ctx.notes()) std::cerr << "xreduce: note: " << note << "\n";
    if (list_cmd->parsed()) return list(ctx, list_json);
    if (run_cmd->parsed()) return run(ctx, run_args, run_data);
    if (val_cmd->parsed()) return validate(ctx, val_args, val_data);
    if (cal_cmd->parsed()) return calibrate(ctx, cal_args);
    return tour(ctx);
  } catch (const CLI::ParseError& e) {
    std::cerr << "xreduce: error: " << e.what() << "\n";
    return kExitUsage;
  } catch (const xr::Error& e) {
    std::cerr << "xreduce: error: " << e.what() << "\n";
    return kExitUsage;
  } catch (const std::bad_alloc&) {
    std::cerr << "xreduce: error: out of memory\n";
    return kExitUsage;
  }
}
