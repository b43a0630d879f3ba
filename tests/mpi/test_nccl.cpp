// xreduce::nccl on device-resident shards, one rank per GPU (mpirun -n 2 on a machine with two
// GPUs; it skips, saying so, where there are fewer GPUs than ranks). Every rank draws the whole
// array from one seed (rank 0's, printed, or XREDUCE_TEST_SEED), copies its shard of a random
// uneven split (some shards empty) to its GPU, and checks the result against the whole array's
// exact reference; and against MPI's combine of the same shards. Checks never stop a test
// early, so that every rank makes the same collective calls.

#define DOCTEST_CONFIG_IMPLEMENT
#include <cuda_runtime.h>
#include <doctest/doctest.h>
#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "support/mpi_shards.hpp"
#include "xreduce/mpi.hpp"
#include "xreduce/nccl.hpp"
#include "xreduce/validate.hpp"
#include "xreduce/xreduce.hpp"

namespace xr = xreduce;
using xr::test::shared_seed, xr::test::split;

namespace {

int rank_ = 0, ranks_ = 1;
ncclComm_t comm_ = nullptr;

//! This rank's shard of `whole` on its GPU, for as long as it lives.
template <class T>
struct DeviceShard {
  T* data = nullptr;
  std::size_t count = 0;
  DeviceShard(const std::vector<T>& whole, std::size_t from, std::size_t to) : count(to - from) {
    REQUIRE(cudaMalloc(&data, count * sizeof(T) + 16) == cudaSuccess);
    if (count) REQUIRE(cudaMemcpy(data, whole.data() + from, count * sizeof(T), cudaMemcpyHostToDevice) == cudaSuccess);
  }
  ~DeviceShard() { cudaFree(data); }
};

template <class T>
void check_op(xr::Op op, std::size_t n, xr::Accuracy accuracy, xr::test::Pattern pattern) {
  std::mt19937_64 rng(shared_seed() + n * 7 + static_cast<int>(op));
  const std::vector<T> whole = xr::test::make_data<T>(pattern, op, n, rng);
  const auto cut = split(n, rng);
  DeviceShard<T> shard(whole, cut[rank_], cut[rank_ + 1]);
  xr::Request q{shard.data, shard.count, xr::dtype_of<T>(), op, xr::Memory::device};
  xr::Options o;
  o.accuracy = accuracy;
  INFO("seed " << shared_seed() << " (XREDUCE_TEST_SEED), rank " << rank_ << " of " << ranks_ << ", "
               << to_string(op) << " of " << n << " " << to_string(xr::dtype_of<T>()) << ", shard " << shard.count);
  const xr::Request host{whole.data(), n, xr::dtype_of<T>(), op, xr::Memory::host};
  if (n == 0 && xr::OpSet{op}.needs_elements()) {
    CHECK_THROWS_AS(xr::nccl::allreduce(comm_, q, o), xr::Error);
    return;
  }
  const xr::Reference ref = xr::exact_reference(host);
  const xr::Result r = xr::nccl::allreduce(comm_, q, o);
  double error = 0;
  // Float sums add the ranks' rounded partials: a rank's bound, plus one eps a rank.
  CHECK(xr::agrees(host, ref, r, &error, accuracy));
  const xr::Result via_mpi = xr::mpi::allreduce(MPI_COMM_WORLD, q, o);
  if (accuracy == xr::Accuracy::exact || !xr::is_floating(q.dtype)) CHECK(via_mpi.value == r.value);
  CHECK(via_mpi.index == r.index);
  if (accuracy == xr::Accuracy::exact)  // one value, rounded once: the whole array's on the CPU
    CHECK(xr::default_context().reduce(host, xr::Options{.backend = "sequential", .accuracy = accuracy}).value == r.value);
}

}  // namespace

TEST_CASE("nccl: every op, f32 and i64, uneven and empty shards, against the whole array's reference") {
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{1000}, std::size_t{3} << 20})
    for (xr::Op op : xr::core_ops) {  // the statistics: the next test case
      if (op == xr::Op::sumsq) continue;  // the GPU backends sum squares only among several ops
      check_op<float>(op, n, xr::Accuracy::standard, op == xr::Op::argmax ? xr::test::Pattern::ties : xr::test::Pattern::random);
      check_op<std::int64_t>(op, n, xr::Accuracy::standard, xr::test::Pattern::random);
    }
  check_op<float>(xr::Op::argmin, 100000, xr::Accuracy::standard, xr::test::Pattern::nan);
}

TEST_CASE("nccl: statistics of device shards (cuda.shuffle's), combined by the op table") {
  // Each rank's shard reduced on its GPU in f64 (its mean, and for var and std its variance too),
  // then combined as the MPI ranks combine them; nanmean, nanvar and nanstd are refused across
  // ranks, and nanprod has no GPU kernel.
  for (std::size_t n : {std::size_t{1}, std::size_t{1000}, std::size_t{3} << 20})
    for (xr::Op op : xr::all_ops) {
      if (xr::is_core_op(op) || op == xr::Op::nanprod || op == xr::Op::nanmean || op == xr::Op::nanvar || op == xr::Op::nanstd) continue;
      check_op<float>(op, n, xr::Accuracy::standard, xr::test::Pattern::random);
      check_op<double>(op, n, xr::Accuracy::standard, xr::test::Pattern::random);
    }
}

