// User-defined reductions (xreduce/custom.hpp) over every backend that runs user code, and
// "auto": custom types and operators, transform-reduce, against exact references.

#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "conformance/backends.hpp"
#include "support/custom_types.hpp"
#include "support/test_data.hpp"
#include "xreduce/custom.hpp"

namespace xr = xreduce;
using xr::test::Mat3, xr::test::Mat3Min, xr::test::Point3, xr::test::Farthest;

namespace {

//! The backend names the template API can run on here, and "auto".
std::vector<std::string> custom_backends() {
  std::vector<std::string> names;
  for (xr::Reducer* r : xr::test::backends())
    if (r->run_chunks(0, [](void*, std::size_t) {}, nullptr, 0)) names.emplace_back(r->name());
  if (xr::test::selected("auto")) names.emplace_back("auto");
  return names;
}

std::vector<std::size_t> custom_sizes() {
  if (xr::test::quick()) return {0, 1, 1000, 70001};
  return {0, 1, 7, 1000, 65537, (std::size_t{1} << 20) + 3};
}

//! Within 64 eps(double) of the exact sum of |x| (the f64 sum tolerance of the semantics table).
void check_double_sum(double got, const std::vector<double>& terms) {
  const xr::Request q{terms.data(), terms.size(), xr::DType::f64, xr::Op::sum, xr::Memory::host};
  const xr::Reference ref = xr::exact_reference(q);
  INFO("got " << got << ", exact " << ref.value.to_string() << ", tolerance " << xr::tolerance(q, ref));
  CHECK(std::fabs(got - ref.value.get<double>()) <= xr::tolerance(q, ref));
}

}  // namespace

TEST_CASE("custom reductions: user types and operators on every backend that runs user code") {
  std::mt19937_64 rng(xr::test::run_seed() ^ 0xC057ull);
  std::uniform_int_distribution<std::int32_t> any_int;
  std::uniform_real_distribution<float> coord(-10, 10);
  for (const std::string& backend : custom_backends()) {
    const xr::Policy policy{.backend = backend, .check_laws = true};
    for (std::size_t n : custom_sizes()) {
      INFO("seed " << xr::test::run_seed() << " (replay with XREDUCE_TEST_SEED), backend " << backend << ", n = " << n);
      std::vector<Mat3> mats(n);
      for (Mat3& m : mats)
        for (auto& v : m.m) v = any_int(rng);
      Mat3 want = xr::test::mat3_min_identity();
      for (const Mat3& m : mats) want = Mat3Min{}(want, m);
      CHECK(xr::reduce(policy, mats, Mat3Min{}, xr::test::mat3_min_identity()) == want);

      std::vector<Point3> points(n);
      for (Point3& p : points) p = {coord(rng), coord(rng), coord(rng)};
      if (n > 2) points[n / 2] = points[n / 3];  // a tie: the operator must not care which comes first
      Point3 far{0, 0, 0};
      for (const Point3& p : points) far = Farthest{}(far, p);
      CHECK(xr::reduce(policy, points, Farthest{}, Point3{0, 0, 0}) == far);

      std::vector<std::uint64_t> words(n);
      for (auto& w : words) w = rng();
      std::uint64_t wrapped = 0;
      for (auto w : words) wrapped += w;
      CHECK(xr::reduce(policy, words, std::plus<>{}, std::uint64_t{0}) == wrapped);
    }
  }
}

TEST_CASE("custom reductions: transform-reduce (sum of squares, L2 norm, count) on every backend") {
  std::mt19937_64 rng(xr::test::run_seed() ^ 0x7A5Full);
  std::uniform_real_distribution<float> unit(-1, 1);
  std::vector<float> first_bits;  // the same bits from every backend: the chunking does not depend on it
  for (const std::string& backend : custom_backends()) {
    const xr::Policy policy{.backend = backend, .check_laws = true};
    std::mt19937_64 data_rng(xr::test::run_seed());
    for (std::size_t n : custom_sizes()) {
      INFO("seed " << xr::test::run_seed() << ", backend " << backend << ", n = " << n);
      std::vector<float> x(n);
      for (float& v : x) v = unit(data_rng);
      std::vector<double> squares(n), values(n);
      std::uint64_t positive = 0;
      for (std::size_t i = 0; i < n; ++i) {
        squares[i] = double(x[i]) * double(x[i]);  // exact: 24-bit mantissas
        values[i] = x[i];
        positive += x[i] > 0.5f;
      }
      const auto square = [](float v) { return double(v) * double(v); };
      check_double_sum(xr::transform_reduce(policy, x, 0.0, std::plus<>{}, square), squares);
      check_double_sum(xr::transform_reduce(policy, x, 0.0, std::plus<>{}, [](float v) { return double(v); }), values);
      CHECK(xr::transform_reduce(policy, x, std::uint64_t{0}, std::plus<>{},
                                 [](float v) { return std::uint64_t{v > 0.5f}; }) == positive);
      const float f32_sum = xr::reduce(policy, x, std::plus<>{}, 0.0f);
      if (n == custom_sizes().back()) {
        first_bits.push_back(f32_sum);
        CHECK(first_bits.front() == f32_sum);
      }
      (void)rng;
    }
  }
}
