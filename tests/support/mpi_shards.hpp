#pragma once
// What the MPI and NCCL tests share: one seed for every rank, and an uneven split of an array
// over the ranks of MPI_COMM_WORLD.

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "support/test_data.hpp"

namespace xreduce::test {

//! The same seed on every rank: rank 0's (run_seed(): fresh, or XREDUCE_TEST_SEED).
inline std::uint64_t shared_seed() {
  static const std::uint64_t seed = [] {
    std::uint64_t s = run_seed();
    MPI_Bcast(&s, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    return s;
  }();
  return seed;
}

//! Where each rank's shard starts in [0, n] (and, last, n), drawn alike on every rank from `rng`:
//! uneven, a quarter of them empty.
inline std::vector<std::size_t> split(std::size_t n, std::mt19937_64& rng) {
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  std::vector<std::size_t> cut(ranks + 1, 0);
  for (int r = 1; r < ranks; ++r) cut[r] = rng() % 4 == 0 ? 0 : rng() % (n + 1);
  cut[ranks] = n;
  std::sort(cut.begin(), cut.end());
  return cut;
}

}  // namespace xreduce::test
