// xreduce::mpi over however many ranks mpirun starts (ctest runs 1, 2, 3 and 4). Every rank draws
// the whole array from one seed (rank 0's, printed, or XREDUCE_TEST_SEED), keeps its shard of a
// random uneven split (some shards empty), and checks the distributed result against the whole
// array reduced in this one process. Checks never stop a test early, so that every rank makes
// the same collective calls.

#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "support/exact_data.hpp"
#include "support/mpi_shards.hpp"
#include "support/test_data.hpp"
#include "xreduce/mpi.hpp"
#include "xreduce/backend/registry.hpp"
#include "xreduce/validate.hpp"
#include "xreduce/xreduce.hpp"

namespace xr = xreduce;
using xr::test::run_seed, xr::test::shared_seed, xr::test::split;

namespace {

int rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int ranks() {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

//! This rank's backend: the CPU backends in turn over the ranks, so that one result mixes them.
std::string backend_of_rank() {
  std::vector<std::string> names;
  for (const char* n : {"sequential", "openmp", "tbb"})
    if (xr::default_context().registry().find(n)) names.push_back(n);
  return names[static_cast<std::size_t>(rank()) % names.size()];
}

//! `count` values of `t` at `data`, or `count` records of `width` of them (Request::records).
xr::Request request_of(const void* data, std::size_t count, xr::DType t, xr::Op op, std::size_t width) {
  if (width > 1) return xr::Request::records(data, count, width, t, op);
  return xr::Request{data, count, t, op, xr::Memory::host};
}

//! `whole`: a std::vector or a test::Elements (which bools need).
template <class Whole>
xr::Request shard_of(const Whole& whole, const std::vector<std::size_t>& cut, xr::Op op, std::size_t width = 1) {
  using T = std::remove_cvref_t<decltype(*whole.data())>;
  const std::size_t first = cut[rank()], last = cut[rank() + 1];
  return request_of(whole.data() + first * width, last - first, xr::dtype_of<T>(), op, width);
}

//! Every op crosses ranks but the NaN-skipping moments (a rank's count of non-NaN elements
//! does not come back from its reduce).
bool combined_across_ranks(xr::Op op) { return op != xr::Op::nanmean && op != xr::Op::nanvar && op != xr::Op::nanstd; }

//! Whether the ranks' partials of (t, op) combine without rounding: then reduce and allreduce
//! give the same bits, whatever order MPI combines in.
bool combines_exactly(xr::DType t, xr::Op op) {
  if (xr::is_core_op(op)) return !(xr::is_floating(t) && xr::accumulates(op));
  return op == xr::Op::count_nonzero || op == xr::Op::any || op == xr::Op::all || op == xr::Op::nanmin ||
         op == xr::Op::nanmax || op == xr::Op::nanargmin || op == xr::Op::nanargmax ||
         (!xr::is_floating(t) && op == xr::Op::nansum) || (!xr::is_floating(t) && op == xr::Op::nanprod);
}

//! The whole array's result on this process (sequential): what the ranks must agree with.
xr::Result whole_result(const void* data, std::size_t count, xr::DType t, xr::Op op, std::size_t width,
                        xr::Accuracy accuracy) {
  return xr::default_context().reduce(request_of(data, count, t, op, width),
                                      xr::Options{.backend = "sequential", .accuracy = accuracy});
}

template <class Whole>
void check_against_whole(const Whole& whole, std::size_t width, xr::Op op, const xr::Result& got) {
  using T = std::remove_cvref_t<decltype(*whole.data())>;
  const std::size_t count = whole.size() / width;
  const xr::Request q = request_of(whole.data(), count, xr::dtype_of<T>(), op, width);
  const xr::Reference ref = xr::exact_reference(q);
  double error = 0;
  // Float sums (of squares too) and products: the bounds xreduce/mpi.hpp states; everything
  // else exactly.
  if (xr::is_float_v<T> && xr::accumulates(op)) {
    // The 16-bit floats accumulate as f32 does; the ranks send f64 partials (host shards), and
    // the combined result is rounded to the type once: half an ulp of the result, below
    // eps(T) |result| (+ the subnormal spacing, for a result among them).
    const double eps = xr::is_float16_v<T> ? static_cast<double>(std::numeric_limits<float>::epsilon())
                                           : static_cast<double>(std::numeric_limits<T>::epsilon());
    for (std::size_t c = 0; c < width; ++c) {
      const xr::Reference& r = width > 1 ? ref.results[c] : ref;
      const xr::Scalar& v = width > 1 ? got.values[c] : got.value;
      const double rounding = xr::is_float16_v<T> ? static_cast<double>(std::numeric_limits<T>::epsilon()) * std::fabs(r.value.to_double()) +
                                                        static_cast<double>(std::numeric_limits<T>::denorm_min())
                                                  : 0;
      const bool product = op == xr::Op::prod || op == xr::Op::nanprod;
      const double bound = !product ? (64 + ranks()) * eps * r.abs_sum + r.slack + rounding
                                              : (count + 64 + ranks()) * eps * r.abs_sum + rounding;
      const double want = r.value.to_double(), have = v.to_double();
      if (std::isnan(want) || std::isinf(want)) CHECK(xr::Scalar(have) == xr::Scalar(want));
      else CHECK(std::fabs(have - want) <= bound);
    }
    return;
  }
  CHECK(xr::agrees(q, ref, got, &error));
}

}  // namespace

TEST_CASE("every op and dtype over uneven and empty shards, each rank with its own backend") {
  std::mt19937_64 rng(shared_seed());
  INFO("seed " << shared_seed() << " (XREDUCE_TEST_SEED), " << ranks() << " ranks, this one rank " << rank());
  for (xr::DType t : xr::all_dtypes)
    for (xr::Op op : xr::all_ops)
      for (auto pattern : {xr::test::Pattern::random, xr::test::Pattern::ties, xr::test::Pattern::nan}) {
        if (pattern == xr::test::Pattern::nan && !xr::is_floating(t)) continue;
        if (!combined_across_ranks(op)) continue;  // refused: its own test
        const std::size_t n = 1 + rng() % 20000;
        const auto cut = split(n, rng);
        xr::visit_dtype(t, [&](auto tag) {
          using T = decltype(tag);
          const xr::test::Elements<T> whole = xr::test::make_data<T>(pattern, op, n, rng);
          INFO(xr::to_string(t) << " " << xr::to_string(op) << " " << std::string(xr::test::name(pattern)) << ", n = " << n);
          const xr::Request shard = shard_of(whole, cut, op);
          const xr::Options options{.backend = backend_of_rank()};
          const xr::Result all = xr::mpi::allreduce(MPI_COMM_WORLD, shard, options);
          check_against_whole(whole, 1, op, all);
          const int root = ranks() - 1;
          const auto one = xr::mpi::reduce(MPI_COMM_WORLD, shard, root, options);
          CHECK(one.has_value() == (rank() == root));
          if (one) check_against_whole(whole, 1, op, *one);
          // The same bits as allreduce where the combine is exact (float sums, sums of squares,
          // products and the statistics' float accumulators round in the order MPI combines in;
          // exact sums and statistics have their own tests).
          if (one && combines_exactly(t, op)) CHECK((one->value == all.value && one->index == all.index));
        });
      }
}

TEST_CASE("the NaN-skipping mean, var and std are refused across ranks, on every rank alike") {
  std::vector<double> x(100, 1.0);
  for (xr::Op op : xr::all_ops) {
    if (combined_across_ranks(op)) continue;
    const xr::Request shard{x.data(), x.size(), xr::DType::f64, op, xr::Memory::host};
    INFO(xr::to_string(op));
    CHECK_THROWS_WITH_AS(xr::mpi::allreduce(MPI_COMM_WORLD, shard), doctest::Contains("not combined across ranks"), xr::Error);
  }
}

TEST_CASE("exact sums: the same bits for any split, any number of ranks and any mix of backends") {
  std::mt19937_64 rng(shared_seed() + 1);
  INFO("seed " << shared_seed() << ", " << ranks() << " ranks");
  for (xr::test::ExactShape shape : xr::test::all_exact_shapes) {
    const std::size_t n = rng() % 30000;
    const auto cut = split(n, rng);
    auto check = [&](auto tag) {
      using T = decltype(tag);
      const std::vector<T> whole = xr::test::make_exact_data<T>(shape, n, rng);
      INFO(std::string(xr::test::name(shape)) << ", " << (sizeof(T) == 4 ? "f32" : "f64") << ", n = " << n);
      const xr::Result got = xr::mpi::allreduce(MPI_COMM_WORLD, shard_of(whole, cut, xr::Op::sum),
                                                xr::Options{.backend = backend_of_rank(), .accuracy = xr::Accuracy::exact});
      const xr::Result want = whole_result(whole.data(), n, xr::dtype_of<T>(), xr::Op::sum, 1, xr::Accuracy::exact);
      CHECK(xr::test::same_bits(got.value.get<T>(), want.value.get<T>()));
      REQUIRE(got.exact.size() == 1);
      CHECK(got.exact[0].count() == static_cast<std::int64_t>(n));
    };
    check(float{});
    check(double{});
  }
}

TEST_CASE("exact mean, var and std: the exact value rounded once, the same bits for any split") {
  std::mt19937_64 rng(shared_seed() + 4);
  INFO("seed " << shared_seed() << ", " << ranks() << " ranks");
  for (int trial = 0; trial < 6; ++trial) {
    const std::size_t n = rng() % 20000;
    const auto cut = split(n, rng);
    const double correction = static_cast<double>(rng() % 2);
    auto check = [&](auto tag) {
      using T = decltype(tag);
      std::vector<T> whole(n);
      std::normal_distribution<double> normal(0, 1);
      const int span = sizeof(T) == 4 ? 30 : 200;  // squares within the exact partial's range
      for (T& v : whole) v = static_cast<T>(std::ldexp(normal(rng) + 3, static_cast<int>(rng() % (2 * span)) - span));
      for (xr::Op op : {xr::Op::mean, xr::Op::var, xr::Op::std}) {
        INFO((sizeof(T) == 4 ? "f32 " : "f64 ") << xr::to_string(op) << ", n = " << n << ", correction " << correction);
        xr::Request shard = shard_of(whole, cut, op);
        shard.correction = correction;
        const xr::Options exact{.backend = backend_of_rank(), .accuracy = xr::Accuracy::exact};
        const xr::Result got = xr::mpi::allreduce(MPI_COMM_WORLD, shard, exact);
        xr::Request all = request_of(whole.data(), n, xr::dtype_of<T>(), op, 1);
        all.correction = correction;
        const xr::Result want = xr::default_context().reduce(all, xr::Options{.backend = "sequential", .accuracy = xr::Accuracy::exact});
        CHECK(xr::test::same_bits(got.value.get<T>(), want.value.get<T>()));
      }
    };
    check(float{});
    check(double{});
  }
}

TEST_CASE("var and std across ranks: Chan's update keeps a large mean's small spread") {
  std::mt19937_64 rng(shared_seed() + 5);
  const std::size_t n = 2000 + rng() % 20000;
  const auto cut = split(n, rng);
  std::vector<double> whole(n);
  for (std::size_t i = 0; i < n; ++i) whole[i] = 1e9 + static_cast<double>(i % 7);  // var of 0..6 repeated, about 4
  double mean = 0, m2 = 0;
  for (std::size_t i = 0; i < n; ++i) mean += static_cast<double>(i % 7);
  mean /= static_cast<double>(n);
  for (std::size_t i = 0; i < n; ++i) m2 += (static_cast<double>(i % 7) - mean) * (static_cast<double>(i % 7) - mean);
  const xr::Result r = xr::mpi::allreduce(MPI_COMM_WORLD, shard_of(whole, cut, xr::Op::var), xr::Options{.backend = backend_of_rank()});
  CHECK(std::fabs(r.value.get<double>() - m2 / static_cast<double>(n)) <= 1e-6);  // the raw sums of squares would lose it all
}

TEST_CASE("argmin and argmax: the lowest global index among ties, the first NaN") {
  std::mt19937_64 rng(shared_seed() + 2);
  const std::size_t n = 1000 + rng() % 1000;
  const auto cut = split(n, rng);
  std::vector<double> whole(n, 1.0);  // every element ties
  for (xr::Op op : {xr::Op::argmin, xr::Op::argmax}) {
    xr::Result r = xr::mpi::allreduce(MPI_COMM_WORLD, shard_of(whole, cut, op));
    CHECK(*r.index == 0);
  }
  const std::size_t first_nan = n / 3 + rng() % (n / 3);
  whole[first_nan] = NAN;
  whole[n - 1] = NAN;
  whole[n / 2 + n / 3] = -5.0;
  for (xr::Op op : {xr::Op::argmin, xr::Op::argmax}) {
    xr::Result r = xr::mpi::allreduce(MPI_COMM_WORLD, shard_of(whole, cut, op));
    CHECK(*r.index == first_nan);
    CHECK(std::isnan(r.value.get<double>()));
  }
}

TEST_CASE("the NaN-skipping extremes where whole shards are NaN: the other ranks' elements decide") {
  std::mt19937_64 rng(shared_seed() + 5);
  INFO("seed " << shared_seed() << ", " << ranks() << " ranks, this one rank " << rank());
  for (int trial = 0; trial < 20; ++trial) {
    const std::size_t n = 1 + rng() % 64;
    const auto cut = split(n, rng);
    const std::uint64_t nan_ranks = rng();  // bit r: rank r's shard is NaN alone (every rank's at times)
    std::vector<float> whole(n);
    std::uniform_real_distribution<float> unit(-1, 1);
    for (float& v : whole) v = unit(rng);
    for (int r = 0; r < ranks(); ++r)
      if (trial % 4 == 0 || ((nan_ranks >> r) & 1))
        std::fill(whole.begin() + static_cast<std::ptrdiff_t>(cut[r]), whole.begin() + static_cast<std::ptrdiff_t>(cut[r + 1]), NAN);
    for (xr::Op op : {xr::Op::nanmin, xr::Op::nanmax, xr::Op::nanargmin, xr::Op::nanargmax}) {
      INFO("trial " << trial << ", " << xr::to_string(op) << ", n = " << n);
      const xr::Result got = xr::mpi::allreduce(MPI_COMM_WORLD, shard_of(whole, cut, op), xr::Options{.backend = backend_of_rank()});
      check_against_whole(whole, 1, op, got);
    }
  }
}

TEST_CASE("an empty whole, and records column by column") {
  std::mt19937_64 rng(shared_seed() + 3);
  const std::vector<std::int32_t> none;
  const std::vector<std::size_t> nothing(ranks() + 1, 0);
  CHECK(xr::mpi::allreduce(MPI_COMM_WORLD, shard_of(none, nothing, xr::Op::sum)).value.get<std::int64_t>() == 0);
  CHECK(xr::mpi::allreduce(MPI_COMM_WORLD, shard_of(none, nothing, xr::Op::prod)).value.get<std::int64_t>() == 1);
  for (xr::Op op : {xr::Op::min, xr::Op::argmax}) {
    bool thrown = false;
    try {
      xr::mpi::allreduce(MPI_COMM_WORLD, shard_of(none, nothing, op));
    } catch (const xr::Error& e) {
      thrown = e.code() == xr::ErrorCode::empty_input;
    }
    CHECK(thrown);  // on every rank
  }
  const std::size_t records = 1 + rng() % 5000, width = 3;
  const auto cut = split(records, rng);
  for (xr::Op op : {xr::Op::sum, xr::Op::min, xr::Op::max, xr::Op::argmin, xr::Op::argmax, xr::Op::var, xr::Op::logsumexp}) {
    const std::vector<double> whole = xr::test::make_data<double>(xr::test::Pattern::random, op, records * width, rng);
    const xr::Result r = xr::mpi::allreduce(MPI_COMM_WORLD, shard_of(whole, cut, op, width));
    REQUIRE(r.values.size() == width);
    check_against_whole(whole, width, op, r);
    if (xr::returns_index(op)) {  // each column's row in the whole
      REQUIRE(r.indices.size() == width);
      for (std::size_t c = 0; c < width; ++c) {
        std::size_t best = 0;
        for (std::size_t i = 1; i < records; ++i)
          if (op == xr::Op::argmax ? whole[i * width + c] > whole[best * width + c] : whole[i * width + c] < whole[best * width + c]) best = i;
        CHECK(r.indices[c] == best);
      }
    }
  }
}

TEST_CASE("N-D views split along axis 0: the reduced axes include it; any strides, keepdims") {
  std::mt19937_64 rng(shared_seed() + 4);
  const std::int64_t a = 1 + static_cast<std::int64_t>(rng() % 60), b = 1 + static_cast<std::int64_t>(rng() % 5),
                     c = 1 + static_cast<std::int64_t>(rng() % 6);
  const auto cut = split(static_cast<std::size_t>(a), rng);
  const std::size_t first = cut[rank()], rows = cut[rank() + 1] - first;
  // The array (a, b, c) in C order, and its view with axes 1 and 2 swapped (strides not in order).
  const xr::View plain = xr::View::of({a, b, c}), swapped = xr::View::of({a, c, b}).with_strides({b * c, 1, c});
  auto check_views = [&](const auto& whole, std::initializer_list<xr::Op> ops) {
    using T = std::remove_cvref_t<decltype(*whole.data())>;
    for (xr::Op op : ops)
      for (const xr::Axes axes : {xr::Axes{0}, xr::Axes{0, 2}, xr::Axes{0, 1}, xr::Axes{}})
        for (const xr::View& view : {plain, swapped}) {
          xr::Request q = xr::Request::over(whole.data(), xr::dtype_of<T>(), view, axes, op);
          q.keepdims = rng() % 2 == 0;
          xr::Request shard = q;
          shard.data = whole.data() + first * static_cast<std::size_t>(b * c);
          shard.view.shape[0] = static_cast<std::int64_t>(rows);
          INFO("op ", xr::to_string(op), ", axes bits ", axes.bits(), ", shape (", a, ", ", view.shape[1], ", ", view.shape[2],
               "), keepdims ", q.keepdims, ", seed ", shared_seed());
          const xr::Result got = xr::mpi::allreduce(MPI_COMM_WORLD, shard, xr::Options{.backend = backend_of_rank()});
          const xr::Result one = xr::default_context().reduce(q, xr::Options{.backend = "sequential"});
          CHECK(got.shape == one.shape);
          double error = 0;
          CHECK(xr::agrees(q, xr::exact_reference(q), got, &error));
        }
  };
  std::vector<std::int64_t> integers(static_cast<std::size_t>(a * b * c));
  for (auto& x : integers) x = static_cast<std::int64_t>(rng() % 2001) - 1000;
  check_views(integers, {xr::Op::sum, xr::Op::min, xr::Op::argmax, xr::Op::argmin});
  const std::vector<double> floats = xr::test::make_data<double>(xr::test::Pattern::random, xr::Op::var, integers.size(), rng);
  check_views(floats, {xr::Op::max, xr::Op::argmin, xr::Op::var, xr::Op::mean, xr::Op::logsumexp, xr::Op::norm2});
  // A view that keeps axis 0: each rank's results are its own, refused on every rank alike.
  xr::Request kept = xr::Request::over(integers.data() + first * static_cast<std::size_t>(b * c), xr::DType::i64, plain, {1, 2});
  kept.view.shape[0] = static_cast<std::int64_t>(rows);
  xr::ErrorCode code = xr::ErrorCode::ok;
  try {
    xr::mpi::allreduce(MPI_COMM_WORLD, kept);
  } catch (const xr::Error& e) {
    code = e.code();
  }
  CHECK(code == xr::ErrorCode::unsupported);
}

TEST_CASE("a failing rank: the same clear error on every rank, and no rank left waiting") {
  const std::vector<float> whole(1000, 1.0f);
  std::vector<std::size_t> cut(ranks() + 1);
  for (int r = 0; r <= ranks(); ++r) cut[r] = 1000 * r / ranks();
  const int failing = ranks() - 1;
  for (const char* bad : {"no.such.backend", "hybrid"}) {
    if (std::string(bad) == "hybrid" && xr::default_context().registry().get("hybrid").available()) continue;
    const xr::Options options{.backend = rank() == failing ? bad : "sequential"};
    std::string message;
    xr::ErrorCode code = xr::ErrorCode::ok;
    try {
      xr::mpi::allreduce(MPI_COMM_WORLD, shard_of(whole, cut, xr::Op::sum), options);
    } catch (const xr::Error& e) {
      message = e.what();
      code = e.code();
    }
    INFO(message);
    CHECK(code == (std::string(bad) == "hybrid" ? xr::ErrorCode::unavailable : xr::ErrorCode::unknown_backend));
    CHECK(message.find("rank " + std::to_string(failing) + ": ") == 0);
    CHECK(message.find(bad) != std::string::npos);
    // reduce: the failing rank and the root throw; the others return nothing.
    bool thrown = false;
    try {
      xr::mpi::reduce(MPI_COMM_WORLD, shard_of(whole, cut, xr::Op::sum), 0, options);
    } catch (const xr::Error&) {
      thrown = true;
    }
    CHECK(thrown == (rank() == 0 || rank() == failing));
  }
  if (ranks() > 1) {  // ranks whose calls disagree
    const std::vector<double> doubles(1000, 1.0);
    bool thrown = false;
    try {
      if (rank() == 0) xr::mpi::allreduce(MPI_COMM_WORLD, shard_of(doubles, cut, xr::Op::sum));
      else xr::mpi::allreduce(MPI_COMM_WORLD, shard_of(whole, cut, xr::Op::sum));
    } catch (const xr::Error& e) {
      thrown = e.code() == xr::ErrorCode::invalid_argument && std::string(e.what()).find("disagree") != std::string::npos;
    }
    CHECK(thrown);
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  if (rank() == 0) std::printf("mpi tests: %d ranks, seed %llu\n", ranks(), static_cast<unsigned long long>(shared_seed()));
  else shared_seed();
  doctest::Context context(argc, argv);
  int status = context.run();
  MPI_Allreduce(MPI_IN_PLACE, &status, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);  // fails if any rank failed
  MPI_Finalize();
  return status;
}
