// N-D views over every backend, data in host memory: the shared body of support/view_cases.hpp
// (random shapes, axes, strides and keepdims against the exact reference), and bad views refused.

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "conformance/backends.hpp"
#include "support/test_data.hpp"
#include "support/view_cases.hpp"
#include "xreduce/validate.hpp"

namespace xr = xreduce;
using xr::test::backends, xr::test::kLong, xr::test::kSmall, xr::test::memory_for, xr::test::quick;

namespace {

//! The shared body over every backend, with the data in host memory.
template <class T>
void host_views(std::size_t cases, std::size_t max_rank, const std::vector<std::int64_t>& extents, std::int64_t most,
                std::uint64_t salt) {
  xr::test::views_for<T, xr::test::HostPlacement>(backends(), cases, max_rank, extents, most, salt);
}

}  // namespace

// At most 2^12 elements a small view, 2^20 a long one.
TEST_CASE("every backend: N-D views, f32") {
  host_views<float>(quick() ? 40 : 200, 9, kSmall, 1 << 12, 0x71e3);
  host_views<float>(quick() ? 3 : 12, 3, kLong, 1 << 20, 0x10e6);
}
TEST_CASE("every backend: N-D views, f64") {
  host_views<double>(quick() ? 40 : 200, 9, kSmall, 1 << 12, 0x71e3);
  host_views<double>(quick() ? 3 : 12, 3, kLong, 1 << 20, 0x10e6);
}
TEST_CASE("every backend: N-D views, i32") { host_views<std::int32_t>(quick() ? 40 : 150, 6, kSmall, 1 << 12, 0x71e3); }
TEST_CASE("every backend: N-D views, u64") {
  host_views<std::uint64_t>(quick() ? 40 : 150, 6, kSmall, 1 << 12, 0x71e3);
  host_views<std::uint64_t>(quick() ? 3 : 8, 3, kLong, 1 << 20, 0x10e6);
}

TEST_CASE("every backend: N-D views, f16, bf16, i8, u16, bool") {
  host_views<xr::f16>(quick() ? 30 : 120, 6, kSmall, 1 << 12, 0x71e3);
  host_views<xr::f16>(quick() ? 2 : 6, 3, kLong, 1 << 20, 0x10e6);
  host_views<xr::bf16>(quick() ? 30 : 120, 6, kSmall, 1 << 12, 0x71e3);
  host_views<std::int8_t>(quick() ? 30 : 100, 6, kSmall, 1 << 12, 0x71e3);
  host_views<std::uint16_t>(quick() ? 30 : 100, 6, kSmall, 1 << 12, 0x71e3);
  host_views<bool>(quick() ? 30 : 100, 6, kSmall, 1 << 12, 0x71e3);
}

// Exact sums: every result's bits MPFR's, on every backend that declares them (the others refuse).
TEST_CASE("every backend: exact sums of N-D views, f32, f64, f16, bf16") {
  xr::test::exact_views_for<float, xr::test::HostPlacement>(backends(), quick() ? 14 : 70, 6, kSmall, 1 << 12, 0x71e3);
  xr::test::exact_views_for<float, xr::test::HostPlacement>(backends(), quick() ? 2 : 7, 3, kLong, 1 << 18, 0x10e6);
  xr::test::exact_views_for<double, xr::test::HostPlacement>(backends(), quick() ? 14 : 70, 6, kSmall, 1 << 12, 0x71e3);
  xr::test::exact_short_rows_and_columns<float, xr::test::HostPlacement>(backends());
  xr::test::exact_short_rows_and_columns<double, xr::test::HostPlacement>(backends());
  xr::test::exact_short_rows_and_columns<xr::f16, xr::test::HostPlacement>(backends());
  xr::test::exact_short_rows_and_columns<xr::bf16, xr::test::HostPlacement>(backends());
  xr::test::exact_views_for<xr::f16, xr::test::HostPlacement>(backends(), quick() ? 7 : 35, 6, kSmall, 1 << 12, 0x71e3);
  xr::test::exact_views_for<xr::bf16, xr::test::HostPlacement>(backends(), quick() ? 7 : 35, 6, kSmall, 1 << 12, 0x71e3);
}

