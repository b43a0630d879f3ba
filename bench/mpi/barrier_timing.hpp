#pragma once
// How the MPI benchmarks time a call: every rank runs the same iterations, each sample starts at
// a barrier, and rank 0's clock is the one reported.

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <vector>

namespace xreduce::bench {

//! Median seconds per call over `samples` barrier-started batches of `batch` calls, after `warm` calls.
template <class F>
double barrier_timed(F&& call, int batch, int samples = 11, int warm = 20) {
  for (int k = 0; k < warm; ++k) call();
  std::vector<double> t;
  for (int s = 0; s < samples; ++s) {
    MPI_Barrier(MPI_COMM_WORLD);
    const auto t0 = std::chrono::steady_clock::now();
    for (int k = 0; k < batch; ++k) call();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / batch);
  }
  std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
  return t[t.size() / 2];
}

}  // namespace xreduce::bench
