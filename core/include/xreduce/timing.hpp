#pragma once
//! Timing reductions on the host: the one warm-up rule and the one batch rule that calibration,
//! the command and the benchmarks share, for anyone who times backends alike. Header-only and
//! C++17: the nvcc-compiled benchmarks include it too.

#include <algorithm>
#include <chrono>
#include <functional>
#include <utility>
#include <vector>

namespace xreduce::timing {

using Clock = std::chrono::steady_clock;

//! How long a backend is called before it is timed: its threads awake, its buffers allocated,
//! and cores that earlier work left idle back at speed. One call was not enough on the H200
//! host: a backend timed after the single-thread one sped up over its first ten calls at 2^26
//! (1.45 ms down to 0.87).
inline constexpr int kWarmUpMilliseconds = 20;

//! Calls `call` for `milliseconds` (at least once).
template <class F>
void warm_up(F&& call, int milliseconds = kWarmUpMilliseconds) {
  const auto until = Clock::now() + std::chrono::milliseconds(milliseconds);
  do call();
  while (Clock::now() < until);
}

//! Seconds taken by the fastest of `calls` calls, to size batches by: one call caught in one of
//! a shared host's stalls (vCPUs taken away for milliseconds) would make the batch one call.
template <class F>
double fastest_call_seconds(F&& call, int calls = 3) {
  double fastest = 1e30;
  for (int k = 0; k < calls; ++k) {
    const auto t0 = Clock::now();
    call();
    fastest = std::min(fastest, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return fastest;
}

//! Calls per batch so that a batch lasts about `batch_seconds` (from the fastest of three calls,
//! also left in `fastest` if given), between 1 and `max_batch`: short calls are timed in batches,
//! so the clock's resolution and its own cost do not count.
template <class F>
int batch_size(F&& call, double batch_seconds, int max_batch = 100000, double* fastest = nullptr) {
  const double once = fastest_call_seconds(call);
  if (fastest) *fastest = once;
  return static_cast<int>(std::clamp(batch_seconds / std::max(once, 1e-9), 1.0, static_cast<double>(max_batch)));
}

//! Appends the seconds per call of `samples` batches of `batch` calls each to `out`.
template <class F>
void batch_samples(F&& call, int batch, int samples, std::vector<double>& out) {
  for (int s = 0; s < samples; ++s) {
    const auto t0 = Clock::now();
    for (int k = 0; k < batch; ++k) call();
    out.push_back(std::chrono::duration<double>(Clock::now() - t0).count() / batch);
  }
}

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

//! The rule every host-side timing follows: warm up for `warm_up_ms`, size batches to about
//! `batch_seconds`, time `samples` batches, report the median seconds per call (and every
//! sample in `raw`, if given). A sweep over sizes may warm up once, before its first size, and
//! pass 0: the calls that size each batch warm the next size.
template <class F>
double seconds_per_call(F&& call, int samples, double batch_seconds = 1e-3, std::vector<double>* raw = nullptr,
                        int warm_up_ms = kWarmUpMilliseconds) {
  if (warm_up_ms > 0) warm_up(call, warm_up_ms);
  const int batch = batch_size(call, batch_seconds);
  std::vector<double> t;
  batch_samples(call, batch, samples, t);
  if (raw) *raw = t;
  return median(t);
}

//! The same rule for calls compared with one another, taking turns: each warmed up and its batch
//! sized, then batch after batch, one of each call in turn, `samples` times. A shared host's
//! rate drifts by 10-20% over seconds; timed one after another, two calls' ratio takes in that
//! drift, in turns both see it alike. Returns each call's median seconds per call (and fills
//! `raw[k]` with call k's samples, if given).
inline std::vector<double> seconds_per_call_in_turns(const std::vector<std::function<void()>>& calls, int samples,
                                                     double batch_seconds = 1e-3,
                                                     std::vector<std::vector<double>>* raw = nullptr) {
  std::vector<int> batch;
  for (const auto& call : calls) {
    warm_up(call);
    batch.push_back(batch_size(call, batch_seconds));
  }
  std::vector<std::vector<double>> t(calls.size());
  for (int s = 0; s < samples; ++s)
    for (std::size_t k = 0; k < calls.size(); ++k) batch_samples(calls[k], batch[k], 1, t[k]);
  std::vector<double> medians;
  for (const auto& v : t) medians.push_back(median(v));
  if (raw) *raw = std::move(t);
  return medians;
}

}  // namespace xreduce::timing
