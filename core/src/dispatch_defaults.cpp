// The thresholds `auto` starts from before `xreduce calibrate` has run: what calibration measured
// on the machines this project measures, as data. A machine takes the row of the most hardware
// threads not above its own. Both calibrations so far found the host data's GPU thresholds at 0
// (the CPU read host memory faster than the GPU could be fed), so no row sends host data to the GPU.
// The H200 host's calibrations did find `hybrid` faster on pinned data from 2^27 elements on
// (bench/results/nvidia-h200/crossover-runs/calibrated-*.json), but no row says so: a threshold
// for pinned data makes every host request above it ask the driver whether it is pinned, which
// starts the GPU (about 300 ms) for callers who never use it. `xreduce calibrate` sets it there.
// A single calibration's parallel_min_count moves between runs (on 2 threads: 2048 to 131072 in
// four runs at 6d8375a): the rows keep what the crossover runs' median regret bore out.
// segment_cost: calibrate's measure (rows of 16 against a flat sum), 19 on 2 threads; on 16, the
// median of five calibrations on the H200 host at 73f59fc (20 to 31; bench/results/nvidia-h200/logs/segment-cost-73f59fc.log).

#include <array>
#include <string>
#include <string_view>

#include "xreduce/config.hpp"

namespace xreduce {
namespace {

struct Row {
  unsigned threads;  // this row applies from this many hardware threads on
  std::uint64_t parallel_min_count;
  std::string_view parallel_backend;
  std::uint64_t parallel_large_min_count;
  std::string_view parallel_backend_large;
  std::uint64_t segment_cost;
  std::string_view measured;  // where, and the committed result it comes from
};

constexpr std::array<Row, 2> kRows{{
    {1, std::uint64_t{1} << 16, "openmp", 0, "", 19,
     "calibrated on 2 threads (AMD EPYC): bench/results/amd-epyc-2-threads/calibrate.md"},
    {16, std::uint64_t{1} << 17, "openmp", std::uint64_t{1} << 25, "tbb", 21,
     "calibrated on 16 threads (Intel Xeon, the H200 machine's host): bench/results/nvidia-h200/calibrate.md"},
}};

const Row& row_for(unsigned hardware_threads) {
  const Row* chosen = &kRows.front();
  for (const Row& r : kRows)
    if (r.threads <= hardware_threads) chosen = &r;
  return *chosen;
}

}  // namespace

DispatchConfig DispatchConfig::defaults_for(unsigned hardware_threads) {
  const Row& r = row_for(hardware_threads);
  DispatchConfig d;
  d.parallel_min_count = r.parallel_min_count;
  d.parallel_backend = r.parallel_backend;
  d.parallel_large_min_count = r.parallel_large_min_count;
  d.parallel_backend_large = r.parallel_backend_large;
  d.segment_cost = r.segment_cost;
  return d;
}

std::string DispatchConfig::defaults_source(unsigned hardware_threads) {
  return "default for " + std::to_string(hardware_threads) + " hardware threads, " + std::string(row_for(hardware_threads).measured);
}

}  // namespace xreduce
