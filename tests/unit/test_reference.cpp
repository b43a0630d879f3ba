#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "support/test_data.hpp"
#include "xreduce/xreduce.hpp"

namespace xr = xreduce;

TEST_CASE("reference: floating sums are exactly rounded") {
  std::vector<double> v{1e100, 1.0, -1e100, 1e-100};
  auto ref = xr::exact_reference(xr::Request{v.data(), v.size(), xr::DType::f64, xr::Op::sum});
  CHECK(ref.value.get<double>() == 1.0 + 1e-100);  // 1.0 (1e-100 rounds away)
  std::vector<float> f(1 << 20, 0.1f);
  auto fref = xr::exact_reference(xr::Request{f.data(), f.size(), xr::DType::f32, xr::Op::sum});
  CHECK(fref.value.get<float>() == static_cast<float>(static_cast<double>(0.1f) * (1 << 20)));
}

TEST_CASE("reference: integer sums and products wrap modulo 2^64") {
  std::vector<std::int64_t> v{std::numeric_limits<std::int64_t>::max(), 1};
  auto ref = xr::exact_reference(xr::Request{v.data(), v.size(), xr::DType::i64, xr::Op::sum});
  CHECK(ref.value.get<std::int64_t>() == std::numeric_limits<std::int64_t>::min());
  std::vector<std::int32_t> w{-3, 5};
  CHECK(xr::exact_reference(xr::Request{w.data(), 2, xr::DType::i32, xr::Op::prod}).value.get<std::int64_t>() == -15);
}

TEST_CASE("reference and agreement: NaN, infinities, ties") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  std::vector<float> v{3, 1, nan, 1, nan};
  xr::Request q{v.data(), v.size(), xr::DType::f32, xr::Op::argmin};
  auto ref = xr::exact_reference(q);
  CHECK(*ref.index == 2);
  CHECK(std::isnan(ref.value.get<float>()));
  v = {3, 1, 2, 1};
  q = xr::Request{v.data(), v.size(), xr::DType::f32, xr::Op::argmin};
  ref = xr::exact_reference(q);
  CHECK(*ref.index == 1);
  CHECK(xr::agrees(q, ref, xr::Result{xr::Scalar(1.0f), 1, ""}));
  CHECK_FALSE(xr::agrees(q, ref, xr::Result{xr::Scalar(1.0f), 3, ""}));  // same value, later index
  v = {inf, -inf, 1};
  q = xr::Request{v.data(), v.size(), xr::DType::f32, xr::Op::sum};
  ref = xr::exact_reference(q);
  CHECK(std::isnan(ref.value.get<float>()));
  CHECK(xr::agrees(q, ref, xr::Result{xr::Scalar(nan), {}, ""}));
  CHECK_FALSE(xr::agrees(q, ref, xr::Result{xr::Scalar(inf), {}, ""}));
}

TEST_CASE("agreement: floating sums within 64 eps sum|x|, not beyond") {
  std::vector<float> v{1.0f, 2.0f};
  xr::Request q{v.data(), v.size(), xr::DType::f32, xr::Op::sum};
  auto ref = xr::exact_reference(q);
  const double tol = xr::tolerance(q, ref);
  CHECK(tol == doctest::Approx(64 * 3 * std::numeric_limits<float>::epsilon()));
  CHECK(xr::agrees(q, ref, xr::Result{xr::Scalar(3.0f + 8 * std::numeric_limits<float>::epsilon()), {}, ""}));
  CHECK_FALSE(xr::agrees(q, ref, xr::Result{xr::Scalar(3.0f + 512 * std::numeric_limits<float>::epsilon()), {}, ""}));
  CHECK_FALSE(xr::agrees(q, ref, xr::Result{xr::Scalar(3.0), {}, ""}));  // wrong type
}

namespace {

//! The statistics' reference over data with NaN and infinities placed among random finite values:
//! what IEEE arithmetic over every element gives, whatever route the reference takes to it.
template <class T>
void check_specials_follow_ieee(std::mt19937_64& rng) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  struct Specials {
    const char* name;
    std::vector<double> values;
  };
  const Specials cases[] = {{"+inf", {inf}},     {"-inf", {-inf}},       {"+inf and -inf", {inf, -inf}},
                            {"NaN", {nan}},      {"NaN and +inf", {nan, inf}}, {"+inf and 0", {inf, 0.0}}};
  for (const Specials& c : cases) {
    std::vector<T> x(1 + rng() % 5000);
    for (T& v : x) v = static_cast<T>(std::ldexp(static_cast<double>(1 + rng() % 1000), -static_cast<int>(rng() % 12)) * (rng() % 2 ? 1 : -1));
    for (double special : c.values)  // each at a random place
      x.insert(x.begin() + static_cast<std::ptrdiff_t>(rng() % (x.size() + 1)), static_cast<T>(special));
    const auto negatives = std::count_if(x.begin(), x.end(), [](T v) { return static_cast<double>(v) < 0; });  // the product's sign
    auto has = [&](auto is) { return std::any_of(c.values.begin(), c.values.end(), is); };
    const bool has_nan = has([](double v) { return std::isnan(v); }), has_pos = has([&](double v) { return v == inf; }),
               has_neg = has([&](double v) { return v == -inf; }), has_zero = has([](double v) { return v == 0; });
    const double mean = has_nan || (has_pos && has_neg) ? nan : has_pos ? inf : -inf;
    const double norm = has_nan ? nan : inf;
    const double prod = has_nan || has_zero ? nan : negatives % 2 ? -inf : inf;
    // logsumexp with -inf alone: exp(-inf) adds 0, so the finite elements' own value.
    std::vector<T> finite;
    std::copy_if(x.begin(), x.end(), std::back_inserter(finite), [](T v) { return std::isfinite(static_cast<double>(v)); });
    const double lse = has_nan ? nan : has_pos ? inf
                                               : xr::exact_reference(xr::Request{finite.data(), finite.size(), xr::dtype_of<T>(), xr::Op::logsumexp})
                                                     .value.to_double();
    const std::pair<xr::Op, double> expected[] = {{xr::Op::mean, mean},   {xr::Op::var, nan},      {xr::Op::std, nan},
                                                  {xr::Op::norm1, norm},  {xr::Op::norm2, norm},   {xr::Op::norminf, norm},
                                                  {xr::Op::logsumexp, lse}, {xr::Op::prod, prod}};
    for (const auto& [op, want] : expected) {
      const double got = xr::exact_reference(xr::Request{x.data(), x.size(), xr::dtype_of<T>(), op}).value.to_double();
      INFO("seed " << xr::test::run_seed() << " (replay with XREDUCE_TEST_SEED), " << to_string(op) << " of " << to_string(xr::dtype_of<T>())
                   << ", n = " << x.size() << ", specials " << std::string(c.name) << ": got " << got << ", want " << want);
      CHECK((std::isnan(want) ? std::isnan(got) : got == want));
    }
  }
}

}  // namespace

TEST_CASE("reference: statistics and products of NaN and infinite data follow IEEE arithmetic") {
  std::mt19937_64 rng(xr::test::run_seed());
  for (int round = 0; round < 20; ++round) {
    check_specials_follow_ieee<float>(rng);
    check_specials_follow_ieee<double>(rng);
    check_specials_follow_ieee<xr::f16>(rng);
    check_specials_follow_ieee<xr::bf16>(rng);
  }
}
