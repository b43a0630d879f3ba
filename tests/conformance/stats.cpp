// Several ops in one pass (Request::ops) over every backend that reads host memory: the shared
// body of support/stats_cases.hpp, several ops over random N-D views, and the refusals every
// backend owes.

#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "conformance/backends.hpp"
#include "support/stats_cases.hpp"
#include "support/view_cases.hpp"

namespace xr = xreduce;
using xr::test::backends, xr::test::memory_for, xr::test::quick;

namespace {

template <class T>
void stats_for_type() {
  xr::test::HostPlacement host;
  for (xr::Reducer* r : backends())
    if (memory_for(*r) == xr::Memory::host) xr::test::check_stats_for_type<T>(*r, host, quick());
}

//! Several ops over the axes of `cases` random views (support/view_cases.hpp) on every host
//! backend that declares them: each op against its exact reference, and on the CPU backends
//! each statistic against the bits of the same statistic alone.
template <class T>
void several_over_views(std::size_t cases, std::uint64_t salt) {
  std::mt19937_64 rng(xr::test::run_seed() ^ salt);
  const std::vector<xr::OpSet> sets = xr::test::stat_sets();
  for (std::size_t c = 0; c < cases; ++c) {
    const xr::test::ViewCase v = xr::test::draw_view(rng, 1 + rng() % 4, xr::test::kSmall, 1 << 12);
    const xr::OpSet ops = sets[rng() % sets.size()];
    const xr::test::Pattern pattern = rng() % 2 ? xr::test::Pattern::random : xr::test::Pattern::ties;
    const xr::test::Elements<T> buffer = xr::test::make_data<T>(pattern, xr::Op::sum, v.span, rng);
    xr::Request q = xr::Request::over(buffer.data() + v.first, xr::dtype_of<T>(), xr::View::of(v.shape.data(), v.strides.data(), v.shape.size()),
                                      v.axes, xr::Op::prod);
    q.keepdims = v.keepdims;
    q.ops = ops;
    q.correction = static_cast<double>(rng() % 2);
    if (xr::test::empty_slices(v) && ops.needs_elements()) continue;  // the views' test checks the refusal
    const xr::Reference ref = xr::exact_reference(q);
    INFO("seed " << xr::test::run_seed() << " (replay with XREDUCE_TEST_SEED), " << xr::test::describe(ops) << " of "
                 << to_string(xr::dtype_of<T>()) << ", " << v.text << ", correction " << q.correction);
    for (xr::Reducer* r : backends()) {
      if (memory_for(*r) != xr::Memory::host) continue;
      if (r->capabilities().support(xr::features_of(xr::canonical(q), xr::Accuracy::standard)) != xr::Support::exact) continue;
      INFO("backend " << r->name());
      const xr::Result got = r->reduce(q);
      CHECK(got.shape == xr::test::expected_shape(v));
      double error = 0;
      CHECK(xr::agrees(q, ref, got, &error));
      if (!xr::test::on_cpu(*r)) continue;
      // The statistics' bits are promised where both walk the view alike: an index among the ops
      // keeps the view's order, which a statistic alone may walk otherwise (canonical), and round
      // otherwise. (The core ops' are promised for flat arrays and segments only: along columns
      // they share one accumulator of their own; stats_cases.hpp checks the rest.)
      for (xr::Op op : xr::all_ops)
        if (ops.contains(op) && !xr::is_core_op(op) && xr::test::same_walk(q, xr::test::with_alone(q, op)))
          xr::test::check_as_alone(*r, q, got, op);
    }
  }
}

xr::ErrorCode code_of(xr::Reducer& r, const xr::Request& q, const xr::Options& o = {}) {
  try {
    r.reduce(q, o);
  } catch (const xr::Error& e) {
    return e.code();
  }
  return xr::ErrorCode::ok;
}

}  // namespace

TEST_CASE("every backend: several ops in one pass, f32") { stats_for_type<float>(); }
TEST_CASE("every backend: several ops in one pass, f64") { stats_for_type<double>(); }
TEST_CASE("every backend: several ops in one pass, i32") { stats_for_type<std::int32_t>(); }
TEST_CASE("every backend: several ops in one pass, i64") { stats_for_type<std::int64_t>(); }
TEST_CASE("every backend: several ops in one pass, u32") { stats_for_type<std::uint32_t>(); }
TEST_CASE("every backend: several ops in one pass, u64") { stats_for_type<std::uint64_t>(); }
TEST_CASE("every backend: several ops in one pass, f16") { stats_for_type<xr::f16>(); }
TEST_CASE("every backend: several ops in one pass, bf16") { stats_for_type<xr::bf16>(); }
TEST_CASE("every backend: several ops in one pass, u8") { stats_for_type<std::uint8_t>(); }
TEST_CASE("every backend: several ops in one pass, i16") { stats_for_type<std::int16_t>(); }
TEST_CASE("every backend: several ops in one pass, bool") { stats_for_type<bool>(); }