// Float sums whose reduced axes end in a long contiguous run and take other axes too (the CPU
// sums these as rows, then columns): runs of 256 or more, in any dimension of the view, with
// gaps and reversed outer axes; 3 or 4 dimensions, one kept or none, at most 2^20 elements.
template <class T>
void long_run_sums(std::size_t cases, std::uint64_t salt) {
  std::mt19937_64 rng(xr::test::run_seed() ^ salt ^ static_cast<std::uint64_t>(xr::dtype_of<T>()));
  const std::vector<std::int64_t> runs{256, 257, 1000, 1024}, others{1, 2, 3, 5, 17, 64};
  for (std::size_t c = 0; c < cases; ++c) {
    xr::test::ViewCase v;
    const std::size_t rank = 3 + rng() % 2, run = rng() % rank;  // `run`: the dimension of stride 1
    v.shape.resize(rank);
    v.strides.resize(rank);
    std::int64_t elements = 0;
    do {  // at most 2^20 elements, as the long views of views_for
      elements = 1;
      for (std::size_t d = 0; d < rank; ++d) elements *= v.shape[d] = d == run ? runs[rng() % runs.size()] : others[rng() % others.size()];
    } while (elements > (1 << 20));
    std::vector<std::size_t> order{run};  // innermost first
    for (std::size_t d = 0; d < rank; ++d)
      if (d != run) order.push_back(d);
    std::shuffle(order.begin() + 1, order.end(), rng);
    std::int64_t step = 1;
    for (std::size_t d : order) {
      v.strides[d] = step;
      step *= v.shape[d] + (rng() % 4 == 0 ? 3 : 0);
    }
    v.span = static_cast<std::size_t>(step);
    for (std::size_t d : order)
      if (d != run && rng() % 4 == 0) v.first += (v.shape[d] - 1) * v.strides[d], v.strides[d] = -v.strides[d];
    // A quarter of the cases reduce every axis (one result: the partials' sum is a flat array).
    const bool every = rng() % 4 == 0;
    const std::size_t kept = every ? rank : order[1 + rng() % (rank - 1)];
    for (std::size_t d = 0; d < rank; ++d)
      if (d != kept && (every || d == run || rng() % 3 != 0)) v.axes.add(d);
    v.keepdims = rng() % 3 == 0;
    v.text = xr::test::describe(v);
    xr::test::HostPlacement place;
    const xr::test::Pattern pattern = rng() % 2 ? xr::test::Pattern::random : xr::test::Pattern::ties;
    xr::test::check_view_case<T>(v, xr::Op::sum, pattern, rng, place, backends());
  }
}

TEST_CASE("every backend: float sums of views whose reduced axes end in a long run") {
  long_run_sums<float>(quick() ? 10 : 60, 0x2517);
  long_run_sums<double>(quick() ? 10 : 60, 0x2518);
}

TEST_CASE("every backend: bad views are refused") {
  std::vector<float> x(24, 1.0f);
  for (xr::Reducer* r : backends()) {
    if (memory_for(*r) != xr::Memory::host) continue;
    INFO("backend " << r->name());
    auto code_of = [&](const xr::Request& q) {
      try {
        r->reduce(q);
      } catch (const xr::Error& e) {
        return e.code();
      }
      return xr::ErrorCode::ok;
    };
    xr::Request q = xr::Request::over(x.data(), xr::DType::f32, xr::View::of({2, 3, 4}), xr::Axes{3});  // no axis 3
    CHECK(code_of(q) == xr::ErrorCode::invalid_argument);
    q = xr::Request::over(x.data(), xr::DType::f32, xr::View::of({2, -3, 4}), xr::Axes{1});
    CHECK(code_of(q) == xr::ErrorCode::invalid_argument);
    q = xr::Request::over(x.data(), xr::DType::f32, xr::View::of({1 << 30, 1 << 30, 1 << 30}), xr::Axes{1});
    CHECK(code_of(q) == xr::ErrorCode::invalid_argument);  // more than 2^62 elements
    q = xr::Request::over(nullptr, xr::DType::f32, xr::View::of({2, 3}), xr::Axes{1});
    CHECK(code_of(q) == xr::ErrorCode::invalid_argument);
    // An axis that reaches past any memory (its extent times its stride past 2^59 elements).
    q = xr::Request::over(x.data(), xr::DType::f32, xr::View::of({4, 2}).with_strides({std::int64_t{1} << 58, 1}), xr::Axes{1});
    CHECK(code_of(q) == xr::ErrorCode::invalid_argument);
    // Sixteen dimensions that no strides join, every one reduced, with keepdims: no room for the
    // results' axis in a view (found by fuzz_view_args); refused before anything is read.
    std::int64_t shape16[16], strides16[16];
    for (int k = 0; k < 16; ++k) shape16[k] = 2, strides16[k] = std::int64_t{1} << (2 * (15 - k));
    q = xr::Request::over(x.data(), xr::DType::f32, xr::View::of(shape16, strides16, 16));
    q.keepdims = true;
    CHECK(code_of(q) == xr::ErrorCode::unsupported);
  }
  CHECK_THROWS_AS(xr::View::of({1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}), xr::Error);
}
