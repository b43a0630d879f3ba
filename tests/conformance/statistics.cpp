// The statistics over every backend that declares them: exact mean, var and std bit for bit
// against MPFR (computed from the elements here, sharing nothing with the library's exact path),
// standard ones within their bound on cancellation-heavy data, and the refusals.

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "conformance/backends.hpp"
#include "support/mpfr_reference.hpp"

namespace xr = xreduce;
using xr::test::backends, xr::test::memory_for;

namespace {

//! Random data: uniform, offset (mean 1e4, spread 1e-3) or wide (magnitudes 2^-40..2^40).
template <class T>
std::vector<T> draw(std::mt19937_64& rng, std::size_t n, int kind) {
  std::uniform_real_distribution<double> u(-1, 1);
  std::uniform_int_distribution<int> e(-40, 40);
  std::vector<T> x(n);
  for (T& v : x) v = static_cast<T>(kind == 0 ? u(rng) : kind == 1 ? 1e4 + 1e-3 * u(rng) : std::ldexp(u(rng), e(rng)));
  return x;
}

bool declares(xr::Reducer& r, const xr::Request& q, const xr::Options& o = {}) {
  return r.capabilities().support(xr::features_of(q, o.accuracy.value_or(xr::Accuracy::standard))) != xr::Support::none;
}

template <class T>
void moments_over_backends() {
  const std::uint64_t seed = std::random_device{}();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  constexpr xr::DType dtype = xr::dtype_of<T>();
  xr::Options exact;
  exact.accuracy = xr::Accuracy::exact;
  for (std::size_t n : {1u, 2u, 7u, 300u, 5000u, 70000u})
    for (int kind = 0; kind < 3; ++kind)
      for (double correction : {0.0, 1.0}) {
        const std::vector<T> x = draw<T>(rng, n, kind);
        const xr::test::MpfrMoments<T> want = xr::test::mpfr_moments(x.data(), x.size(), correction);
        for (xr::Reducer* r : backends()) {
          if (memory_for(*r) != xr::Memory::host) continue;
          xr::Request q{x.data(), x.size(), dtype, xr::Op::mean, xr::Memory::host};
          q.correction = correction;
          if (!declares(*r, q, exact)) continue;
          INFO("backend " << r->name() << ", n " << n << ", kind " << kind << ", correction " << correction);
          auto value = [&](xr::Op op, const xr::Options& o) {
            q.op = op;
            return r->reduce(q, o).value.template get<T>();
          };
          CHECK(value(xr::Op::mean, exact) == want.mean);
          if (n > correction) {
            CHECK(value(xr::Op::var, exact) == want.var);
            CHECK(value(xr::Op::std, exact) == want.std);
            // Standard: the result's last rounding, and the double accumulation's error in terms
            // of the data (statistic_reference's bound; far below the textbook formula's on kind 1).
            const double v = static_cast<double>(want.var), spread = std::sqrt(v);
            const double eps = static_cast<double>(std::numeric_limits<T>::epsilon());
            double largest = 0;
            for (T e : x) largest = std::max(largest, std::fabs(static_cast<double>(e)));
            const double bound = eps * v + 4096 * 0x1p-52 * (v + largest * spread);
            CHECK(std::fabs(static_cast<double>(value(xr::Op::var, {})) - v) <= bound);
            CHECK(std::fabs(static_cast<double>(value(xr::Op::mean, {})) - static_cast<double>(want.mean)) <=
                  eps * std::fabs(static_cast<double>(want.mean)) + 64 * 0x1p-52 * largest);
            // The moments a var hands on (Result::moments: the CPU backends and cuda.shuffle keep
            // them), for a combine of parts: n, the sum and m2, unrounded.
            q.op = xr::Op::var;
            const xr::Result full = r->reduce(q);
            const std::string name(r->name());
            if (name == "sequential" || name == "openmp" || name == "tbb") REQUIRE(full.moments.has_value());
            if (full.moments) {
              CHECK(full.moments->n == static_cast<double>(n));
              CHECK(std::fabs(full.moments->m2 / (static_cast<double>(n) - correction) - v) <= bound);
              CHECK(std::fabs(full.moments->sum / static_cast<double>(n) - static_cast<double>(want.mean)) <=
                    eps * std::fabs(static_cast<double>(want.mean)) + 64 * 0x1p-52 * largest);
            }
          } else {
            CHECK(std::isnan(value(xr::Op::var, exact)));
          }
        }
      }
}

}  // namespace

TEST_CASE("every backend: exact mean, var and std are rounded once, f32") { moments_over_backends<float>(); }
TEST_CASE("every backend: exact mean, var and std are rounded once, f64") { moments_over_backends<double>(); }

TEST_CASE("every backend: statistics refuse what they do not do") {
  std::vector<double> x(64, 2.0);
  for (xr::Reducer* r : backends()) {
    if (memory_for(*r) != xr::Memory::host) continue;
    xr::Request q{x.data(), x.size(), xr::DType::f64, xr::Op::var, xr::Memory::host};
    if (!declares(*r, q)) {
      CHECK_THROWS_AS(r->reduce(q), xr::Error);
      continue;
    }
    INFO("backend " << r->name());
    xr::Request several = q;
    several.ops = {xr::Op::sum, xr::Op::var};
    xr::Options exact_several;
    exact_several.accuracy = xr::Accuracy::exact;
    CHECK_THROWS_WITH_AS(r->reduce(several, exact_several), doctest::Contains("alone"), xr::Error);
    xr::Request negative = q;
    negative.correction = -1;
    CHECK_THROWS_WITH_AS(r->reduce(negative), doctest::Contains("correction"), xr::Error);
    xr::Options exact;
    exact.accuracy = xr::Accuracy::exact;
    xr::Request lse = q;
    lse.op = xr::Op::logsumexp;
    CHECK_THROWS_WITH_AS(r->reduce(lse, exact), doctest::Contains("accuracy 'exact'"), xr::Error);
    const xr::Request columns = xr::Request::records(x.data(), 16, 4, xr::DType::f64, xr::Op::var);
    CHECK_THROWS_AS(r->reduce(columns, exact), xr::Error);  // exact statistics: one result, for now
    x[3] = 0x1p600;
    // A backend with exact variances (the CPU's) says why it refuses these; one without
    // (cuda.multi_gpu, which reads host memory too) refuses every exact variance.
    if (declares(*r, q, exact)) CHECK_THROWS_WITH_AS(r->reduce(q, exact), doctest::Contains("2^511"), xr::Error);
    else CHECK_THROWS_AS(r->reduce(q, exact), xr::Error);
    x[3] = 2.0;
    CHECK(r->reduce(q).value == xr::Scalar(0.0));
  }
}
