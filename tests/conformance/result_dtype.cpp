// Options::result_dtype over every backend: float sums, products and sums of squares in a wider
// type than their elements' (f16 and bf16 to f32 or f64, f32 to f64), flat and along axes, within
// the stated bound of the exact value (MPFR); exact sums MPFR's sum rounded once to that type, bit
// for bit; the float statistics as f64 along columns, rows and gathered axes; what takes no other
// type refused with invalid_argument, a backend that cannot return it with unsupported.

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "conformance/backends.hpp"
#include "support/exact_data.hpp"
#include "support/mpfr_reference.hpp"
#include "support/test_data.hpp"
#include "xreduce/backend/reducer.hpp"
#include "xreduce/xreduce.hpp"

namespace xr = xreduce;
using xr::test::backends, xr::test::memory_for, xr::test::quick;

namespace {

//! Elements of T with exponents over a few binades and both signs: sums that cancel a little.
template <class T>
std::vector<T> spread(std::size_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::vector<T> v(n);
  for (T& x : v) x = T(std::ldexp(unit(rng), static_cast<int>(rng() % 12) - 6));
  return v;
}

template <class R>
R value_of(const xr::Scalar& s) {
  REQUIRE(s.dtype() == xr::dtype_of<R>());
  return s.get<R>();
}

//! Whether `r` runs requests of q's features with result type `asked` (else it must refuse them).
bool runs(xr::Reducer& r, const xr::Request& q, xr::DType asked, xr::Accuracy accuracy) {
  return r.capabilities().support(xr::features_of(xr::canonical(q), accuracy, asked)) != xr::Support::none;
}

//! Sums of T asked as R, flat, standard and exact, on every backend.
template <class T, class R>
void sums_in(std::mt19937_64& rng) {
  const std::vector<std::size_t> sizes = quick() ? std::vector<std::size_t>{1, 1000, 70001}
                                                 : std::vector<std::size_t>{1, 33, 1000, 65537, (1u << 20) + 7};
  for (std::size_t n : sizes) {
    const std::vector<T> x = spread<T>(n, rng);
    const xr::Request q{x.data(), n, xr::dtype_of<T>(), xr::Op::sum, xr::Memory::host};
    const R exact = xr::test::mpfr_sum<T, R>(x.data(), n);
    double magnitudes = 0;
    for (T v : x) magnitudes += std::fabs(static_cast<double>(v));
    // The stated bound (docs/semantics.md): f32 lanes, f64 partials, one rounding to R.
    const double bound = 64 * 0x1p-23 * magnitudes + std::numeric_limits<R>::epsilon() * std::fabs(static_cast<double>(exact)) +
                         static_cast<double>(std::numeric_limits<R>::denorm_min());
    for (xr::Reducer* r : backends()) {
      if (memory_for(*r) != xr::Memory::host) continue;
      INFO("seed " << xr::test::run_seed() << ", backend " << r->name() << ", sum of " << n << " " << to_string(xr::dtype_of<T>())
                   << " as " << to_string(xr::dtype_of<R>()));
      for (xr::Accuracy accuracy : {xr::Accuracy::standard, xr::Accuracy::exact}) {
        const xr::Options o{.accuracy = accuracy, .result_dtype = xr::dtype_of<R>()};
        if (!runs(*r, q, xr::dtype_of<R>(), accuracy)) {
          CHECK_THROWS_AS(r->reduce(q, o), xr::Error);
          continue;
        }
        const R got = value_of<R>(r->reduce(q, o).value);
        if (accuracy == xr::Accuracy::exact) CHECK(xr::test::same_bits(got, exact));
        else CHECK(std::fabs(static_cast<double>(got) - static_cast<double>(exact)) <= bound);
      }
    }
  }
}

}  // namespace

TEST_CASE("result_dtype: sums of f16 and bf16 as f32 and f64, f32 as f64, every backend") {
  std::mt19937_64 rng(xr::test::run_seed() ^ 0x7e5u);
  sums_in<xr::f16, float>(rng);
  sums_in<xr::f16, double>(rng);
  sums_in<xr::bf16, float>(rng);
  sums_in<xr::bf16, double>(rng);
  sums_in<float, double>(rng);
}

