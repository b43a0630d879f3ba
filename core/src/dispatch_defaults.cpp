// The thresholds `auto` starts from before `xreduce calibrate` has run, as data: per machine
// measured, what bench/derive_defaults.py derives from its crossover runs (the median, over the
// runs, of every backend's time at every size): the three calibrated runs at a56046a
// (bench/results/amd-epyc-2-threads/crossover-runs/calibrated-*, and for 16 threads
// bench/results/nvidia-h200/logs/crossover-runs-a56046a), where arrays under 2^20 elements began
// to be cut into 16 chunks. That made the parallel backends pay from smaller sizes (at 2^17,
// openmp took 0.35x sequential's time on 16 threads, where it had taken 0.7-1.3x), so both rows
// start them earlier than the rows from 2f512a5 (2^17 on both). The uncalibrated runs in each
// machine's crossover-runs measured these rows. The 2-thread row was rechecked on a quiet
// machine at 61fcef0 (bench/results/amd-epyc-2-threads/logs/crossover-recheck-61fcef0): from
// 2^19 up `tbb` and `openmp` lie within 1-3% of each other, either way, and `auto` costs nothing
// over its pick.
// A machine takes the row of the most hardware threads not above its own.
// - Host data never goes to the GPU alone: on both machines the CPU read it faster than the GPU
//   could be fed.
// - Pinned data goes to `hybrid` from 2^27 elements on the H200 host (0.82x of the best CPU
//   backend's time at 2^27, 0.85x at 2^28, in those runs). Asking whether data is pinned costs
//   nothing until the process has started the GPU's driver (pinned memory needs it, so until then
//   nothing is pinned): the threshold costs callers who never use the GPU nothing.
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
  std::uint64_t cpu_gpu_min_count_pinned;
  std::uint64_t segment_cost;
  std::string_view measured;  // where, and the committed result it comes from
};

constexpr std::array<Row, 2> kRows{{
    {1, std::uint64_t{1} << 15, "openmp", std::uint64_t{1} << 19, "tbb", 0, 19,
     "measured on 2 threads (AMD EPYC): bench/results/amd-epyc-2-threads/crossover-runs"},
    {16, std::uint64_t{1} << 16, "openmp", 0, "", std::uint64_t{1} << 27, 21,
     "measured on 16 threads (Intel Xeon, the H200 machine's host): bench/results/nvidia-h200/crossover-runs"},
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
  d.cpu_gpu_min_count_pinned = r.cpu_gpu_min_count_pinned;
  d.segment_cost = r.segment_cost;
  return d;
}

std::string DispatchConfig::defaults_source(unsigned hardware_threads) {
  return "default for " + std::to_string(hardware_threads) + " hardware threads, " + std::string(row_for(hardware_threads).measured);
}

}  // namespace xreduce
