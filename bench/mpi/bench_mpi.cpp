// xreduce::mpi against bare MPI_Allreduce, one configuration per run:
//
//   mpirun -n P xreduce_bench_mpi [--log2n 30] [--threads T] [--backend NAME] [--out FILE.jsonl]
//
// Latency: a bare MPI_Allreduce of 8 bytes and of 608 (an exact sum's partials, the largest), against
// xreduce::mpi::allreduce of one element a rank (its combine, with the local call's overhead).
// Throughput: one f32 sum of 2^log2n elements over the ranks, each on T threads. Rank 0 prints a
// summary and appends one JSON line to FILE (bench/mpi/summarize.py makes the tables and the model).
// Every rank runs the same iterations; each sample starts at a barrier and is timed on rank 0.

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "barrier_timing.hpp"
#include "xreduce/mpi.hpp"
#include "xreduce/xreduce.hpp"

namespace xr = xreduce;
using xreduce::bench::barrier_timed;

namespace {

int rank_ = 0, ranks_ = 1;

std::string arg(int argc, char** argv, const char* name, const char* fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks_);
  const int log2n = std::atoi(arg(argc, argv, "--log2n", "30").c_str());
  const int threads = std::atoi(arg(argc, argv, "--threads", "0").c_str());
  const std::string backend = arg(argc, argv, "--backend", "auto");
  const std::string out = arg(argc, argv, "--out", "");
  nlohmann::json latency = nlohmann::json::array();
  auto row = [&](const std::string& what, std::size_t bytes, double seconds) {
    latency.push_back({{"what", what}, {"bytes", bytes}, {"us", seconds * 1e6}});
    if (rank_ == 0) std::printf("  %-58s %6zu B  %8.2f us\n", what.c_str(), bytes, seconds * 1e6);
  };
  if (rank_ == 0) std::printf("xreduce_bench_mpi: %d ranks, %d threads each (0: all)\nlatency, median per call:\n", ranks_, threads);

  // Bare MPI: 8 bytes, and the 608 bytes an exact sum's partials take (a 32-byte header, an ExactSum).
  double x = 1, y = 0;
  row("MPI_Allreduce, one double (MPI_SUM)", 8, barrier_timed([&] { MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); }, 1000));
  std::vector<std::int64_t> words(76, 1), sums(76);
  row("MPI_Allreduce, 76 int64 (MPI_SUM)", 608,
      barrier_timed([&] { MPI_Allreduce(words.data(), sums.data(), 76, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD); }, 1000));

  // xreduce: one element a rank, so that the local reduction costs next to nothing.
  const double one = 1.0 + rank_;
  const float onef = static_cast<float>(rank_);
  xr::Context& ctx = xr::default_context();
  const xr::Request sum{&one, 1, xr::DType::f64, xr::Op::sum, xr::Memory::host};
  const xr::Request argmax{&onef, 1, xr::DType::f32, xr::Op::argmax, xr::Memory::host};
  const xr::Options seq{.backend = "sequential"};
  const xr::Options seq_exact{.backend = "sequential", .accuracy = xr::Accuracy::exact};
  row("local reduce alone (sequential, 1 element, no MPI)", 0, barrier_timed([&] { ctx.reduce(sum, seq); }, 1000));
  // The bytes on the wire: a 32-byte header and a partial (8, an ExactSum's 576, an extreme's 24);
  // reduce also carries a failure's reason (224).
  row("xreduce::mpi::allreduce, f64 sum, 1 element a rank", 40, barrier_timed([&] { xr::mpi::allreduce(MPI_COMM_WORLD, sum, seq); }, 1000));
  row("xreduce::mpi::allreduce, f64 sum exact, 1 element a rank", 608,
      barrier_timed([&] { xr::mpi::allreduce(MPI_COMM_WORLD, sum, seq_exact); }, 1000));
  row("xreduce::mpi::allreduce, f32 argmax, 1 element a rank", 56,
      barrier_timed([&] { xr::mpi::allreduce(MPI_COMM_WORLD, argmax, seq); }, 1000));
  row("xreduce::mpi::reduce to rank 0, f64 sum, 1 element a rank", 264,
      barrier_timed([&] { xr::mpi::reduce(MPI_COMM_WORLD, sum, 0, seq); }, 1000));

  // Throughput: 2^log2n f32 over the ranks, each rank's share filled by its own threads' pages.
  const std::size_t n = std::size_t{1} << log2n;
  const std::size_t mine = n / ranks_ + (static_cast<std::size_t>(rank_) < n % ranks_ ? 1 : 0);
  std::vector<float> data(mine);
  std::mt19937 rng(12345 + rank_);
  std::uniform_real_distribution<float> unit(0.f, 1.f);
  for (auto& v : data) v = unit(rng);
  const xr::Request shard{data.data(), mine, xr::DType::f32, xr::Op::sum, xr::Memory::host};
  const xr::Options options{.backend = backend, .threads = threads};
  xr::Result r;
  const double seconds = barrier_timed([&] { r = xr::mpi::allreduce(MPI_COMM_WORLD, shard, options); }, 1, 11, 3);
  const double local = barrier_timed([&] { ctx.reduce(shard, options); }, 1, 11, 3);
  if (rank_ == 0) {
    std::printf("f32 sum of 2^%d over %d ranks: %.3f ms (%.1f GB/s), the local part alone %.3f ms; rank 0 ran %s\n", log2n,
                ranks_, seconds * 1e3, 4.0 * n / seconds / 1e9, local * 1e3, r.backend.c_str());
    const char* commit = std::getenv("XREDUCE_COMMIT");
    nlohmann::json line{{"ranks", ranks_}, {"threads", threads == 0 ? static_cast<int>(std::thread::hardware_concurrency()) : threads},
                        {"hardware_threads", std::thread::hardware_concurrency()}, {"commit", commit ? commit : "unknown"},
                        {"latency", latency},
                        {"sum", {{"log2n", log2n}, {"backend", r.backend}, {"seconds", seconds}, {"local_seconds", local},
                                 {"gbps", 4.0 * n / seconds / 1e9}}}};
    if (!out.empty()) std::ofstream(out, std::ios::app) << line.dump() << "\n";
  }
  MPI_Finalize();
  return 0;
}
