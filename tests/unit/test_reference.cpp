#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

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
