#pragma once
// An exact reference for floating sums that shares no code with the library: MPFR adds the
// values at 2300 bits (more than any sum of f64 values needs: 2098 bits of range plus the
// count's), then rounds once to T with T's subnormals, ties to even. IEEE's special cases on top:
// NaN if a NaN or both infinities, an infinity if one, -0 only if every element is -0.

#include <mpfr.h>

#include <cmath>
#include <cstddef>
#include <limits>
#include <type_traits>

#include "xreduce/float16.hpp"

namespace xreduce::test {

//! `value` rounded once to T, nearest with ties to even, subnormals and overflow as T has them.
template <class T>
T round_mpfr_to(const mpfr_t value) {
  T result;
  // T's exponent range (MPFR counts significands in [1/2, 1)), so that subnormalize rounds as T does.
  const mpfr_exp_t old_min = mpfr_get_emin(), old_max = mpfr_get_emax();
  constexpr int kDigits = std::numeric_limits<T>::digits;
  constexpr mpfr_exp_t kMin = std::numeric_limits<T>::min_exponent - kDigits + 1, kMax = std::numeric_limits<T>::max_exponent;
  // MPFR takes no operand outside the current range: a value below T's smallest subnormal
  // (2^(kMin - 1)) rounds to zero, or to that subnormal past half of it; one from 2^kMax on to an
  // infinity (the overflow threshold, T's largest value plus half its ulp, is below).
  if (mpfr_regular_p(value) && (mpfr_get_exp(value) < kMin || mpfr_get_exp(value) > kMax)) {
    const bool negative = mpfr_signbit(value) != 0;
    double magnitude = HUGE_VAL;
    if (mpfr_get_exp(value) < kMin) {
      mpfr_t half;  // half the smallest subnormal: ties go to the even neighbour, zero
      mpfr_init2(half, 2);
      mpfr_set_ui_2exp(half, 1, kMin - 2, MPFR_RNDN);
      magnitude = mpfr_cmpabs(value, half) > 0 ? static_cast<double>(std::numeric_limits<T>::denorm_min()) : 0.0;
      mpfr_clear(half);
    }
    return T(negative ? -magnitude : magnitude);
  }
  mpfr_set_emin(kMin);
  mpfr_set_emax(kMax);
  mpfr_t rounded;
  mpfr_init2(rounded, kDigits);
  int inexact = mpfr_set(rounded, value, MPFR_RNDN);
  inexact = mpfr_subnormalize(rounded, inexact, MPFR_RNDN);
  if constexpr (std::is_same_v<T, float>) result = mpfr_get_flt(rounded, MPFR_RNDN);
  else if constexpr (is_float16_v<T>) result = T(mpfr_get_d(rounded, MPFR_RNDN));  // exact, or the infinity
  else result = mpfr_get_d(rounded, MPFR_RNDN);
  mpfr_clear(rounded);
  mpfr_set_emin(old_min);
  mpfr_set_emax(old_max);
  return result;
}

//! The exact sum of x[0..n), `repeats` (at least 1) times over, rounded once to R (T's own type
//! unless named): the sum of x[0..n) repeated.
template <class T, class R = T>
R mpfr_sum(const T* x, std::size_t n, unsigned long repeats = 1) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double> || is_float16_v<T>);
  bool nan = false, pos_inf = false, neg_inf = false, all_negative_zero = n > 0;
  mpfr_t sum, term;
  mpfr_init2(sum, 2300);
  mpfr_init2(term, 64);
  mpfr_set_zero(sum, 1);
  for (std::size_t i = 0; i < n; ++i) {
    const double v = static_cast<double>(x[i]);  // exact for every T here
    all_negative_zero = all_negative_zero && v == 0 && std::signbit(v);
    if (std::isnan(v)) nan = true;
    else if (std::isinf(v)) (v > 0 ? pos_inf : neg_inf) = true;
    else {
      mpfr_set_d(term, static_cast<double>(v), MPFR_RNDN);  // exact: 64 bits hold any f32 or f64
      mpfr_add(sum, sum, term, MPFR_RNDN);                  // exact at 2300 bits
    }
  }
  mpfr_t total;  // exact: 64 bits more than the sum's
  mpfr_init2(total, 2300 + 64);
  mpfr_mul_ui(total, sum, repeats, MPFR_RNDN);
  R result;
  if (nan || (pos_inf && neg_inf)) {
    result = std::numeric_limits<R>::quiet_NaN();
  } else if (pos_inf || neg_inf) {
    result = R(pos_inf ? HUGE_VAL : -HUGE_VAL);
  } else {
    result = round_mpfr_to<R>(total);
    if (static_cast<double>(result) == 0) result = R(all_negative_zero ? -0.0 : 0.0);
  }
  mpfr_clear(sum);
  mpfr_clear(term);
  mpfr_clear(total);
  return result;
}

//! The mean, var and std of finite x[0..n), `repeats` (at least 1) times over, each rounded once
//! to T: S and Q (the sums of x and of x squared) exact at 4400 bits, then S / n and
//! (n Q - S^2) / (n (n - correction)) at 12000 bits (a zero mean is +0).
template <class T>
struct MpfrMoments {
  T mean, var, std;
};
template <class T>
MpfrMoments<T> mpfr_moments(const T* x, std::size_t n, double correction, unsigned long repeats = 1) {
  mpfr_t s, q, t, num, den, r;
  for (mpfr_ptr v : {s, q, t}) mpfr_init2(v, 4400);
  for (mpfr_ptr v : {num, den, r}) mpfr_init2(v, 12000);
  mpfr_set_zero(s, 1), mpfr_set_zero(q, 1);
  for (std::size_t i = 0; i < n; ++i) {
    mpfr_set_d(t, static_cast<double>(x[i]), MPFR_RNDN);  // exact for every T here
    mpfr_add(s, s, t, MPFR_RNDN);
    mpfr_sqr(t, t, MPFR_RNDN);
    mpfr_add(q, q, t, MPFR_RNDN);
  }
  mpfr_mul_ui(s, s, repeats, MPFR_RNDN);  // exact: 4400 bits hold these sums many times over
  mpfr_mul_ui(q, q, repeats, MPFR_RNDN);
  const auto count = static_cast<unsigned long>(n) * repeats;
  MpfrMoments<T> m;
  mpfr_div_ui(r, s, count, MPFR_RNDN);
  m.mean = round_mpfr_to<T>(r);
  mpfr_mul_ui(num, q, count, MPFR_RNDN);
  mpfr_sqr(t, s, MPFR_RNDN);  // 4400 bits: S^2 of these data is exact in them
  mpfr_sub(num, num, t, MPFR_RNDN);
  mpfr_set_d(den, static_cast<double>(count) - correction, MPFR_RNDN);
  mpfr_mul_ui(den, den, count, MPFR_RNDN);
  mpfr_div(r, num, den, MPFR_RNDN);
  m.var = round_mpfr_to<T>(r);
  mpfr_sqrt(r, r, MPFR_RNDN);
  m.std = round_mpfr_to<T>(r);
  for (mpfr_ptr v : {s, q, t, num, den, r}) mpfr_clear(v);
  return m;
}

}  // namespace xreduce::test
