// The exact mean, variance and standard deviation (Accuracy::exact): from the exact sums of x
// and of x squared, the rational value, rounded once by MPFR to the result type.
//
// With S the sum of x, Q the sum of x^2, n the count and c the correction:
//
//   mean = S / n          var = (n Q - S^2) / (n (n - c))          std = sqrt(var)
//
// S and Q are exact (ExactSum: integers times 2^-1088), so n Q - S^2 and n (n - c) are exact in
// MPFR at a few thousand bits, and one mpfr_div rounds their quotient once, correctly, in the
// result type's precision and exponent range (subnormals included). std takes the square root of
// the quotient held to 6000 bits: it is within 2^-6000 of the exact variance, closer than the
// square root of a quotient of numbers this size ever comes to a rounding boundary without being
// on it, so it too is the exact value rounded once.

#include "exact_statistics.hpp"

#include <mpfr.h>

#include <cmath>
#include <limits>
#include <string>

#include "results.hpp"
#include "xreduce/error.hpp"

namespace xreduce::detail {
namespace {

//! An mpfr_t that clears itself.
struct Big {
  mpfr_t v;
  explicit Big(mpfr_prec_t bits) { mpfr_init2(v, bits); }
  ~Big() { mpfr_clear(v); }
  Big(const Big&) = delete;
  Big& operator=(const Big&) = delete;
};

//! Bits that hold any ExactSum's value exactly: its 67 digits of 32 bits.
constexpr mpfr_prec_t kSumBits = ExactSum::kDigits * ExactSum::kDigitBits + 64;

//! The finite part of `s`, exactly.
void set_exact(mpfr_t out, ExactSum s) {
  s.normalize();
  mpfr_set_zero(out, 1);
  Big digit(64);
  // Digits 0..65 in [0, 2^32), digit 66 signed: the value is sum_i digit_i 2^(32 i - 1088).
  for (int i = ExactSum::kDigits - 1; i >= 0; --i) {
    mpfr_mul_2si(out, out, ExactSum::kDigitBits, MPFR_RNDN);  // exact: kSumBits hold every digit
    mpfr_set_si(digit.v, static_cast<long>(s.words[i]), MPFR_RNDN);
    mpfr_add(out, out, digit.v, MPFR_RNDN);
  }
  mpfr_mul_2si(out, out, ExactSum::kLowestExponent, MPFR_RNDN);
}

//! `rounding(r)` (an MPFR call into r that returns its ternary value: the quotient or square
//! root of exact or far wider operands) rounded once to T: nearest, ties to even, with T's
//! subnormals and overflow.
template <class T, class Rounding>
double round_to(Rounding rounding) {
  constexpr int kDigits = std::numeric_limits<T>::digits;
  const mpfr_exp_t old_min = mpfr_get_emin(), old_max = mpfr_get_emax();
  mpfr_set_emin(std::numeric_limits<T>::min_exponent - kDigits + 1);
  mpfr_set_emax(std::numeric_limits<T>::max_exponent);
  Big r(kDigits);
  mpfr_subnormalize(r.v, rounding(r.v), MPFR_RNDN);
  const double out = mpfr_get_d(r.v, MPFR_RNDN);  // exact: T's value is a double
  mpfr_set_emin(old_min);
  mpfr_set_emax(old_max);
  return out;
}

//! a / b rounded once to T.
template <class T>
double quotient_to(const mpfr_t a, const mpfr_t b) {
  return round_to<T>([&](mpfr_ptr r) { return mpfr_div(r, a, b, MPFR_RNDN); });
}

template <class T>
double exact_value(Op op, const ExactSum& sum, const ExactSum* squares, double correction) {
  const double plain = sum.round<double>();  // NaN or an infinity if one was added
  const auto n = static_cast<unsigned long>(sum.count());
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  if (op == Op::mean) {
    if (!std::isfinite(plain)) return plain;  // an infinity over n is that infinity
    Big s(kSumBits), count(64);
    set_exact(s.v, sum);
    mpfr_set_ui(count.v, n, MPFR_RNDN);
    return quotient_to<T>(s.v, count.v);
  }
  if (!std::isfinite(plain) || !squares) return nan;
  const double dof = static_cast<double>(n) - correction;  // n < 2^53 here: exact where it matters
  if (!(dof > 0)) return nan;
  Big s(kSumBits), q(kSumBits + 64), numerator(3 * kSumBits), denominator(256);
  set_exact(s.v, sum);
  set_exact(q.v, *squares);
  mpfr_mul_ui(q.v, q.v, n, MPFR_RNDN);                  // n Q: exact at kSumBits + 64 bits
  mpfr_sqr(numerator.v, s.v, MPFR_RNDN);                 // S^2: exact at 2 kSumBits
  mpfr_sub(numerator.v, q.v, numerator.v, MPFR_RNDN);    // n Q - S^2: exact at 3 kSumBits
  mpfr_set_ui(denominator.v, n, MPFR_RNDN);
  Big left(128);
  mpfr_set_ui(left.v, n, MPFR_RNDN);
  mpfr_sub_d(left.v, left.v, correction, MPFR_RNDN);     // n - c: exact at 128 bits
  mpfr_mul(denominator.v, denominator.v, left.v, MPFR_RNDN);  // n (n - c): exact at 256 bits
  if (mpfr_sgn(numerator.v) < 0) mpfr_set_zero(numerator.v, 1);  // never, but a square root must not see it
  if (op == Op::var) return quotient_to<T>(numerator.v, denominator.v);
  Big var(6000);
  mpfr_div(var.v, numerator.v, denominator.v, MPFR_RNDN);
  return round_to<T>([&](mpfr_ptr r) { return mpfr_sqrt(r, var.v, MPFR_RNDN); });
}

}  // namespace

Scalar exact_statistic(Op op, const std::vector<ExactSum>& partials, double correction, DType type) {
  const bool squares = op != Op::mean;
  if (partials.size() != (squares ? 2u : 1u))
    throw Error(ErrorCode::internal, "an exact " + std::string(to_string(op)) + " from " + std::to_string(partials.size()) +
                                         " exact partials");
  const ExactSum* q = squares ? &partials[1] : nullptr;
  double v = 0;
  switch (type) {
    case DType::f32: v = exact_value<float>(op, partials[0], q, correction); break;
    case DType::f16: v = exact_value<f16>(op, partials[0], q, correction); break;
    case DType::bf16: v = exact_value<bf16>(op, partials[0], q, correction); break;
    case DType::f64: v = exact_value<double>(op, partials[0], q, correction); break;
    default: throw Error(ErrorCode::internal, "an exact statistic of type " + std::string(to_string(type)));
  }
  return rounded(type, v);  // v is a value of `type` already: exact
}

}  // namespace xreduce::detail

namespace xreduce {

template <class T>
T exact_mean(const ExactSum& sum) {
  return static_cast<T>(detail::exact_value<T>(Op::mean, sum, nullptr, 0));  // a value of T: exact
}

template <class T>
T exact_variance(const ExactSum& sum, const ExactSum& squares, double correction, bool root) {
  return static_cast<T>(detail::exact_value<T>(root ? Op::std : Op::var, sum, &squares, correction));
}

template float exact_mean<float>(const ExactSum&);
template double exact_mean<double>(const ExactSum&);
template f16 exact_mean<f16>(const ExactSum&);
template bf16 exact_mean<bf16>(const ExactSum&);
template float exact_variance<float>(const ExactSum&, const ExactSum&, double, bool);
template double exact_variance<double>(const ExactSum&, const ExactSum&, double, bool);
template f16 exact_variance<f16>(const ExactSum&, const ExactSum&, double, bool);
template bf16 exact_variance<bf16>(const ExactSum&, const ExactSum&, double, bool);

}  // namespace xreduce
