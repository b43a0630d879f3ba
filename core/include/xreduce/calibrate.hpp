#pragma once
//! Measuring this machine for the dispatcher: where the CPU-parallel backends start to pay, where
//! the GPU does for host data (pageable and pinned), and how `hybrid` should split.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
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
  HybridConfig hybrid;
  //! One line per measured size: the time of each engine, for the record.
  std::vector<std::string> log;
};

//! Times f32 sums of 2^10 .. max_count elements (every power of 2) with the context's backends: the
//! best single-thread one and every CPU-parallel one (each swept on its own, twice, keeping the
//! faster round), the best GPU one on pageable and on pinned host data, and hybrid. The
//! CPU-parallel threshold (and backends) keep the worst slowdown over the measured sizes smallest;
//! the GPU and hybrid thresholds are the smallest measured size from which that engine wins at
//! every larger one (0, where it never does).
Calibration calibrate(Context& context, const CalibrationOptions& options = {});

//! Writes the calibration's [dispatch] and [hybrid] keys into a TOML config file, keeping
//! everything else in it; creates the file (and its folder) if needed. Throws Error(config).
void write_calibration(const std::filesystem::path& file, const Calibration& calibration);

}  // namespace xreduce