TEST_CASE("result_dtype: an f16 sum past 65504 is finite as f32; products and sums of squares too") {
  const std::vector<xr::f16> ones(70000, xr::f16(1.0));
  const xr::Request q{ones.data(), ones.size(), xr::DType::f16, xr::Op::sum, xr::Memory::host};
  const std::vector<xr::f16> grow(40, xr::f16(1.5));  // 1.5^40 = 11057332.3: far past the f16 range
  const xr::Request prod{grow.data(), grow.size(), xr::DType::f16, xr::Op::prod, xr::Memory::host};
  const xr::Request squares{ones.data(), ones.size(), xr::DType::f16, xr::Op::sumsq, xr::Memory::host};
  for (xr::Reducer* r : backends()) {
    if (memory_for(*r) != xr::Memory::host || r->capabilities().support(xr::DType::f16, xr::Op::sum) != xr::Support::exact) continue;
    INFO("backend " << r->name());
    CHECK(std::isinf(static_cast<double>(r->reduce(q).value.get<xr::f16>())));
    for (const xr::Request* each : {&q, &prod, &squares}) {
      if (!runs(*r, *each, xr::DType::f32, xr::Accuracy::standard)) continue;
      const float got = value_of<float>(r->reduce(*each, {.result_dtype = xr::DType::f32}).value);
      const double want = each == &prod ? std::pow(1.5, 40) : 70000.0;
      CHECK(std::fabs(got - want) <= 64 * 0x1p-23 * want);
    }
  }
}

TEST_CASE("result_dtype: along axes, rows and columns of f16 as f32") {
  std::mt19937_64 rng(xr::test::run_seed() ^ 0xa1e5u);
  const std::size_t rows = 37, cols = 1029;
  const std::vector<xr::f16> x = spread<xr::f16>(rows * cols, rng);
  for (std::size_t axis : {std::size_t{0}, std::size_t{1}}) {
    const xr::Request q = xr::Request::over(x.data(), xr::DType::f16, xr::View::of({static_cast<std::int64_t>(rows), static_cast<std::int64_t>(cols)}), {axis});
    const std::size_t results = axis == 0 ? cols : rows, length = axis == 0 ? rows : cols;
    for (xr::Reducer* r : backends()) {
      if (memory_for(*r) != xr::Memory::host) continue;
      INFO("backend " << r->name() << ", axis " << axis);
      if (!runs(*r, q, xr::DType::f32, xr::Accuracy::standard)) {
        CHECK_THROWS_AS(r->reduce(q, {.result_dtype = xr::DType::f32}), xr::Error);
        continue;
      }
      const xr::Result res = r->reduce(q, {.result_dtype = xr::DType::f32});
      REQUIRE(res.values.size() == results);
      for (std::size_t k = 0; k < results; ++k) {
        std::vector<xr::f16> slice(length);
        double magnitudes = 0;
        for (std::size_t i = 0; i < length; ++i) {
          slice[i] = axis == 0 ? x[i * cols + k] : x[k * cols + i];
          magnitudes += std::fabs(static_cast<double>(slice[i]));
        }
        const float want = xr::test::mpfr_sum<xr::f16, float>(slice.data(), length);
        CHECK(std::fabs(value_of<float>(res.values[k]) - want) <= 64 * 0x1p-23 * magnitudes + 0x1p-23 * std::fabs(want));
      }
    }
  }
}

