#pragma once
//! Measuring this machine for the dispatcher: where the CPU-parallel backends start to pay, where
//! the GPU does for host data (pageable and pinned), and how the CPU+GPU backend (`hybrid`) should
//! split.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "xreduce/config.hpp"

namespace xreduce {

class Context;

struct CalibrationOptions {
  std::size_t max_count = std::size_t{1} << 28;   //!< largest f32 array measured
  int repeat = 9;                                  //!< median of this many runs per point
  //! Told what is being measured, with the fraction of the work done (0 to 1), size by size.
  std::function<void(double done, const std::string& what)> progress;
};

struct Calibration {
  DispatchConfig dispatch;
  //! Settings measured for particular backends: the CPU+GPU backend's gpu_fraction_pinned and
  //! gpu_fraction_pageable (numbers), written to its [backends.NAME] table.
  std::map<std::string, Settings, std::less<>> backend_settings;
  //! One line per measured size: the time of each engine, for the record.
  std::vector<std::string> log;

  //! Puts the calibration into `config`, as write_calibration puts it into a file.
  void apply_to(Config& config) const;
  //! What was measured, as (key, value) pairs in config file terms: "dispatch.parallel_min_count",
  //! "backends.hybrid.gpu_fraction_pinned", ... (values as text).
  std::vector<std::pair<std::string, std::string>> keys() const;
};

//! Times f32 sums of 2^10 .. max_count elements (every power of 2) with the context's backends: the
//! best single-thread one and every CPU-parallel one (each swept on its own, twice, keeping the
//! faster round), the best GPU one on pageable and on pinned host data, and the CPU+GPU one. The
//! CPU-parallel threshold (and backends) keep the worst slowdown over the measured sizes smallest;
//! the GPU and CPU+GPU thresholds are the smallest measured size from which that engine wins at
//! every larger one (0, where it never does).
Calibration calibrate(Context& context, const CalibrationOptions& options = {});

//! Writes the calibration's [dispatch] and [backends.NAME] keys into a TOML config file, keeping
//! everything else in it; creates the file (and its folder) if needed. Throws Error(config).
void write_calibration(const std::filesystem::path& file, const Calibration& calibration);

}  // namespace xreduce
