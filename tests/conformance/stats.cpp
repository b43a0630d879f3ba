// Several ops in one pass (Request::ops) over every backend that reads host memory: the shared
// body of support/stats_cases.hpp, and the refusals every backend owes.

#include <doctest/doctest.h>

#include "conformance/backends.hpp"
#include "support/stats_cases.hpp"

namespace xr = xreduce;
using xr::test::backends, xr::test::memory_for, xr::test::quick;

namespace {

template <class T>
void stats_for_type() {
  xr::test::HostPlacement host;
  for (xr::Reducer* r : backends())
    if (memory_for(*r) == xr::Memory::host) xr::test::check_stats_for_type<T>(*r, host, quick());
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

    xr::Options exact;
    exact.accuracy = xr::Accuracy::exact;
    CHECK_THROWS_WITH_AS(r->reduce(q, exact), doctest::Contains("one op at a time"), xr::Error);
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