namespace {

//! The elements of each result of C-order `shape` reduced over `axes`, as doubles (exact for
//! every float type), results in C order of the kept axes.
template <class T>
std::vector<std::vector<double>> slices_of(const std::vector<T>& x, const std::vector<std::int64_t>& shape, const xr::Axes& axes) {
  std::vector<std::size_t> kept_extent;
  for (std::size_t k = 0; k < shape.size(); ++k)
    if (!axes.contains(k)) kept_extent.push_back(static_cast<std::size_t>(shape[k]));
  std::size_t results = 1;
  for (std::size_t e : kept_extent) results *= e;
  std::vector<std::vector<double>> out(results);
  std::vector<std::size_t> at(shape.size(), 0);
  for (std::size_t i = 0; i < x.size(); ++i) {
    std::size_t result = 0;
    for (std::size_t k = 0; k < shape.size(); ++k)
      if (!axes.contains(k)) result = result * static_cast<std::size_t>(shape[k]) + at[k];
    out[result].push_back(static_cast<double>(x[i]));
    for (std::size_t k = shape.size(); k-- > 0;) {  // the next index in C order
      if (++at[k] < static_cast<std::size_t>(shape[k])) break;
      at[k] = 0;
    }
  }
  return out;
}

//! Statistic `op` of `v` (finite doubles), correction `c`: MPFR's mean, var and std and sums
//! rounded once to f64; the rest from them.
double statistic_of(xr::Op op, const std::vector<double>& v, double c) {
  const std::size_t n = v.size();
  auto sum_of = [&](auto f) {
    std::vector<double> mapped(n);
    std::transform(v.begin(), v.end(), mapped.begin(), f);
    return xr::test::mpfr_sum(mapped.data(), n);
  };
  switch (op) {
    case xr::Op::mean: case xr::Op::nanmean: return xr::test::mpfr_moments(v.data(), n, c).mean;
    case xr::Op::var: case xr::Op::nanvar: return xr::test::mpfr_moments(v.data(), n, c).var;
    case xr::Op::std: case xr::Op::nanstd: return xr::test::mpfr_moments(v.data(), n, c).std;
    case xr::Op::nansum: return sum_of([](double a) { return a; });
    case xr::Op::norm1: return sum_of([](double a) { return std::fabs(a); });
    case xr::Op::norm2: return std::sqrt(sum_of([](double a) { return a * a; }));  // exact squares: f32 and narrower
    case xr::Op::norminf: {
      double top = 0;
      for (double a : v) top = std::max(top, std::fabs(a));
      return top;
    }
    default: {  // logsumexp
      const double top = *std::max_element(v.begin(), v.end());
      long double s = 0;
      for (double a : v) s += std::exp(static_cast<long double>(a) - top);
      return static_cast<double>(top + std::log(s));
    }
  }
}

//! The float statistics of T asked as f64 over `axes` of `shape`, on every host backend: each
//! result within 4 n eps(f32) of the exact value (the 16-bit floats accumulate in f32 at least),
//! relative to it or to 1; a result of T's own type read as f64 would be far off.
template <class T>
void statistics_as_f64(const std::vector<std::int64_t>& shape, const xr::Axes& axes, std::mt19937_64& rng) {
  std::size_t n = 1;
  for (std::int64_t e : shape) n *= static_cast<std::size_t>(e);
  const std::vector<T> x = spread<T>(n, rng);
  const std::vector<std::vector<double>> slices = slices_of(x, shape, axes);
  const xr::View view = xr::View::of(shape.data(), nullptr, shape.size());  // C order
  for (xr::Op op : {xr::Op::mean, xr::Op::var, xr::Op::std, xr::Op::nanmean, xr::Op::nanvar, xr::Op::nanstd, xr::Op::nansum,
                    xr::Op::norm1, xr::Op::norm2, xr::Op::norminf, xr::Op::logsumexp}) {
    xr::Request q = xr::Request::over(x.data(), xr::dtype_of<T>(), view, axes, op);
    q.correction = static_cast<double>(rng() % 2);
    std::vector<double> want(slices.size());  // once, for every backend
    for (std::size_t k = 0; k < slices.size(); ++k) want[k] = statistic_of(op, slices[k], q.correction);
    for (xr::Reducer* r : backends()) {
      if (memory_for(*r) != xr::Memory::host) continue;
      INFO("seed " << xr::test::run_seed() << ", backend " << r->name() << ", " << to_string(op) << " of " << to_string(xr::dtype_of<T>())
                   << " as f64, " << shape.size() << "-D, correction " << q.correction);
      if (!runs(*r, q, xr::DType::f64, xr::Accuracy::standard)) {
        CHECK_THROWS_AS(r->reduce(q, {.result_dtype = xr::DType::f64}), xr::Error);
        continue;
      }
      const xr::Result res = r->reduce(q, {.result_dtype = xr::DType::f64});
      REQUIRE(res.values.size() == slices.size());
      for (std::size_t k = 0; k < slices.size(); ++k) {
        const double got = value_of<double>(res.values[k]);
        INFO("result " << k << ": " << got << ", exact " << want[k]);
        CHECK(std::fabs(got - want[k]) <= 4 * static_cast<double>(slices[k].size()) * 0x1p-23 * std::max(std::fabs(want[k]), 1.0));
      }
    }
  }
}

}  // namespace

