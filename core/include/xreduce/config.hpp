#pragma once
//! Settings from the environment and a TOML file. Precedence, highest first:
//! Options fields > XREDUCE_BACKEND / XREDUCE_CONFIG / XREDUCE_PLUGIN_PATH > config file > defaults.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <map>
#include <string>
#include <vector>

#include "xreduce/settings.hpp"
#include "xreduce/types.hpp"

namespace xreduce {

//! Thresholds the dispatcher uses for backend = "auto" (`xreduce calibrate` measures them).
//! For every threshold here, 0 means never (for the GPU ones: host data stays on the CPU).
struct DispatchConfig {
  //! From this many elements on, host data goes to the best CPU-parallel backend (0: never, as
  //! for every threshold here).
  std::uint64_t parallel_min_count = std::uint64_t{1} << 18;
  //! The CPU-parallel backend to prefer (the fastest here, as measured); empty: by priority.
  std::string parallel_backend;
  //! From this many elements on, prefer `parallel_backend_large` instead (0: never): one CPU
  //! backend may win mid-sized arrays (cheap wake-up) and another the largest (placement).
  std::uint64_t parallel_large_min_count = 0;
  std::string parallel_backend_large;

  //! Whether `elements` fall in the large band (parallel_backend_large applies).
  bool large_parallel(std::uint64_t elements) const {
    return parallel_large_min_count != 0 && elements >= parallel_large_min_count && !parallel_backend_large.empty();
  }
  //! The CPU-parallel backend to prefer for `elements` (empty: by priority).
  const std::string& parallel_backend_for(std::uint64_t elements) const {
    return large_parallel(elements) ? parallel_backend_large : parallel_backend;
  }
  //! From this many elements on, pinned (page-locked) host data goes to the best GPU backend.
  std::uint64_t gpu_min_count_pinned = 0;
  //! The same for ordinary (pageable) host data.
  std::uint64_t gpu_min_count_pageable = 0;
  //! From this many elements on, pinned host data goes to the best CPU+GPU backend (`hybrid`:
  //! both at work on one request). Read from `hybrid_min_count_pinned` too, its old name.
  std::uint64_t cpu_gpu_min_count_pinned = 0;
  //! The same for pageable host data.
  std::uint64_t cpu_gpu_min_count_pageable = 0;

  //! What one segment of a segmented request costs a CPU backend, in elements read: `auto` weighs
  //! n elements in s segments as work(n, s) = n + segment_cost x s against every threshold here,
  //! because a million rows of 16 is not one row of 16 million (each row's own result, its
  //! lookups and its short loop cost about what reading a few more elements would). Measured by
  //! `xreduce calibrate`; 0 weighs segments by their elements alone.
  std::uint64_t segment_cost = 8;
  //! n elements in s segments (s = 0: a plain request) as elements, for the thresholds.
  std::uint64_t work(std::uint64_t elements, std::uint64_t segments) const {
    const std::uint64_t extra = segment_cost != 0 && segments > (~std::uint64_t{0} - elements) / segment_cost
                                    ? ~std::uint64_t{0} - elements
                                    : segment_cost * segments;
    return elements + extra;
  }

  //! What `auto` starts from on a machine of `hardware_threads` before `xreduce calibrate` has run
  //! (Config::load and the config files start from it): the thresholds calibration measured on
  //! the machines this project measures, a row per machine, kept as data in
  //! core/src/dispatch_defaults.cpp. (A DispatchConfig made in code keeps the values above.)
  static DispatchConfig defaults_for(unsigned hardware_threads);
  //! Where those defaults come from, in words.
  static std::string defaults_source(unsigned hardware_threads);
};

struct Config {
  std::string backend = "auto";                    //!< a registered name or "auto"
  std::vector<std::filesystem::path> plugin_path;  //!< extra plugin folders or files
  int threads = 0;                                 //!< 0: all hardware threads; at most kMaxThreads
  //! How floating sums are rounded where Options do not say (`accuracy = "exact"`).
  Accuracy accuracy = Accuracy::standard;
  //! The most threads a config file or the command may ask for (both check it).
  static constexpr int kMaxThreads = 65536;
  DispatchConfig dispatch;
  //! [backends.NAME] tables: the settings of the backend NAME, or of every backend of the plugin
  //! NAME ("cuda"); the backend parses them (Reducer::settings, configure).
  std::map<std::string, Settings, std::less<>> backend_settings;
  //! What the reader has to say of the file that is no error: keys read from where they used to
  //! be, with where they are now. The command prints them; the library never does.
  std::vector<std::string> notes;
  std::string backend_source = "default";  //!< where `backend` came from, for messages
  //! Where each [dispatch] key a file set came from ("file:line"); the others hold the defaults
  //! (DispatchConfig::defaults_for, `dispatch_defaults` says whose).
  std::map<std::string, std::string, std::less<>> dispatch_origins;
  std::string dispatch_defaults;  //!< where the defaults came from; empty for a Config made in code

  //! Parses a TOML file. Throws Error(config) naming the file, line and column.
  static Config from_file(const std::filesystem::path& file);
  //! Parses TOML text; `origin` names it in error messages.
  static Config from_string(std::string_view toml, const std::string& origin);

  //! Reads an environment variable; a test can substitute its own.
  using Environment = std::function<std::optional<std::string>(const char* name)>;
  static std::optional<std::string> process_environment(const char* name);

  //! The configuration of this process: the file named by XREDUCE_CONFIG (an error if it
  //! does not exist) or else the user's file ($XDG_CONFIG_HOME or ~/.config,
  //! xreduce/config.toml) if present, with XREDUCE_BACKEND and XREDUCE_PLUGIN_PATH on top.
  static Config load(const Environment& env = process_environment);

  //! The user's config file path, whether it exists or not.
  static std::filesystem::path user_file(const Environment& env = process_environment);
  std::filesystem::path file;  //!< the file that was read; empty if none
};

}  // namespace xreduce
