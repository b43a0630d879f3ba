#pragma once
// What the benchmark programs share: their command line, warm-up, medians, the date on their results.
// Header-only and C++17, since the GPU benchmark is compiled by nvcc.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

namespace xreduce::bench {

//! [--max-log2 L] [--repeat R] [--out DIR]; `usage` names the program and its defaults.
struct Args {
  int max_log2;
  int repeat;
  std::string out_dir;
  int exit_code = -1;  //!< >= 0: exit with it (after --help, or a bad argument)
};

inline Args parse_args(int argc, char** argv, int max_log2, int repeat, const char* usage) {
  Args args{max_log2, repeat, {}};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--max-log2" && i + 1 < argc) args.max_log2 = std::stoi(argv[++i]);
    else if (a == "--repeat" && i + 1 < argc) args.repeat = std::stoi(argv[++i]);
    else if (a == "--out" && i + 1 < argc) args.out_dir = argv[++i];
    else {
      std::fprintf(stderr, "usage: %s\n", usage);
      args.exit_code = a == "--help" ? 0 : 2;
      return args;
    }
  }
  args.repeat = std::max(args.repeat, 10);  // medians of at least 10, always
  return args;
}

//! Calls `call` for `milliseconds` (at least once) before it is timed: its threads awake, its
//! buffers allocated, and cores that earlier work left idle back at speed. One call was not
//! enough on the H200 host: a backend timed after the single-thread one sped up over its first
//! ten calls at 2^26 (1.45 ms down to 0.87).
template <class F>
void warm_up(F&& call, int milliseconds = 20) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(milliseconds);
  do call();
  while (std::chrono::steady_clock::now() < until);
}

//! Seconds taken by the fastest of `calls` calls, to size batches by: one call caught in one of
//! a shared host's stalls (vCPUs taken away for milliseconds) would make the batch one call.
template <class F>
double fastest_call_seconds(F&& call, int calls = 3) {
  double fastest = 1e30;
  for (int k = 0; k < calls; ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    call();
    fastest = std::min(fastest, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return fastest;
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

//! Today's date (UTC), for the results' JSON.
inline std::string utc_date() {
  std::string date(32, '\0');
  const std::time_t now = std::time(nullptr);
  date.resize(std::strftime(date.data(), date.size(), "%Y-%m-%d", std::gmtime(&now)));
  return date;
}

}  // namespace xreduce::bench