TEST_CASE("result_dtype: statistics of f16, bf16 and f32 as f64 along columns, rows and gathered axes") {
  std::mt19937_64 rng(xr::test::run_seed() ^ 0x57a7u);
  // Axis 0 of a matrix: its columns (columns.cpp); axis 1: its rows; axes 0 and 2 of a 3-D
  // array: each result's elements gathered (host_segments.cpp).
  const std::vector<std::int64_t> matrix{37, 261}, cube{6, 5, 31};
  for (const auto& [shape, axes] : {std::pair{matrix, xr::Axes{0}}, std::pair{matrix, xr::Axes{1}}, std::pair{cube, xr::Axes{0, 2}}}) {
    statistics_as_f64<xr::f16>(shape, axes, rng);
    statistics_as_f64<xr::bf16>(shape, axes, rng);
    statistics_as_f64<float>(shape, axes, rng);
  }
}

TEST_CASE("result_dtype: what takes no other type is refused, naming what it can be") {
  const std::vector<float> f(10, 1.0f);
  const std::vector<std::int32_t> i(10, 1);
  const std::vector<xr::f16> h(10, xr::f16(1.0));
  auto refused = [](const xr::Request& q, xr::DType asked) {
    try {
      xr::reduce(q, {.result_dtype = asked});
    } catch (const xr::Error& e) {
      return e.code() == xr::ErrorCode::invalid_argument;
    }
    return false;
  };
  CHECK(refused(xr::Request{f.data(), f.size(), xr::DType::f32, xr::Op::sum, xr::Memory::host}, xr::DType::f16));  // narrower
  CHECK(refused(xr::Request{f.data(), f.size(), xr::DType::f32, xr::Op::max, xr::Memory::host}, xr::DType::f64));  // not a sum
  CHECK(refused(xr::Request{i.data(), i.size(), xr::DType::i32, xr::Op::sum, xr::Memory::host}, xr::DType::f64));  // integers
  CHECK(refused(xr::Request{h.data(), h.size(), xr::DType::f16, xr::Op::sum, xr::Memory::host}, xr::DType::bf16));
  xr::Request several{h.data(), h.size(), xr::DType::f16, xr::Op::sum, xr::Memory::host};
  several.ops = xr::OpSet{xr::Op::sum, xr::Op::max};
  CHECK(refused(several, xr::DType::f32));
  CHECK_THROWS_WITH(xr::reduce(xr::Request{h.data(), h.size(), xr::DType::f16, xr::Op::sum, xr::Memory::host}, {.result_dtype = xr::DType::u8}),
                    doctest::Contains("it can be f16 or f32 or f64"));
  // Its own type is always fine, and the same as not asking.
  CHECK(xr::reduce(xr::Request{i.data(), i.size(), xr::DType::i32, xr::Op::sum, xr::Memory::host}, {.result_dtype = xr::DType::i64}).value ==
        xr::Scalar(std::int64_t{10}));
  // Nothing to read: the identity, of the type asked.
  const xr::Result empty = xr::reduce(xr::Request{h.data(), 0, xr::DType::f16, xr::Op::sum, xr::Memory::host}, {.result_dtype = xr::DType::f64});
  CHECK(empty.value == xr::Scalar(0.0));
}