TEST_CASE("every backend: several ops over the axes of N-D views") {
  several_over_views<float>(quick() ? 30 : 120, 0x5e7a);
  several_over_views<double>(quick() ? 20 : 60, 0x5e7b);
  several_over_views<std::int16_t>(quick() ? 10 : 40, 0x5e7c);
  several_over_views<xr::bf16>(quick() ? 10 : 40, 0x5e7d);
}

TEST_CASE("every backend: several ops of nothing, and the requests they refuse") {
  std::vector<double> x(100, 1.5);
  const xr::OpSet sums{xr::Op::sum, xr::Op::sumsq}, all{xr::Op::sum, xr::Op::max, xr::Op::argmin};
  for (xr::Reducer* r : backends()) {
    if (memory_for(*r) != xr::Memory::host) continue;
    INFO("backend " << r->name());
    xr::Request q{x.data(), x.size(), xr::DType::f64, xr::Op::sum, xr::Memory::host};
    q.ops = all;
    if (xr::test::support_of(*r, q) == xr::Support::none) {
      CHECK_THROWS_WITH_AS(r->reduce(q), doctest::Contains("several ops in one pass"), xr::Error);
      continue;
    }
    const xr::Result r3 = r->reduce(q);
    CHECK(r3.of(xr::Op::sum).value == xr::Scalar(150.0));
    CHECK(r3.of(xr::Op::argmin).index == std::uint64_t{0});
    CHECK_THROWS_WITH_AS(r3.of(xr::Op::min), doctest::Contains("did not name it"), xr::Error);

    xr::Request empty = q;
    empty.count = 0;
    CHECK(code_of(*r, empty) == xr::ErrorCode::empty_input);  // max and argmin of nothing
    empty.ops = sums;
    const xr::Result zero = r->reduce(empty);
    REQUIRE(zero.ops.size() == 2);
    CHECK(zero.of(xr::Op::sumsq).value == xr::Scalar(0.0));
    xr::Request empty_statistics = empty;  // a mean of nothing is NaN, a count 0: only the max refuses
    empty_statistics.ops = {xr::Op::mean, xr::Op::count_nonzero, xr::Op::max};
    if (xr::test::support_of(*r, empty_statistics) != xr::Support::none) {
      try {
        r->reduce(empty_statistics);
        FAIL("no error for the max of nothing");
      } catch (const xr::Error& e) {
        CHECK(e.code() == xr::ErrorCode::empty_input);
        CHECK(std::string(e.what()).find("mean") == std::string::npos);
      }
      empty_statistics.ops = {xr::Op::mean, xr::Op::count_nonzero};
      const xr::Result nothing = r->reduce(empty_statistics);
      CHECK(std::isnan(nothing.of(xr::Op::mean).value.to_double()));
      CHECK(nothing.of(xr::Op::count_nonzero).value == xr::Scalar(std::int64_t{0}));
    }

    xr::Options exact;
    exact.accuracy = xr::Accuracy::exact;
    CHECK_THROWS_WITH_AS(r->reduce(q, exact), doctest::Contains("one op at a time"), xr::Error);
    xr::Request norms = q;
    norms.ops = {xr::Op::max, xr::Op::norm2};
    CHECK_THROWS_WITH_AS(r->reduce(norms, exact), doctest::Contains("no backend rounds a norm2 once"), xr::Error);
    xr::Request exact_anyway = q;  // extremes, indices and counts are exact anyway
    exact_anyway.ops = {xr::Op::max, xr::Op::argmin, xr::Op::count_nonzero};
    if (xr::test::support_of(*r, exact_anyway) != xr::Support::none) {
      const xr::Result counted = r->reduce(exact_anyway, exact);
      CHECK(counted.of(xr::Op::count_nonzero).value == xr::Scalar(std::int64_t{100}));
      CHECK(counted.of(xr::Op::max).value == xr::Scalar(1.5));
      CHECK(counted.of(xr::Op::argmin).index == std::uint64_t{0});
    }
    xr::Request with_prod = q;
    with_prod.ops.add(xr::Op::prod);
    CHECK(code_of(*r, with_prod) == xr::ErrorCode::unsupported);  // no backend computes prod among others
    xr::OpsOut out;
    xr::Request flat_out = q;
    flat_out.ops_out = &out;
    CHECK_THROWS_WITH_AS(r->reduce(flat_out), doctest::Contains("more than one result"), xr::Error);
    double one[4];
    xr::Request with_out = xr::Request::rows(x.data(), 4, 25, xr::DType::f64, xr::Op::sum);
    with_out.ops = all;
    with_out.out = one;
    CHECK(code_of(*r, with_out) == xr::ErrorCode::invalid_argument);  // `out` is for one op
    xr::Request rows = with_out;
    rows.out = nullptr;
    if (xr::test::support_of(*r, rows) == xr::Support::none) continue;
    rows.ops_out = &out;  // no place for any of them
    CHECK_THROWS_WITH_AS(r->reduce(rows), doctest::Contains("no place for the sum"), xr::Error);
  }
}
