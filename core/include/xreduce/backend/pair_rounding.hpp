#pragma once
//! For backend authors: rounding an exact sum known as r + t within a bound, where r and t are
//! doubles (r + t the sum of two doubles, t its rounding error, exactly) and the bound covers what
//! the doubles lost. The CPU's exact f64 rows (core/src/backend/exact_in_double.hpp) and the GPU's
//! exact pairs (backends/cuda/kernels/exact_f64_pairs.hpp) settle their roundings with these
//! checks, and sum again exactly where the checks leave them. C++17, for the host and the GPU.

#include <cmath>
#include <cstdint>
#include <cstring>

#ifndef XREDUCE_HOST_DEVICE  // as xreduce/backend/ops.hpp defines it
#if defined(__CUDACC__)
#define XREDUCE_HOST_DEVICE __host__ __device__
#else
#define XREDUCE_HOST_DEVICE
#endif
#endif

namespace xreduce::pair_rounding {

XREDUCE_HOST_DEVICE inline unsigned long long f64_bits(double d) {
  unsigned long long b;
  memcpy(&b, &d, sizeof b);
  return b;
}
XREDUCE_HOST_DEVICE inline double f64_of_bits(unsigned long long b) {
  double d;
  memcpy(&d, &b, sizeof d);
  return d;
}
XREDUCE_HOST_DEVICE inline bool f64_negative(double d) { return (f64_bits(d) >> 63) != 0; }
XREDUCE_HOST_DEVICE inline double f64_abs(double d) {
#if defined(__CUDA_ARCH__)
  return fabs(d);  // a modifier of the addition that takes it
#else
  return std::fabs(d);
#endif
}
//! 2^k, for -1022 <= k <= 1023, from its bits.
XREDUCE_HOST_DEVICE inline double pow2(int k) { return f64_of_bits(static_cast<unsigned long long>(k + 1023) << 52); }

//! Elements whose exponent field is this or more (2^977 and up) are summed times 2^-64: below it,
//! no partial sum of 2^40 elements or fewer passes 2^1018, and above, none of the scaled ones
//! passes 2^1000.
inline constexpr unsigned kLargeF64Field = 2000;

//! Whether the exact sum, within `bound` of r + t, rounds to r: where that whole interval lies
//! strictly between the points halfway to r's neighbours (half an ulp away from zero, and toward
//! zero half an ulp, or a quarter where |r| is a normal power of two: a quarter of its binade's
//! ulp is half the one below's). Both ends are computed with one rounding, which is monotone, and
//! the halfway points are powers of two, so a computed end inside them means the exact one is. At
//! the top binade the halfway point away from zero is the threshold of overflow. A bound of 0
//! says that r + t is the exact sum, which r, its rounding to nearest (ties to even), is rounded
//! to, a tie included. The check's domain is r, t and the bound times 2^scale: the half ulp,
//! 2^(field - 1076 + scale), must be a normal double (field + scale >= 55; a sum below 2^-968 is
//! checked scaled by 2^256).
XREDUCE_HOST_DEVICE inline bool rounds_to(double r, double t, double bound, int scale = 0) {
  if (bound == 0) return true;
  const unsigned long long bits = f64_bits(r);
  const int field = static_cast<int>((bits >> 52) & 0x7ff), binade = field > 1 ? field : 1;
  const double half_ulp = pow2(binade - 1076 + scale);
  const bool power_of_two = (bits & ((1ull << 52) - 1)) == 0 && field > 1;
  const double toward_zero = power_of_two ? half_ulp / 2 : half_ulp;
  const double away = (f64_negative(r) ? -t : t) * pow2(scale);  // t's distance from r away from zero
  const double scaled_bound = bound * pow2(scale);
  return away + scaled_bound < half_ulp && away - scaled_bound > -toward_zero;
}

//! Whether a sum scaled by 2^-64, within `bound` of r + t, lies past the threshold of overflow
//! (2^1024 - 2^970 unscaled, 2^960 - 2^906 here), so that it rounds to an infinity: from 2^961 on,
//! with a bound below 2^959; above 2^960 (by an ulp, 2^908, at least, and |t| is 2^907 at most),
//! with a bound below 2^907; at 2^960, where t away from zero less the bound (one rounding) stays
//! above -2^906, or with a bound of 0 reaches it (the threshold itself rounds to the infinity,
//! ties to even). False for a sum below 2^960, an infinity or a NaN.
XREDUCE_HOST_DEVICE inline bool scaled_sum_overflows(double r, double t, double bound) {
  const int field = static_cast<int>((f64_bits(r) >> 52) & 0x7ff);
  const double away = f64_negative(r) ? -t : t, magnitude = f64_abs(r);
  const bool past_at_2_960 = bound == 0 ? away >= -0x1p906 : away - bound > -0x1p906;
  return (field > 1983 && field < 2047 && bound < 0x1p959) ||
         (field == 1983 && (magnitude > 0x1p960 ? bound < 0x1p907 : past_at_2_960));
}

}  // namespace xreduce::pair_rounding
