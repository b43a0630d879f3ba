// The 16-bit floats (xreduce/float16.hpp): every one of the 65536 patterns of f16 and of bf16
// widens to the value its fields say, and doubles round to them as MPFR rounds them (nearest, ties
// to even, subnormals, overflow to infinity): at every midpoint between neighbours, one double
// ulp either side of it, and at random doubles across and beyond each type's range.

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <ios>
#include <map>
#include <random>

#include "support/mpfr_reference.hpp"
#include "support/test_data.hpp"
#include "xreduce/float16.hpp"

namespace xr = xreduce;

namespace {

//! The value of a pattern from its fields alone (kMant stored significand bits, kExp exponent bits).
template <int kMant, int kExp>
double decode(std::uint16_t b) {
  const int bias = (1 << (kExp - 1)) - 1, field = (b >> kMant) & ((1 << kExp) - 1), m = b & ((1 << kMant) - 1);
  const double sign = (b >> (kMant + kExp)) ? -1.0 : 1.0;
  if (field == (1 << kExp) - 1) return m ? NAN : sign * INFINITY;
  if (field == 0) return sign * std::ldexp(m, 1 - bias - kMant);
  return sign * std::ldexp((1 << kMant) + m, field - bias - kMant);
}

template <class T, int kMant, int kExp>
void check_type() {
  const std::uint16_t negative_zero = static_cast<std::uint16_t>(1u << (kMant + kExp));
  std::map<double, std::uint16_t> pattern;  // every nonzero non-NaN value
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const double v = decode<kMant, kExp>(static_cast<std::uint16_t>(b));
    const double got = static_cast<double>(T::from_bits(static_cast<std::uint16_t>(b)));
    INFO("pattern 0x" << std::hex << b);
    if (std::isnan(v)) {
      CHECK(std::isnan(got));
      continue;
    }
    CHECK(std::memcmp(&got, &v, sizeof v) == 0);  // the value, and the sign of a zero
    if (v != 0) pattern[v] = static_cast<std::uint16_t>(b);
  }
  const double smallest = decode<kMant, kExp>(1);
  const double max = static_cast<double>(std::numeric_limits<T>::max());
  const double past = max + (max - static_cast<double>(T::from_bits(std::numeric_limits<T>::max().bits - 1))) / 2;
  auto expected = [&](double x) -> std::uint16_t {  // MPFR's rounding of x, as a pattern
    // Below T's smallest subnormal MPFR cannot hold x in T's exponent range: the nearest is zero
    // or that subnormal, and the tie at half of it goes to zero (the even one).
    // From half an ulp past the largest finite value on (that tie too goes to the even one, which
    // is past the range): an infinity. MPFR, too, holds only x below 2^emax.
    if (std::fabs(x) >= past)
      return static_cast<std::uint16_t>((std::signbit(x) ? negative_zero : 0) | std::numeric_limits<T>::infinity().bits);
    if (std::fabs(x) < smallest)
      return static_cast<std::uint16_t>((std::signbit(x) ? negative_zero : 0) | (std::fabs(x) > smallest / 2 ? 1 : 0));
    mpfr_t v;
    mpfr_init2(v, 64);
    mpfr_set_d(v, x, MPFR_RNDN);
    // Round at T's precision and range: MPFR with T's digits and exponents, read back as a double.
    const mpfr_exp_t old_min = mpfr_get_emin(), old_max = mpfr_get_emax();
    constexpr int kDigits = kMant + 1, kBias = (1 << (kExp - 1)) - 1;
    mpfr_set_emin(2 - kBias - kDigits + 1);
    mpfr_set_emax(kBias + 1);
    mpfr_t rounded;
    mpfr_init2(rounded, kDigits);
    const int inexact = mpfr_set(rounded, v, MPFR_RNDN);
    mpfr_subnormalize(rounded, inexact, MPFR_RNDN);
    const double d = mpfr_get_d(rounded, MPFR_RNDN);
    mpfr_clear(rounded);
    mpfr_clear(v);
    mpfr_set_emin(old_min);
    mpfr_set_emax(old_max);
    if (d == 0) return std::signbit(x) ? negative_zero : 0;
    return pattern.at(d);
  };
  auto check = [&](double x) {
    INFO("x = " << std::hexfloat << x);
    CHECK(T(x).bits == expected(x));
  };
  // Each midpoint between neighbours (the tie), and one double ulp either side of it.
  for (auto it = pattern.begin(); std::next(it) != pattern.end(); ++it) {
    const double a = it->first, b = std::next(it)->first;
    if (!std::isfinite(a) || !std::isfinite(b)) continue;
    const double mid = a + (b - a) / 2;
    check(mid);
    check(std::nextafter(mid, -INFINITY));
    check(std::nextafter(mid, INFINITY));
  }
  // Random doubles from far below the subnormals to past the largest finite value.
  std::mt19937_64 rng(xr::test::run_seed() ^ 0xf1f16ull ^ kMant);
  INFO("seed " << xr::test::run_seed() << " (replay with XREDUCE_TEST_SEED)");
  const int bias = (1 << (kExp - 1)) - 1;
  for (int k = 0; k < 200000; ++k) {
    const double m = std::ldexp(static_cast<double>(rng() >> 11), -53);  // [0, 1)
    const int e = static_cast<int>(rng() % (2 * bias + kMant + 8)) - (bias + kMant + 4);
    check((rng() & 1 ? -1 : 1) * std::ldexp(1 + m, e));
  }
  check(0.0), check(-0.0), check(INFINITY), check(-INFINITY);
  // Half an ulp past the largest finite value: the tie goes to the even neighbour, the infinity.
  check(past), check(std::nextafter(past, 0.0)), check(-past);
  CHECK(T(past).bits == std::numeric_limits<T>::infinity().bits);
  CHECK(std::isnan(static_cast<double>(T(NAN))));
}

}  // namespace

TEST_CASE("f16: all 65536 patterns widen exactly; doubles round as MPFR rounds to binary16") { check_type<xr::f16, 10, 5>(); }
TEST_CASE("bf16: all 65536 patterns widen exactly; doubles round as MPFR rounds to bfloat16") { check_type<xr::bf16, 7, 8>(); }
