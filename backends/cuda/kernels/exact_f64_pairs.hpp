#pragma once
// The arithmetic of the exact f64 segment sums (kernels/exact_segments_f64.cuh), apart from the
// kernels, so that the host compiles it too: the unit tests check it there (tests/unit/
// test_exact_f64_pairs.cpp) against MPFR, on any order of additions and folds, where no GPU is.
// C++17, as the CUDA module's sources.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "xreduce/backend/pair_rounding.hpp"
#include "xreduce/exact.hpp"
#include "xreduce/float16.hpp"  // bf16

namespace xreduce::cuda {

// The bits of doubles, and the checks that settle a rounding, as the CPU's f64 rows use them.
using pair_rounding::f64_abs;
using pair_rounding::f64_bits;
using pair_rounding::f64_negative;
using pair_rounding::f64_of_bits;
using pair_rounding::kLargeF64Field;
using pair_rounding::pow2;
XREDUCE_HOST_DEVICE inline bool f64_finite(double d) { return ((f64_bits(d) >> 52) & 0x7ff) != 0x7ff; }
//! x times 2^k, rounded once (an infinity past the range).
XREDUCE_HOST_DEVICE inline double scale_by_pow2(double x, int k) {
#if defined(__CUDA_ARCH__)
  return ldexp(x, k);
#else
  return std::ldexp(x, k);
#endif
}
//! The leading zero bits of a nonzero x.
XREDUCE_HOST_DEVICE inline int leading_zeros(unsigned long long x) {
#if defined(__CUDA_ARCH__)
  return __clzll(static_cast<long long>(x));
#else
  return __builtin_clzll(x);
#endif
}

//! The error of t = s + x in double (Knuth's TwoSum, whatever the magnitudes): s + x = t + e
//! exactly. No multiplication, so nothing the compiler may contract.
XREDUCE_HOST_DEVICE inline double two_sum_error(double s, double x, double t) {
  const double moved = t - s;
  return (s - (t - moved)) + (x - moved);
}

//! A sum, the rounding errors of its additions (each exact, by TwoSum: Knuth's s + x = t + e)
//! added in `errors`, and the magnitudes of the rounding errors of those additions (each exact,
//! by TwoSum too) added in `rounded`: sum + errors lies within `rounded` (to its own roundings,
//! which only make it smaller: below) of the exact sum of what was added, and `rounded` is 0
//! where every addition to `errors` was exact (as on data of few significant bits, whose sums
//! are often ties). A third double that kept those errors too, with its own roundings bounded,
//! settled no more segments of the benchmark's distributions and took 1.22x, 1.34x and 1.22x a
//! plain sum on uniform, wide and subnormal power-law segments, against 1.16x, 1.28x and 1.17x
//! (H100, bench/results/nvidia-h100/logs/exact-segments-f64-e49b4bc.md).
struct TwoSumPair {
  double sum, errors, rounded;
  XREDUCE_HOST_DEVICE void add_error(double e) {
    const double t = errors + e;
    rounded += f64_abs(two_sum_error(errors, e, t));
    errors = t;
  }
  XREDUCE_HOST_DEVICE void add(double x) {
    const double t = sum + x;
    add_error(two_sum_error(sum, x, t));
    sum = t;
  }
  XREDUCE_HOST_DEVICE void add(const TwoSumPair& other) {
    const double t = sum + other.sum, e = two_sum_error(sum, other.sum, t);
    sum = t;
    rounded += other.rounded;
    add_error(other.errors);
    add_error(e);
  }
};

//! A partial of an f64 segment's exact sum: the elements below 2^977 in `small`, the others times
//! 2^-64 in `large`; top, the largest exponent field among them (2047: an infinity or a NaN among
//! them, which went to `large`).
struct F64Partial {
  TwoSumPair small, large;
  unsigned top;
  //! An element, to the pair its exponent field picks (a branch: where a warp's lanes differ, both
  //! are taken).
  XREDUCE_HOST_DEVICE void add(double x) {
    const auto field = static_cast<unsigned>((f64_bits(x) >> 52) & 0x7ff);
    if (field >= kLargeF64Field) large.add(x * 0x1p-64);
    else small.add(x);
    top = top > field ? top : field;
  }
  //! Another partial: pair by pair.
  XREDUCE_HOST_DEVICE void add(const F64Partial& other) {
    small.add(other.small);
    large.add(other.large);
    top = top > other.top ? top : other.top;
  }
};

//! The most elements of a segment whose pairs may settle it: the `rounded` sums of up to 2^22
//! additions deep (a lane's elements, then the folds) are then within 2^-31 of the exact sums of
//! their nonnegative terms, which the bound's factor 1 + 2^-30 covers.
inline constexpr std::uint64_t kMostBoundedF64Elements = std::uint64_t{1} << 40;

//! A segment's exact sum rounded once to double, into `out`, where its pairs (of n > 0 elements)
//! settle it; false where they do not.
//!
//! Without large elements the small pair is the sum: r = sum + errors and its rounding error t,
//! exactly (TwoSum); the exact sum lies within the bound, `rounded` times 1 + 2^-30, of r + t. A
//! bound of 0 says that r + t is the exact sum, so r, its rounding to nearest, is the answer. Else
//! the exact sum rounds to r where the whole interval lies strictly between the points halfway to
//! r's neighbours (pair_rounding::rounds_to decides both). Sums below 2^-968, whose half ulp is
//! not a normal double, are checked scaled by 2^256 (exact for r, t and the bound). A zero sum is
//! -0 where every element was -0.
//!
//! With large elements the check is of the sum times 2^-64: the small pair, times 2^-64, is added
//! to the large one (a scaled double below 2^-1022 may round, by 2^-1075 at most, which the bound
//! takes in). The scaled sum rounds as the sum does where both are normal: from 2^-968 to below
//! 2^960 there (below 2^1024 unscaled). A sum whose interval lies past the threshold of overflow
//! (2^960 - 2^906 there) is an infinity, decided as the CPU's rows decide it. The rest (at the
//! threshold, or large elements that cancel to a sum below 2^-968) is left to the digits. (The
//! benchmark's random bit patterns in power-law segments, replayed on the host, sent 17.6% of
//! their elements there while only a sum from 2^962 on, or a bound of 0, was an infinity; 0.05%
//! so.)
XREDUCE_HOST_DEVICE inline bool rounded_by_error_bound(const F64Partial& a, std::uint64_t n, double& out) {
  if (a.top > 2046 || n > kMostBoundedF64Elements) return false;  // an infinity or a NaN among the elements
  const bool any_large = a.top >= kLargeF64Field;
  TwoSumPair p = a.small;
  double slack = 0;  // the scaled small pair's roundings
  if (any_large) {
    const double sum = a.small.sum * 0x1p-64, errors = a.small.errors * 0x1p-64, rounded = a.small.rounded * 0x1p-64;
    if (sum * 0x1p64 != a.small.sum || errors * 0x1p64 != a.small.errors || rounded * 0x1p64 != a.small.rounded)
      slack = 0x1p-1072;  // each rounded by 2^-1075 at most
    p = a.large;
    p.rounded += rounded;
    p.add(sum);
    p.add_error(errors);
  }
  const double r = p.sum + p.errors, t = two_sum_error(p.sum, p.errors, r);
  if (!f64_finite(r) || !f64_finite(t) || !f64_finite(p.rounded)) return false;
  const int field = static_cast<int>((f64_bits(r) >> 52) & 0x7ff);
  const double bound = p.rounded * (1 + 0x1p-30) + slack;
  if (any_large) {
    if (field < 55) return false;
    if (pair_rounding::scaled_sum_overflows(r, t, bound)) {  // as the CPU's rows decide it
      const double infinity = f64_of_bits(0x7ff0000000000000ull);
      out = f64_negative(r) ? -infinity : infinity;
      return true;
    }
    if (field >= 1983) return false;
  }
  // The check's domain: r, t and the bound times 2^256 for a sum below 2^-968.
  if (!pair_rounding::rounds_to(r, t, bound, !any_large && field < 55 ? 256 : 0)) return false;
  if (any_large) out = r * 0x1p64;  // a normal double below 2^1024: exact
  else out = r != 0 ? r : a.small.sum == 0 && f64_negative(a.small.sum) ? -0.0 : 0.0;
  return true;
}

XREDUCE_HOST_DEVICE inline float f32_of_bits(unsigned b) {
  float f;
  memcpy(&f, &b, sizeof f);
  return f;
}
XREDUCE_HOST_DEVICE inline unsigned f32_bits(float f) {
  unsigned b;
  memcpy(&b, &f, sizeof b);
  return b;
}

//! The floats narrower than double that pairs of doubles round to: float and bf16 (float's
//! exponent range, 8 bits of significand), each added as the double it is exactly, so that only
//! the small pair holds them (below 2^128 each).
template <class T>
inline constexpr int kNarrowPrecision = std::is_same_v<T, float> ? 24 : 8;

//! rounded_by_error_bound for a narrow float T (float, bf16): the exact sum rounded once to T,
//! into `out`, where the pair settles it; false where it does not. g, r rounded to T, and the
//! exact sum's distance from it: r - g (exact: the two lie within a factor of two, or both below
//! 2^-126) plus t, as the pair s + e (TwoSum), within the bound of it. The exact sum rounds to g
//! where that interval lies strictly between the points halfway to g's neighbours (an ulp of g,
//! or of 2^-126 below it, over two away from zero; over two toward it, or four at a normal power
//! of two): each end computed with one rounding, of s and e's magnitude plus the bound widened by
//! 2^-50 (which covers that sum's rounding). A bound of 0 and e of 0 leave s exact: at a halfway
//! point it is a tie, which g, r rounded to even, settles. Past the largest T, the threshold of
//! overflow (2^128 less half the largest T's ulp) is the halfway point, and a sum from it on is an
//! infinity.
template <class T>
XREDUCE_HOST_DEVICE inline bool rounded_to_narrow_by_error_bound(const F64Partial& a, std::uint64_t n, T& out) {
  constexpr int kPrecision = kNarrowPrecision<T>;
  constexpr double kThreshold = kPrecision == 24 ? 0x1p128 - 0x1p103 : 0x1p128 - 0x1p119;
  constexpr double kLargest = kPrecision == 24 ? 0x1p128 - 0x1p104 : 0x1p128 - 0x1p120;
  if (a.top >= kLargeF64Field || n > kMostBoundedF64Elements) return false;  // an infinity or a NaN among them
  const TwoSumPair& p = a.small;
  const double r = p.sum + p.errors, t = two_sum_error(p.sum, p.errors, r);
  if (!f64_finite(r) || !f64_finite(t) || !f64_finite(p.rounded)) return false;
  const bool negative = f64_negative(r);
  const double magnitude = f64_abs(r), away_t = negative ? -t : t;  // as if r were positive
  const double widened = p.rounded * (1 + 0x1p-30);
  const float infinity = f32_of_bits(0x7f800000u);
  auto distance = [&](double from, double& s, double& e) {  // magnitude - from + away_t as s + e, s TwoSum's
    const double d = magnitude - from;  // exact where both lie within a factor of two
    s = d + away_t, e = two_sum_error(d, away_t, s);
  };
  double s, e;
  if (magnitude >= kThreshold) {  // an infinity where the exact sum is the threshold or more
    if (magnitude >= 0x1p129) {
      if (widened + f64_abs(t) >= 0x1p127) return false;
    } else {
      distance(kThreshold, s, e);
      if (!(s - (f64_abs(e) + widened) * (1 + 0x1p-50) >= 0)) return false;
    }
    out = T(negative ? -infinity : infinity);
    return true;
  }
  // r rounded to T (to even: ties below), as a float
  const float g = static_cast<float>(magnitude >= kLargest ? T(kLargest) : T(magnitude));
  const unsigned bits = f32_bits(g), field = bits >> 23;
  const double ulp = pow2((field > 1 ? static_cast<int>(field) : 1) - 126 - kPrecision);  // below 2^-126: the subnormals'
  const double up = ulp / 2, down = (bits & 0x7fffffu) == 0 && field > 1 ? ulp / 4 : ulp / 2;
  distance(static_cast<double>(g), s, e);
  const double spread = (f64_abs(e) + widened) * (1 + 0x1p-50);
  // A tie (the exact sum s from g, exactly, at a halfway point) is r itself, a double: T(r)
  // rounded it to the even one, g.
  const bool tie = spread == 0 && (s == up || s == -down);
  if (!tie && !(s + spread < up && s - spread > -down)) return false;
  if (g == 0) out = T(p.sum == 0 && f64_negative(p.sum) ? -0.0f : 0.0f);  // a sum of zeros: -0 where every element was -0
  else out = T(negative ? -g : g);
  return true;
}

//! A's exact sum of n > 0 elements, rounded once to T (double, float, bf16), where its pairs
//! settle it.
template <class T>
XREDUCE_HOST_DEVICE inline bool rounded_by_pairs(const F64Partial& a, std::uint64_t n, T& out) {
  if constexpr (std::is_same_v<T, double>) return rounded_by_error_bound(a, n, out);
  else return rounded_to_narrow_by_error_bound(a, n, out);
}

//! ExactSum's words (`d`, kWords of them: the digits, not yet carried, then the counts) rounded
//! once to the nearest T (double, float or bf16), ties to even, as ExactSum::round<T> rounds: NaN for
//! a NaN or both infinities, else +-inf for one, else the exact sum (+-inf past the largest T); a
//! zero sum is -0 only where every element (of at least one) was -0. One thread; changes `d`.
template <class T>
XREDUCE_HOST_DEVICE inline T round_exact_words_as(long long* d) {
  static_assert(std::is_same_v<T, double> || std::is_same_v<T, float> || std::is_same_v<T, bf16>);
  constexpr int kPrecision = std::is_same_v<T, double> ? 53 : kNarrowPrecision<T>;
  constexpr int kLowestBit = std::is_same_v<T, double> ? -1074 : -125 - kPrecision;  // the smallest subnormal's
  constexpr int kDigits = ExactSum::kDigits;
  if (d[ExactSum::kNaN] != 0 || (d[ExactSum::kPosInf] != 0 && d[ExactSum::kNegInf] != 0))
    return static_cast<T>(f64_of_bits(0x7ff8000000000000ull));
  if (d[ExactSum::kPosInf] != 0) return static_cast<T>(f64_of_bits(0x7ff0000000000000ull));
  if (d[ExactSum::kNegInf] != 0) return static_cast<T>(f64_of_bits(0xfff0000000000000ull));
  long long up = 0;  // the carry, in a register: no digit's load waits on a store
  for (int i = 0; i + 1 < kDigits; ++i) {  // carried: digits 0..65 in [0, 2^32), the sign in digit 66
    const long long v = d[i] + up;
    d[i] = v & 0xffffffff;
    up = v >> 32;  // arithmetic: floor division by 2^32
  }
  d[kDigits - 1] += up;
  const bool negative = d[kDigits - 1] < 0;
  if (negative) {  // the magnitude: every bit flipped, then 1 added
    long long carry = 1;
    for (int i = 0; i + 1 < kDigits; ++i) {
      const long long v = (~d[i] & 0xffffffff) + carry;
      d[i] = v & 0xffffffff, carry = v >> 32;
    }
    d[kDigits - 1] = ~d[kDigits - 1] + carry;
  }
  int top = kDigits - 1;
  while (top >= 0 && d[top] == 0) --top;
  if (top < 0) return d[ExactSum::kCount] > 0 && d[ExactSum::kNotNegativeZero] == 0 ? T(-0.0) : T(0.0);
  // Bit positions count from 2^kLowestExponent: T's precision in bits from the top one, or fewer
  // where they would fall below its smallest subnormal's, and the rest rounded.
  const int msb = top * 32 + 63 - leading_zeros(static_cast<unsigned long long>(d[top]));
  const int lsb = msb - (kPrecision - 1) > kLowestBit - ExactSum::kLowestExponent ? msb - (kPrecision - 1)
                                                                                 : kLowestBit - ExactSum::kLowestExponent;
  auto window = [&](int pos) {  // the magnitude's bits from pos up, modulo 2^64
    const int k = pos >> 5, r = pos & 31;
    unsigned long long w = static_cast<unsigned long long>(d[k]) >> r;
    if (k + 1 < kDigits) w += static_cast<unsigned long long>(d[k + 1]) << (32 - r);
    if (k + 2 < kDigits && r > 0) w += static_cast<unsigned long long>(d[k + 2]) << (64 - r);
    return w;
  };
  unsigned long long q = window(lsb);
  const int below = lsb - 1;  // the rounding bit; every bit under it is sticky
  const bool round_bit = (window(below) & 1) != 0;
  bool sticky = (d[below >> 5] & ((1ll << (below & 31)) - 1)) != 0;
  for (int i = 0; i < (below >> 5) && !sticky; ++i) sticky = d[i] != 0;
  if (round_bit && (sticky || (q & 1) != 0)) ++q;  // may carry to 2^kPrecision: still exact
  // Exact in double for the narrow floats too (q of kPrecision + 1 bits at most, from their
  // smallest subnormal): its conversion is then exact, or an infinity past T's range.
  const double v = scale_by_pow2(static_cast<double>(q), lsb + ExactSum::kLowestExponent);  // +-inf past the range
  return static_cast<T>(negative ? -v : v);
}
XREDUCE_HOST_DEVICE inline double round_exact_words(long long* d) { return round_exact_words_as<double>(d); }

}  // namespace xreduce::cuda