TEST_CASE("nccl: N-D device shards split along axis 0, reduced over axes that include it") {
  // (a, 64, c) f32 in C order, and the view with axes 1 and 2 swapped: each rank's rows on its
  // GPU, read in place by cuda.shuffle's views kernels; results against the whole's reference.
  std::mt19937_64 rng(shared_seed() + 11);
  const std::int64_t a = 1 + static_cast<std::int64_t>(rng() % 3000), b = 64, c = 1 + static_cast<std::int64_t>(rng() % 9);
  const auto cut = split(static_cast<std::size_t>(a), rng);
  const std::vector<float> whole = xr::test::make_data<float>(xr::test::Pattern::random, xr::Op::sum, static_cast<std::size_t>(a * b * c), rng);
  DeviceShard<float> shard(whole, cut[rank_] * static_cast<std::size_t>(b * c), cut[rank_ + 1] * static_cast<std::size_t>(b * c));
  const xr::View plain = xr::View::of({a, b, c}), swapped = xr::View::of({a, c, b}).with_strides({b * c, 1, c});
  for (xr::Op op : {xr::Op::sum, xr::Op::max, xr::Op::min})
    for (const xr::Axes axes : {xr::Axes{0}, xr::Axes{0, 2}, xr::Axes{}})
      for (const xr::View& view : {plain, swapped}) {
        const xr::Request host = xr::Request::over(whole.data(), xr::DType::f32, view, axes, op);
        xr::Request q = host;
        q.data = shard.data;
        q.memory = xr::Memory::device;
        q.view.shape[0] = static_cast<std::int64_t>(cut[rank_ + 1] - cut[rank_]);
        INFO("seed " << shared_seed() << " (XREDUCE_TEST_SEED), rank " << rank_ << ", " << to_string(op) << " of (" << a << ", "
                     << view.shape[1] << ", " << view.shape[2] << "), axes bits " << axes.bits());
        const xr::Result r = xr::nccl::allreduce(comm_, q);
        double error = 0;
        CHECK(xr::agrees(host, xr::exact_reference(host), r, &error));
        CHECK(r.shape == xr::default_context().reduce(host, xr::Options{.backend = "sequential"}).shape);
      }
}

TEST_CASE("nccl: exact sums, means, vars and stds are the same bits as one process's") {
  // Each rank's exact partials from its GPU (cuda.shuffle's exact kernels: those of x, and of x
  // squared for var and std), added exactly across ranks and rounded once.
  for (std::size_t n : {std::size_t{17}, std::size_t{1} << 22})
    for (xr::Op op : {xr::Op::sum, xr::Op::mean, xr::Op::var, xr::Op::std}) {
      check_op<float>(op, n, xr::Accuracy::exact, xr::test::Pattern::random);
      check_op<double>(op, n, xr::Accuracy::exact, xr::test::Pattern::random);
      if (op != xr::Op::sum) check_op<xr::bf16>(op, n, xr::Accuracy::exact, xr::test::Pattern::random);
    }
}

TEST_CASE("nccl: f16, bf16 and the 8- and 16-bit integers: sums rounded once, extremes, integer sums widened") {
  // A 16-bit float shard on a GPU sends its sum as an exact partial (the whole rounded once);
  // integer sums arrive in 64 bits, and extremes keep the type.
  for (std::size_t n : {std::size_t{1}, std::size_t{1000}, std::size_t{3} << 20})
    for (xr::Op op : {xr::Op::sum, xr::Op::min, xr::Op::max, xr::Op::argmin, xr::Op::argmax}) {
      const auto pattern = op == xr::Op::sum ? xr::test::Pattern::random : xr::test::Pattern::ties;
      check_op<xr::f16>(op, n, xr::Accuracy::standard, pattern);
      check_op<xr::bf16>(op, n, xr::Accuracy::standard, pattern);
      check_op<std::uint8_t>(op, n, xr::Accuracy::standard, pattern);
      check_op<std::int8_t>(op, n, xr::Accuracy::standard, pattern);
      check_op<std::int16_t>(op, n, xr::Accuracy::standard, pattern);
    }
  check_op<xr::bf16>(xr::Op::sum, 1 << 22, xr::Accuracy::exact, xr::test::Pattern::random);
  check_op<xr::f16>(xr::Op::argmax, 100000, xr::Accuracy::standard, xr::test::Pattern::nan);
}

TEST_CASE("nccl: a rank that fails makes every rank throw, naming it") {
  std::vector<float> x(1000, 1.0f);
  DeviceShard<float> shard(x, 0, x.size());
  xr::Request q{shard.data, shard.count, xr::DType::f32, xr::Op::sum, xr::Memory::device};
  xr::Options o;
  if (rank_ == ranks_ - 1) o.backend = "no.such.backend";
  try {
    xr::nccl::allreduce(comm_, q, o);
    CHECK_MESSAGE(false, "allreduce returned although a rank failed");
  } catch (const xr::Error& e) {
    CHECK(std::string(e.what()).find("rank " + std::to_string(ranks_ - 1)) != std::string::npos);
    CHECK(std::string(e.what()).find("no.such.backend") != std::string::npos);
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks_);
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess) gpus = 0;
  int fewest = gpus;
  MPI_Allreduce(&gpus, &fewest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (fewest < ranks_) {
    if (rank_ == 0) std::printf("nccl tests skipped: %d GPU(s) for %d ranks (one GPU a rank)\n", fewest, ranks_);
    MPI_Finalize();
    return 0;
  }
  cudaSetDevice(rank_);
  ncclUniqueId id;
  if (rank_ == 0) ncclGetUniqueId(&id);
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  if (ncclCommInitRank(&comm_, ranks_, id, rank_) != ncclSuccess) {
    std::fprintf(stderr, "rank %d: ncclCommInitRank failed\n", rank_);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  if (rank_ == 0) std::printf("nccl tests: %d ranks, one GPU each, seed %llu\n", ranks_, static_cast<unsigned long long>(shared_seed()));
  else shared_seed();
  doctest::Context context(argc, argv);
  int failed = context.run();
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  ncclCommDestroy(comm_);
  MPI_Finalize();
  return any;
}
