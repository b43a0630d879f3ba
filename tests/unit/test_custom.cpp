// The template API's errors: broken operator laws are caught and named, with the values; names
// that cannot run user code are refused.

#include <doctest/doctest.h>

#include <random>
#include <vector>

#include "support/custom_types.hpp"
#include "support/test_data.hpp"
#include "xreduce/custom.hpp"
#include "xreduce/xreduce.hpp"

namespace xr = xreduce;

namespace {

std::vector<double> random_doubles(std::size_t n) {
  std::mt19937_64 rng(xr::test::run_seed());
  std::uniform_real_distribution<double> u(1, 2);
  std::vector<double> v(n);
  for (double& x : v) x = u(rng);
  return v;
}

const xr::Policy checked{.backend = "sequential", .check_laws = true};

}  // namespace

TEST_CASE("custom: a wrong identity is caught, naming the law and the values") {
  INFO("seed " << xr::test::run_seed());
  std::vector<double> v = random_doubles(100);
  CHECK_THROWS_WITH_AS(xr::reduce(checked, v, std::plus<>{}, 1.0), doctest::Contains("the identity law"), xr::Error);
  CHECK_THROWS_WITH_AS(xr::reduce(checked, v, std::multiplies<>{}, 0.0), doctest::Contains("identity = 0"), xr::Error);
  try {
    xr::reduce(checked, v, std::plus<>{}, 1.0);
  } catch (const xr::Error& e) {
    CHECK(e.code() == xr::ErrorCode::invalid_argument);
  }
}

TEST_CASE("custom: non-commutative and non-associative operators are caught") {
  INFO("seed " << xr::test::run_seed());
  std::vector<double> v = random_doubles(100);
  // Subtraction with identity 0: op(0, a) = -a breaks the identity law first.
  CHECK_THROWS_WITH_AS(xr::reduce(checked, v, std::minus<>{}, 0.0), doctest::Contains("breaks"), xr::Error);
  // "Keep the first": associative, has no commutativity.
  auto first = [](double a, double b) { return std::isnan(a) ? b : a; };
  CHECK_THROWS_WITH_AS(xr::reduce(checked, v, first, std::nan("")), doctest::Contains("commutativity"), xr::Error);
  // The mean of two: commutative, not associative (identity checks pass for its fixed point only,
  // so check_laws is called with a sample that contains just that point and others).
  auto mean = [](double a, double b) { return (a + b) / 2; };
  std::vector<double> sample{1, 2, 4, 8};
  CHECK_THROWS_WITH_AS(xr::check_laws<double>(sample, mean, 1.0), doctest::Contains("breaks"), xr::Error);
  // Farthest point with a plain `>`: not commutative on ties, which the sample has.
  std::vector<xr::test::Point3> tie{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
  auto plain_farthest = [](xr::test::Point3 a, xr::test::Point3 b) {
    return xr::test::Farthest::norm2(b) > xr::test::Farthest::norm2(a) ? b : a;
  };
  CHECK_THROWS_WITH_AS(xr::check_laws<xr::test::Point3>(tie, plain_farthest, {0, 0, 0}),
                       doctest::Contains("commutativity: op(a, b) = (1, 0, 0) but op(b, a) = (0, 1, 0)"), xr::Error);
  CHECK_NOTHROW(xr::check_laws<xr::test::Point3>(tie, xr::test::Farthest{}, {0, 0, 0}));
}

TEST_CASE("custom: floating rounding within the tolerance is not a broken law") {
  std::vector<double> v = random_doubles(1000);
  CHECK_NOTHROW(xr::reduce(checked, v, std::plus<>{}, 0.0));
  std::vector<float> f(v.begin(), v.end());
  CHECK_NOTHROW(xr::reduce(checked, f, std::plus<>{}, 0.0f));
  // A type without operator== or operator<< is compared and shown by its bytes.
  struct Raw {
    std::int32_t a;
  };
  std::vector<Raw> raw{{1}, {2}, {3}};
  auto keep_left = [](Raw a, Raw) { return a; };
  CHECK_THROWS_WITH_AS(xr::check_laws<Raw>(raw, keep_left, Raw{0}), doctest::Contains("4 bytes: 00000000"), xr::Error);
}

TEST_CASE("custom: laws are not checked unless asked (release builds), and empty input gives the identity") {
  std::vector<double> v = random_doubles(10);
  const xr::Policy unchecked{.backend = "sequential", .check_laws = false};
  CHECK_NOTHROW(xr::reduce(unchecked, v, std::minus<>{}, 0.0));
  std::vector<double> none;
  CHECK(xr::reduce(checked, none, std::plus<>{}, 42.0) == 42.0);
}

TEST_CASE("custom: only backends that run host code take a user's operator") {
  std::vector<double> v = random_doubles(10);
  CHECK_THROWS_WITH_AS(xr::reduce(xr::Policy{.backend = "nope"}, v, std::plus<>{}, 0.0), doctest::Contains("nope"), xr::Error);
  try {
    xr::reduce(xr::Policy{.backend = "sequential.naive"}, v, std::plus<>{}, 0.0);
    FAIL("no error");
  } catch (const xr::Error& e) {
    CHECK(e.code() == xr::ErrorCode::unsupported);
    CHECK(std::string(e.what()).find("sequential") != std::string::npos);
  }
}
