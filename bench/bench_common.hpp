#pragma once
// What the benchmark programs share: their command line, the timing rule (xreduce/timing.hpp),
// the date on their results.
// Header-only and C++17, since the GPU benchmark is compiled by nvcc.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

#include "xreduce/timing.hpp"

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

// The timing rule (warm-up, batches, median) is the library's own, shared with calibration.
using xreduce::timing::fastest_call_seconds;
using xreduce::timing::median;
using xreduce::timing::warm_up;

//! Today's date (UTC), for the results' JSON.
inline std::string utc_date() {
  std::string date(32, '\0');
  const std::time_t now = std::time(nullptr);
  date.resize(std::strftime(date.data(), date.size(), "%Y-%m-%d", std::gmtime(&now)));
  return date;
}

}  // namespace xreduce::bench
