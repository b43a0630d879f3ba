#pragma once
// What every suite of `xreduce_bench` shares: its arguments, the machine it ran on, a progress
// line with the time left, timing by the median of batches, and the JSON + markdown it writes.
// C++17: the GPU suites (gpu.cu) are compiled by nvcc against the CUDA module's C++17 kernels.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_common.hpp"

namespace xreduce {
class Reducer;
}

namespace xreduce::bench {

struct SuiteArgs {
  std::string out_dir;     //!< where the results go
  int min_log2 = 0;        //!< smallest size, where a suite sweeps sizes
  int max_log2 = 0;        //!< largest size; 0: the suite's default
  int repeat = 10;         //!< samples per point (the median is reported); at least 10
  bool quick = false;      //!< smoke run: small sizes, few points (tests)
  std::string config;      //!< calibrate: config file to write
  bool uncalibrated = false;  //!< crossover: auto with the default thresholds, not calibration's
  bool device_only = false;   //!< exact, statistics, views: the device-resident rows only (no host part)
};

//! The machine, for every result file: CPU, threads, GPU and driver when there is one.
nlohmann::json machine_json();
//! A name for the machine's results folder: the GPU's ("nvidia-h200") or the CPU's.
std::string machine_slug(bool gpu);

//! A line on stderr, rewritten in place: what is being measured, the share done, the time left.
class Progress {
 public:
  Progress(std::string suite, double estimated_seconds);
  //! `done` of the estimated work is finished (0..1); `what` is being measured now.
  void update(double done, const std::string& what);
  void finish();

 private:
  std::string suite_;
  std::chrono::steady_clock::time_point start_;
};

//! The share of a sweep over sizes 2^lo .. 2^hi done when size 2^l is `part` done, counting
//! each size's work as its element count (plus a fixed cost): the largest sizes dominate.
inline double sweep_done(int lo, int hi, int l, double part) {
  auto work = [](int k) { return std::ldexp(1.0, k) + 65536.0; };
  double total = 0, before = 0;
  for (int k = lo; k <= hi; ++k) {
    total += work(k);
    if (k < l) before += work(k);
  }
  return (before + part * work(l)) / total;
}

//! Median seconds per call of `call` by the library's timing rule (20 ms of warm-up, batches of
//! about 1 ms sized by the fastest of three calls; xreduce/timing.hpp); fills `raw`
//! (seconds per call of each batch) when given.
template <class F>
double time_per_call(F&& call, int samples, std::vector<double>* raw = nullptr) {
  return timing::seconds_per_call(call, samples, 1e-3, raw);
}

//! One number in a printf format, for the markdown tables.
inline std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

//! Reads `bytes` at `data` (a multiple of 8) as 64-bit words with eight independent integer sums:
//! nothing for a core to wait on but memory. In `slices` slices, run by `pool`'s threads (a
//! CPU-parallel backend's run_chunks, as a user's operator runs) or, without one, in the calling
//! thread. Returns the sum, so the loop is not removed.
std::uint64_t read_probe(const void* data, std::size_t bytes, std::size_t slices, Reducer* pool);

//! Writes NAME.json (with the schema, suite, date, commit and machine) and NAME.md in `dir`.
void write_results(const std::string& dir, const std::string& name, nlohmann::json body, const std::string& markdown);

}  // namespace xreduce::bench
