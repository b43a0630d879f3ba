#pragma once
// Exact sums of f32, f16 and bf16 that a double holds: the CPU's short rows and columns add them
// there and touch the superaccumulator (ExactSum, 576 bytes) only when the elements' binades would
// not fit, as the GPU's exact kernels keep a double while an ExponentSpan allows it. Clearing,
// filling and rounding an ExactSum for every row of 4 took 24 times the plain sum's time, and
// adding each element of a column to its own ExactSum 20-31 times. The 16-bit types are widened to
// f32 first (exactly): the same passes then serve them, with their own, looser bounds. f64 sums go
// into two doubles instead, split around a power of two (sum_in_two_doubles).

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "../prefetch.hpp"
#include "narrow_sums.hpp"
#include "xreduce/backend/pair_rounding.hpp"
#include "xreduce/float16.hpp"

namespace xreduce::detail {

//! What the bound of F32Binades::fit needs of an element type T whose values, widened to f32, it
//! counts: T's significand bits, and the lowest binade it counts, below which T's values are all
//! multiples of that binade's step (f16's subnormals, f32 binades of 2^-24 to 2^-15 once widened,
//! are multiples of 2^-24, the step of its smallest normal binade, f32's field 113).
template <class T>
struct InDouble {
  static constexpr int kPrecision = 24;
  static constexpr std::uint32_t kLowestBinade = 1;
};
template <>
struct InDouble<bf16> {
  static constexpr int kPrecision = 8;
  static constexpr std::uint32_t kLowestBinade = 1;
};
template <>
struct InDouble<f16> {
  static constexpr int kPrecision = 11;
  static constexpr std::uint32_t kLowestBinade = 113;
};
//! The element types whose exact sums a double may hold.
template <class T>
inline constexpr bool sums_in_double = std::is_same_v<T, float> || is_float16_v<T>;

//! The binades of the nonzero elements seen, widened to f32: their biased exponent fields, those
//! below T's lowest binade counted as it (f32's subnormals as 1: their step is the smallest normal
//! one's). An infinity or a NaN makes hi 255.
struct F32Binades {
  std::uint32_t lo = 255, hi = 0;  //!< lo > hi: no nonzero element yet
  void add(const F32Binades& other) { lo = std::min(lo, other.lo), hi = std::max(hi, other.hi); }
  //! Whether `count` elements of T of these binades sum exactly in a double, in any order: each is
  //! a multiple of its step 2^(binade - 126 - p), p its type's significand bits (24 for f32), so
  //! of 2^(lo - 126 - p), and their sum, and any partial sum, is below count * 2^(hi - 126) <=
  //! 2^(hi - 126 + ceil(log2 count)); a double's 53 bits hold all of them if hi - lo +
  //! ceil(log2 count) <= 53 - p: 29 for f32, 42 for f16 (which spans 29 binades: 8192 of any
  //! finite ones fit), 45 for bf16. Never with an infinity or a NaN.
  template <class T = float>
  bool fit(std::uint64_t count) const {
    if (hi == 255) return false;
    return lo > hi || hi - lo + static_cast<std::uint32_t>(std::bit_width(count - 1)) <= 53 - InDouble<T>::kPrecision;
  }
};

//! Takes one element's binade (as F32Binades counts it, none below `lowest`) into lo and hi: as
//! masks, not selects, which kept the loops below scalar.
[[gnu::always_inline]] inline void take_binade(float x, std::uint32_t lowest, std::uint32_t& lo, std::uint32_t& hi) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(x), field = bits >> 23 & 0xff;
  const std::uint32_t binade = std::max(field, lowest);
  const std::uint32_t zero = static_cast<std::uint32_t>((bits << 1) == 0);
  lo = std::min(lo, binade | (0u - zero));
  hi = std::max(hi, binade & (zero - 1u));
}

//! The binades of x[0..n) in one pass of integer minima and maxima (element by element, through
//! the struct, it took 60% of a column sum's time); inlined into a default and an AVX2 build,
//! since the baseline x86-64 has no vector minimum of 32-bit integers and the loop stayed scalar.
template <std::uint32_t kLowest>
[[gnu::always_inline]] inline F32Binades binades_loop(const float* x, std::size_t n) {
  std::uint32_t lo = 255, hi = 0;
  for (std::size_t i = 0; i < n; ++i) take_binade(x[i], kLowest, lo, hi);
  return {lo, hi};
}
template <std::uint32_t kLowest>
__attribute__((target("avx2"))) inline F32Binades binades_avx2(const float* x, std::size_t n) {
  return binades_loop<kLowest>(x, n);
}
template <class T = float>
inline F32Binades binades_of(const float* x, std::size_t n) {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  constexpr std::uint32_t kLowest = InDouble<T>::kLowestBinade;
  return avx2 ? binades_avx2<kLowest>(x, n) : binades_loop<kLowest>(x, n);
}

//! The binades of rows[k][0..n) for k < m, four rows a pass (built as binades_of is): a row at a
//! time, the reads of a column block's rows came one stream at a time, and the exact column sums
//! of a (4096, 4096) f32 matrix took 13.6 ms on one thread; four rows a pass, as the plain column
//! sums read them, 8.6 ms (the plain sums 3.8-4.2).
template <std::uint32_t kLowest>
[[gnu::always_inline]] inline F32Binades binades_of_rows_loop(const float* const* rows, std::size_t m, std::size_t n) {
  std::uint32_t lo = 255, hi = 0;
  std::size_t k = 0;
  for (; k + 4 <= m; k += 4) {
    const float *a = rows[k], *b = rows[k + 1], *c = rows[k + 2], *d = rows[k + 3];
    for (std::size_t j = 0; j < n; ++j) {
      take_binade(a[j], kLowest, lo, hi), take_binade(b[j], kLowest, lo, hi);
      take_binade(c[j], kLowest, lo, hi), take_binade(d[j], kLowest, lo, hi);
    }
  }
  for (; k < m; ++k)
    for (std::size_t j = 0; j < n; ++j) take_binade(rows[k][j], kLowest, lo, hi);
  return {lo, hi};
}
template <std::uint32_t kLowest>
__attribute__((target("avx2"))) inline F32Binades binades_of_rows_avx2(const float* const* rows, std::size_t m, std::size_t n) {
  return binades_of_rows_loop<kLowest>(rows, m, n);
}
template <class T = float>
inline F32Binades binades_of_rows(const float* const* rows, std::size_t m, std::size_t n) {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  constexpr std::uint32_t kLowest = InDouble<T>::kLowestBinade;
  return avx2 ? binades_of_rows_avx2<kLowest>(rows, m, n) : binades_of_rows_loop<kLowest>(rows, m, n);
}

//! to[j] += rows[k][j] for k < m, j < n, in double: the columns' adding pass, built as binades_of is.
[[gnu::always_inline]] inline void add_rows_loop(double* to, const float* const* rows, std::size_t m, std::size_t n) {
  for (std::size_t k = 0; k < m; ++k) {
    const float* const from = rows[k];
    for (std::size_t j = 0; j < n; ++j) to[j] += static_cast<double>(from[j]);
  }
}
__attribute__((target("avx2"))) inline void add_rows_avx2(double* to, const float* const* rows, std::size_t m, std::size_t n) {
  add_rows_loop(to, rows, m, n);
}
inline void add_rows_in_double(double* to, const float* const* rows, std::size_t m, std::size_t n) {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) add_rows_avx2(to, rows, m, n);
  else add_rows_loop(to, rows, m, n);
}

//! Rows of a 16-bit type are widened this many elements at most (a row's sum in double: 16 KiB
//! of floats on the stack).
inline constexpr std::size_t kMostWidened = 4096;

//! The sum of x[0..n) in double, in kLanes lanes that start at -0 (so that a sum of -0s is -0, as
//! the exact sum's rounding gives it).
template <std::size_t kLanes>
[[gnu::always_inline]] inline double sum_in_lanes(const float* x, std::size_t n) {
  double lane[kLanes];
  for (double& l : lane) l = -0.0;
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (std::size_t j = 0; j < kLanes; ++j) lane[j] += x[i + j];
  for (std::size_t j = 0; i < n; ++i, ++j) lane[j] += x[i];
  for (std::size_t w = kLanes / 2; w > 0; w /= 2)
    for (std::size_t j = 0; j < w; ++j) lane[j] += lane[j + w];
  return lane[0];
}

//! x[0..n) as f32: x itself, or for the 16-bit types widened (exactly) into `wide`, kMostWidened
//! floats of the caller's.
template <class T>
[[gnu::always_inline]] inline const float* as_f32(const T* x, [[maybe_unused]] std::size_t n, [[maybe_unused]] float* wide) {
  if constexpr (std::is_same_v<T, float>) {
    return x;
  } else {
    widen(x, n, wide);
    return wide;
  }
}

//! The sum of x[0..n) (n >= 1; n <= kMostWidened for the 16-bit types) into `sum` and true where
//! a double holds it exactly (F32Binades), in lanes, since order does not matter then; false,
//! before adding, where it needs the superaccumulator. Inlined into its caller: called, it took
//! 1.13 times as long for rows of 4. Eight lanes from 64 elements on (rows of 1024 f32 in 0.84
//! of four lanes' time), four below (eight took rows of 4 1.1 times as long).
template <class T>
[[gnu::always_inline]] inline bool sum_in_double(const T* x, std::size_t n, double& sum) {
  [[maybe_unused]] float wide[std::is_same_v<T, float> ? 1 : kMostWidened];
  const float* const at = as_f32(x, n, wide);
  if (!binades_of<T>(at, n).template fit<T>(n)) return false;
  sum = n >= 64 ? sum_in_lanes<8>(at, n) : sum_in_lanes<4>(at, n);
  return true;
}

//! The sum of x[0..n) (f32 or f64) in kVectors vectors of four lanes of two doubles each: `hi` the
//! lanes' sums, each element added with TwoSum (Knuth: the rounding error of a + b, exactly), `lo`
//! those errors added as doubles. hi + (the errors' exact sum) is the exact sum; only lo's own
//! roundings stand between hi + lo and it (round_by_error_bound, which bounds them from the
//! largest element's binade). In GCC's vectors: written as arrays of lanes, the lanes stayed in
//! memory, an element at a time. The lanes fold pairwise, vectors first: folded one after another,
//! each TwoSum waited on the last (about 100 cycles a row).
template <int kVectors, bool kScaled = false, class In>
[[gnu::always_inline]] inline void two_sum_lanes(const In* x, std::size_t n, double& hi, double& lo) {
  using Double4 = double __attribute__((vector_size(32)));
  using Double2 = double __attribute__((vector_size(16)));
  using Float4 = float __attribute__((vector_size(16)));
  using In4 = std::conditional_t<std::is_same_v<In, float>, Float4, Double4>;
  constexpr std::size_t kLanes = 4 * kVectors;
  // a += b (two_sum's hi) and the rounding error into c, in lanes of any width. Inlined always:
  // called (-O0), a vector of four doubles passed by value between this AVX2 build and the
  // lambda's baseline one arrives in the wrong registers.
  auto two_sum = [](auto& a, auto b, auto& c) __attribute__((always_inline)) {
    const auto t = a + b, w = t - a;
    c += (a - (t - w)) + (b - w);
    a = t;
  };
  Double4 s[kVectors] = {}, c[kVectors] = {};
  auto add = [&](const In* at) __attribute__((always_inline)) {
    for (int k = 0; k < kVectors; ++k) {
      In4 f;
      std::memcpy(&f, at + 4 * k, sizeof f);
      Double4 v = __builtin_convertvector(f, Double4);
      if constexpr (kScaled) {  // each element times 2^-64, those below 2^-900 as 0 (round_scaled_by_error_bound)
        using Bits4 = long long __attribute__((vector_size(32)));
        // (GCC's vector casts reinterpret the bits, with no call: std::bit_cast, a call at -O0,
        // would pass the vectors between this AVX2 build and its baseline one in other registers.)
        const Bits4 kept = ((Bits4)v & 0x7fffffffffffffffll) >= 0x07b0000000000000ll;  // 2^-900
        v = (Double4)((Bits4)(v * 0x1p-64) & kept);
      }
      two_sum(s[k], v, c[k]);
    }
  };
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) add(x + i);
  if (i < n) {  // the last elements, fewer than the lanes, zeros after them
    In rest[kLanes] = {};
    std::memcpy(rest, x + i, (n - i) * sizeof(In));
    add(rest);
  }
  for (int k = 1; k < kVectors; ++k) two_sum(s[0], s[k], c[0]), c[0] += c[k];
  Double2 s2 = {s[0][0], s[0][1]}, c2 = {c[0][0], c[0][1]};
  two_sum(s2, Double2{s[0][2], s[0][3]}, c2);
  c2 += Double2{c[0][2], c[0][3]};
  hi = s2[0], lo = c2[0];
  two_sum(hi, s2[1], lo);
  lo += c2[1];
}
template <bool kScaled, class In>
__attribute__((target("avx2"))) inline void two_sum_lanes_avx2(const In* x, std::size_t n, double& hi, double& lo) {
  two_sum_lanes<2, kScaled>(x, n, hi, lo);
}
template <bool kScaled = false, class In>
void two_sum_lanes_of(const In* x, std::size_t n, double& hi, double& lo) {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2 && n >= 32) two_sum_lanes_avx2<kScaled>(x, n, hi, lo);
  else two_sum_lanes<1, kScaled>(x, n, hi, lo);
}

//! The two doubles of f64 x[0..n) (two_sum_lanes_of; kScaled: times 2^-64) as r = hi + lo,
//! rounded to nearest, and its rounding error t, exactly (TwoSum); and the bound on lo's error,
//! (n + 16)^2 2^-104 n `binade`, every element summed being below twice `binade`.
struct LanesSum {
  double r, t, bound;
};
template <bool kScaled = false>
inline LanesSum lanes_sum(const double* x, std::size_t n, double binade) {
  double hi, lo;
  two_sum_lanes_of<kScaled>(x, n, hi, lo);
  const double r = hi + lo, w = r - hi, terms = static_cast<double>(n + 16);
  return {r, (hi - (r - w)) + (lo - w), 0x1p-104 * (terms * terms) * static_cast<double>(n) * binade};
}

//! round_by_error_bound for f64 rows holding an element of 2^977 or more, whose two doubles could
//! pass 2^1024 on the way (random bit patterns: 13% of rows of 1024 and 62% of rows of 4096, which
//! went on to the superaccumulator): the row times 2^-64, whose partial sums stay below 2^1000.
//! Elements below 2^-900 count as 0 there: scaled, they would be subnormal, which Intel cores add
//! in microcode (random-bit rows of 64 took 2.4x the time so), and with them gone every partial
//! sum and error is a multiple of 2^-1016, never subnormal. They are below 2^-964 each scaled: n
//! 2^-964 more on the bound. The scaled sum's rounding is the sum's where both are normal (field
//! 55 to 1982 scaled). A scaled sum whose interval lies past the threshold of overflow (2^960 -
//! 2^906 scaled) is an infinity. The rest (just below that threshold, or large elements that
//! cancel to a sum below 2^-904) is left to the exact sum.
inline bool round_scaled_by_error_bound(const double* x, std::size_t n, std::uint32_t highest, double& out) {
  const double binade = std::bit_cast<double>(static_cast<std::uint64_t>(highest - 64) << 52);  // scaled
  const auto [r, t, lanes_bound] = lanes_sum<true>(x, n, binade);
  const double bound = lanes_bound + static_cast<double>(n) * 0x1p-964;
  const std::uint64_t field = std::bit_cast<std::uint64_t>(r) >> 52 & 0x7ff;
  if (pair_rounding::scaled_sum_overflows(r, t, bound)) {
    out = std::signbit(r) ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
    return true;
  }
  if (field < 55 || field > 1982 || !pair_rounding::rounds_to(r, t, bound)) return false;
  out = r * 0x1p64;  // a normal double below 2^1024: exact
  return true;
}

//! f64 x[0..n): its exact sum rounded once, into `out`, where the sum in two doubles and the bound
//! on its error settle it (as the f32 overload's, below; f64 of random sign over 2^-600..2^600,
//! rows of 4, took 263 ns a row through the superaccumulator, 47 so): false where they do not
//! (the exact sum within the bound of a tie, or of zero; an infinity or a NaN among x). A row
//! whose two doubles pass 2^1024 is summed again scaled (round_scaled_by_error_bound). `highest`
//! is the biased exponent field of the largest |x| (f64_fields: every |x| < 2^(highest - 1022));
//! the bound on lo's error is (n + 16)^2 2^-104 n 2^(highest - 1023), as the f32 overload's. r =
//! hi + lo and its rounding error t, exactly (TwoSum): the exact sum lies within the bound of r +
//! t, and rounds to r where that whole interval lies strictly between the points halfway to r's
//! neighbours (pair_rounding::rounds_to). (Asking |t| +
//! bound to fall short of a quarter ulp on both sides, as a first version did, sent half of all
//! rows on to the superaccumulator: r is hi + lo rounded to nearest, so |t| is anywhere up to
//! half an ulp.)
inline bool round_by_error_bound(const double* x, std::size_t n, std::uint32_t highest, double& out) {
  // 2^(highest - 1023), every |x| below twice it (a power of two of the top binade is finite)
  const double binade = std::bit_cast<double>(static_cast<std::uint64_t>(highest) << 52);
  const auto [r, t, bound] = lanes_sum(x, n, binade);
  const std::uint64_t field = std::bit_cast<std::uint64_t>(r) >> 52 & 0x7ff;
  // A sum below 2^-968 (field 55) is near zero and left to the exact sum. Field 2047 (an infinity
  // or a NaN, of finite elements: the doubles passed 2^1024) takes the row again, scaled, where it
  // holds an element of 2^977 or more (scaled at once, those rows took 1.6-1.9x the time where
  // they did not overflow: random bits, rows of 64 and 512, the 2-core Xeon), else the exact sum.
  if (field == 2047 && highest >= pair_rounding::kLargeF64Field && highest < 2047)
    return round_scaled_by_error_bound(x, n, highest, out);
  if (field < 55 || field > 2046 || !pair_rounding::rounds_to(r, t, bound)) return false;
  out = r;
  return true;
}

//! The exact sum of f32 x[0..n) (finite: no infinity or NaN; f32 or bf16 values), rounded once to
//! R (float or bf16), into `out`, where a sum in two doubles and the bound on its error settle it:
//! false where they do not (the exact sum within the bound of a tie between two R, or of zero),
//! and the caller sums exactly. `highest` is F32Binades' hi of x: every |x| < 2^(highest - 126).
//! Data whose binades a double cannot hold (wide data, random bit patterns) costs a few additions
//! an element so, where ten digits took 1.6 ns an element.
//! The bound: hi is exact, and lo adds fewer than n + 16 exact errors (the elements' and the
//! lanes' TwoSums), each at most 2^-53 times a partial sum, so at most 2^-53 n 2^(highest - 126);
//! in any order, with fewer than n + 16 roundings of at most 2^-53 each, lo is within
//! (n + 16)^2 2^-106 n 2^(highest - 126) of their exact sum (to first order; the doubling below
//! covers the rest), and r = hi + lo rounds it once more, by at most 2^-53 |r|.
template <class R>
bool round_by_error_bound(const float* x, std::size_t n, std::uint32_t highest, R& out) {
  static_assert(std::is_same_v<R, float> || std::is_same_v<R, bf16>, "R is f32 or bf16 (f32 values)");
  double hi, lo;
  two_sum_lanes_of(x, n, hi, lo);
  const double r = hi + lo, terms = static_cast<double>(n + 16);
  const double largest = std::bit_cast<double>(static_cast<std::uint64_t>(highest - 126 + 1023) << 52);  // 2^(highest - 126)
  const double bound = 0x1p-52 * std::fabs(r) + 0x1p-105 * (terms * terms) * static_cast<double>(n) * largest;
  // y, the R nearest r, and the points halfway to its neighbours (exact in a double: two R of
  // adjacent binades sum exactly there), the one above the largest finite R the threshold of
  // overflow (a sum of random bit patterns passes it more often than not).
  constexpr std::uint32_t step = std::is_same_v<R, float> ? 1 : 0x10000;  // R's ulp in f32's bits
  constexpr std::uint32_t infinity_bits = 0x7f800000, largest_bits = infinity_bits - step;
  const float y = static_cast<float>(R(r));
  if (!(y != 0)) return false;  // 0: its sign is the exact sum's (a NaN cannot come from finite elements)
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(y), magnitude_bits = std::min(bits & 0x7fffffff, largest_bits);
  const double at = std::bit_cast<float>(magnitude_bits), below = std::bit_cast<float>(magnitude_bits - step);
  const double above = magnitude_bits < largest_bits ? static_cast<double>(std::bit_cast<float>(magnitude_bits + step)) : at + (at - below);
  // Rounding is monotone: a computed |r| - bound above a halfway point means the exact one is.
  const double distance = std::fabs(r), halfway_below = (at + below) / 2, halfway_above = (at + above) / 2;
  const bool settled = (bits & 0x7fffffff) == infinity_bits ? distance - bound > halfway_above  // an infinity
                                                            : distance - bound > halfway_below && distance + bound < halfway_above;
  if (!settled) return false;
  if constexpr (std::is_same_v<R, float>) out = y;
  else out = R::from_bits(static_cast<std::uint16_t>(bits >> 16));
  return true;
}

//! The biased exponent fields of f64 x[0..n)'s nonzero elements, subnormals as 1 (lo > hi: none);
//! an infinity or a NaN makes hi 2047. On the bits, as binades_loop (the same loop on the doubles'
//! magnitudes, a minimum and a maximum, stayed scalar): for the baseline builds; the AVX2 ones take
//! f64_fields_avx2.
[[gnu::always_inline]] inline void f64_fields(const double* x, std::size_t n, std::uint32_t& lo, std::uint32_t& hi) {
  lo = 2047, hi = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t bits = std::bit_cast<std::uint64_t>(x[i]);
    const std::uint32_t field = static_cast<std::uint32_t>(bits >> 52) & 0x7ff, binade = std::max(field, 1u);
    const std::uint32_t zero = static_cast<std::uint32_t>((bits << 1) == 0);
    lo = std::min(lo, binade | (0u - zero));
    hi = std::max(hi, binade & (zero - 1u));
  }
}

//! f64_fields in vectors of four doubles, for the AVX2 builds: the fields of the largest magnitude
//! and of the smallest nonzero one, from a maximum, a minimum over the nonzero elements and a test
//! for the non-finite. f64_fields' integer minima and maxima stay one scalar chain, and built for
//! AVX2 took twice their scalar time (f64 rows of 4 checked 64 elements at a time, one thread of
//! the 2-core EPYC: 2^24 elements in 21 ms scalar, 45 ms so built, 5 ms in these vectors). From 64
//! elements on, four vectors at a time (one vector's maximum and minimum wait on the last ones),
//! the lines kPrefetchBytes ahead asked for as they go, past x's end too (the next row, where
//! rows follow each other): this pass is the first to read a row, and without them 2^24 f64 of
//! random sign over 2^-600..2^600 in rows of 1024 took 24-25 ms, 18.7 with them (one thread of
//! the 2-core Xeon).
__attribute__((target("avx2"))) inline void f64_fields_avx2(const double* x, std::size_t n, std::uint32_t& lo, std::uint32_t& hi) {
  typedef double V __attribute__((vector_size(32)));
  typedef double VU __attribute__((vector_size(32), aligned(8), may_alias));
  typedef std::int64_t M __attribute__((vector_size(32)));
  constexpr double kInf = std::numeric_limits<double>::infinity(), kMax = std::numeric_limits<double>::max();
  // Named vectors, not arrays: GCC kept arrays of them on the stack, which rows of 4 paid for.
  V top = {}, low = V{} + kInf, top1 = {}, low1 = low, top2 = {}, low2 = low, top3 = {}, low3 = low;
  M non_finite = {}, non_finite1 = {}, non_finite2 = {}, non_finite3 = {};
  auto take = [](const double* at, V& t, V& l, M& f) __attribute__((always_inline)) {
    const V a = reinterpret_cast<V>(reinterpret_cast<M>(*reinterpret_cast<const VU*>(at)) & std::numeric_limits<std::int64_t>::max());
    const V nonzero = a == 0 ? V{} + kInf : a;
    t = a > t ? a : t;
    l = nonzero < l ? nonzero : l;
    f |= ~(a <= kMax);  // an infinity, or a NaN (which compares false)
  };
  std::size_t i = 0;
  if (n >= 64) {
    for (; i + 16 <= n; i += 16) {
      prefetch_ahead(x + i), prefetch_ahead(x + i + 8);  // 128 bytes: two lines
      take(x + i, top, low, non_finite), take(x + i + 4, top1, low1, non_finite1);
      take(x + i + 8, top2, low2, non_finite2), take(x + i + 12, top3, low3, non_finite3);
    }
    top1 = top1 > top3 ? top1 : top3, low1 = low1 < low3 ? low1 : low3;
    top = top > top2 ? top : top2, low = low < low2 ? low : low2;
    top = top > top1 ? top : top1, low = low < low1 ? low : low1;
    non_finite |= non_finite1 | non_finite2 | non_finite3;
  }
  for (; i + 4 <= n; i += 4) take(x + i, top, low, non_finite);
  double largest = 0, smallest = kInf;
  bool any_non_finite = false;
  for (int j = 0; j < 4; ++j) {
    largest = std::max(largest, top[j]), smallest = std::min(smallest, low[j]);
    any_non_finite |= non_finite[j] != 0;
  }
  for (; i < n; ++i) {
    const double a = std::fabs(x[i]);
    largest = std::max(largest, a);
    if (a != 0) smallest = std::min(smallest, a);
    any_non_finite |= !(a <= kMax);
  }
  if (any_non_finite) return void((lo = 0, hi = 2047));
  if (largest == 0) return void((lo = 2047, hi = 0));
  auto field = [](double a) { return std::max(static_cast<std::uint32_t>(std::bit_cast<std::uint64_t>(a) >> 52), 1u); };
  lo = field(smallest), hi = field(largest);
}
inline void f64_fields_of(const double* x, std::size_t n, std::uint32_t& lo, std::uint32_t& hi) {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) f64_fields_avx2(x, n, lo, hi);
  else f64_fields(x, n, lo, hi);
}

//! Whether f64 elements of biased exponent fields lo..hi, 2^c of them at most, split around
//! two_doubles_sigma(hi, c) into two exact double sums (see sum_in_two_doubles).
inline bool two_doubles_fit(std::uint32_t hi, std::uint32_t lo, int c) {
  return static_cast<int>(hi - lo) + 2 * c <= 52 && static_cast<int>(hi) - 1023 + 2 + c <= 1023;
}
//! sigma = 1.5 * 2^K, K = E + 2 + c, E the top field's binade: the split's pivot.
inline double two_doubles_sigma(std::uint32_t hi, int c) { return std::ldexp(1.5, static_cast<int>(hi) - 1023 + 2 + c); }

//! An exact sum `sum` of the n elements at p, with the sign of a zero as the exact sum's rounding
//! gives it: -0 only if every element is -0 (the splits' q of a -0 is +0).
[[gnu::always_inline]] inline double signed_zero(double sum, const double* p, std::size_t n) {
  if (sum != 0) return sum;
  bool negative = true;
  for (std::size_t j = 0; j < n; ++j) negative &= std::signbit(p[j]);
  return negative ? -0.0 : 0.0;
}

//! The q and the r of f64 x[0..n) split around sigma (see sum_in_two_doubles), summed in four lanes
//! each, into hi and lo.
[[gnu::always_inline]] inline void two_doubles_split(const double* x, std::size_t n, double sigma, double& hi, double& lo) {
  constexpr std::size_t kLanes = 4;
  double q_lane[kLanes] = {}, r_lane[kLanes] = {};
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (std::size_t j = 0; j < kLanes; ++j) {
      const double q = (sigma + x[i + j]) - sigma;
      q_lane[j] += q;
      r_lane[j] += x[i + j] - q;
    }
  for (std::size_t j = 0; i < n; ++i, ++j) {
    const double q = (sigma + x[i]) - sigma;
    q_lane[j] += q;
    r_lane[j] += x[i] - q;
  }
  hi = (q_lane[0] + q_lane[1]) + (q_lane[2] + q_lane[3]);
  lo = (r_lane[0] + r_lane[1]) + (r_lane[2] + r_lane[3]);
}
//! sum_in_two_doubles, given the fields of x's elements (f64_fields_of).
[[gnu::always_inline]] inline bool two_doubles_given(const double* x, std::size_t n, std::uint32_t lowest, std::uint32_t highest,
                                                     double& hi, double& lo) {
  if (highest == 2047) return false;  // an infinity or a NaN
  if (lowest > highest) {  // zeros: -0 if every one is
    hi = signed_zero(0.0, x, n), lo = -0.0;
    return true;
  }
  const int c = static_cast<int>(std::bit_width(n - 1));
  if (!two_doubles_fit(highest, lowest, c)) return false;
  two_doubles_split(x, n, two_doubles_sigma(highest, c), hi, lo);
  return true;
}
//! The exact sum of f64 x[0..n) (n >= 1) as hi + lo, two doubles that hold it exactly, and true
//! where they do; false where it needs the superaccumulator. With E the largest element's binade,
//! E_lo the smallest nonzero one's (subnormals as the smallest normal's: their step is its) and c =
//! ceil(log2 n): sigma = 1.5 * 2^K, K = E + 2 + c, splits each x into q = fl(sigma + x) - sigma, x
//! rounded to a multiple of ulp(sigma) = 2^(K - 52), and r = x - q, both exact (Rump, Ogita and
//! Oishi's extraction, as ExactSum's bins do). The q are at most 2^(E + 1) = 2^(K - 1 - c), so any
//! sum of n of them is at most 2^(K - 1): 51 bits of the step. The r are at most 2^(K - 53) and
//! multiples of 2^(E_lo - 52), so any sum of n of them has at most E - E_lo + 2c + 1 bits: exact
//! where E - E_lo + 2c <= 52 (rows of 64 spanning 40 binades). hi + lo, rounded once, is then the
//! exact sum's rounding. The fields in vectors where the processor has AVX2 (f64_fields_of); the
//! split as the caller is built (rows' rounded_sum, which needs the fields again, calls
//! two_doubles_given itself).
inline bool sum_in_two_doubles(const double* x, std::size_t n, double& hi, double& lo) {
  std::uint32_t lowest, highest;
  f64_fields_of(x, n, lowest, highest);
  return two_doubles_given(x, n, lowest, highest, hi, lo);
}

//! Rows [0, rows) of kLength f64 elements at p (0: `length`), each summed exactly in two doubles
//! split around `sigma` (sum_in_two_doubles: sigma from the fields of every row's elements
//! together, which must pass two_doubles_fit), rounded once into out[r]; a zero sum is -0 only if
//! every element of its row is.
template <std::size_t kLength>
[[gnu::always_inline]] inline void two_doubles_rows_loop(const double* p, std::size_t rows, std::size_t length, double sigma,
                                                         double* out) {
  const std::size_t L = kLength ? kLength : length;
  for (std::size_t r = 0; r < rows; ++r, p += L) {
    double hi, lo;
    two_doubles_split(p, L, sigma, hi, lo);
    out[r] = signed_zero(hi + lo, p, L);
  }
}
//! The same with AVX2, four rows at a time where rows are a multiple of 4 long: a row's elements
//! a vector at a time, then the four rows' lane sums at once (a scalar row of 4 cost some 30
//! additions: f64 rows of 4 took 2.2x a plain sum's time so, these about as long as a plain sum,
//! the step's check aside).
template <std::size_t kLength>
__attribute__((target("avx2"))) inline void two_doubles_rows_avx2(const double* p, std::size_t rows, std::size_t length, double sigma,
                                                                  double* out) {
  typedef double V __attribute__((vector_size(32)));
  typedef double VU __attribute__((vector_size(32), aligned(8), may_alias));
  const std::size_t L = kLength ? kLength : length;
  const V pivot = V{} + sigma;
  std::size_t r = 0;
  if (L % 4 == 0)
    for (; r + 4 <= rows; r += 4, p += 4 * L) {
      V q[4], rest[4];  // row k's q and r, lane by lane
      for (int k = 0; k < 4; ++k) {
        q[k] = V{}, rest[k] = V{};
        for (std::size_t j = 0; j < L; j += 4) {
          const V v = *reinterpret_cast<const VU*>(p + k * L + j);
          const V t = (pivot + v) - pivot;
          q[k] += t;
          rest[k] += v - t;
        }
      }
      // Lane sums of four vectors a, b, c, d at once: pairs of lanes, then halves.
      V sums[2];
      for (int h = 0; h < 2; ++h) {
        const V* w = h == 0 ? q : rest;
        const V ab = __builtin_shufflevector(w[0], w[1], 0, 4, 2, 6) + __builtin_shufflevector(w[0], w[1], 1, 5, 3, 7);
        const V cd = __builtin_shufflevector(w[2], w[3], 0, 4, 2, 6) + __builtin_shufflevector(w[2], w[3], 1, 5, 3, 7);
        sums[h] = __builtin_shufflevector(ab, cd, 0, 1, 4, 5) + __builtin_shufflevector(ab, cd, 2, 3, 6, 7);
      }
      const V sum = sums[0] + sums[1];
      for (int k = 0; k < 4; ++k) out[r + k] = signed_zero(sum[k], p + k * L, L);
    }
  two_doubles_rows_loop<kLength>(p, rows - r, length, sigma, out + r);
}
template <std::size_t kLength>
inline void two_doubles_rows(const double* p, std::size_t rows, std::size_t length, double sigma, double* out) {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) two_doubles_rows_avx2<kLength>(p, rows, length, sigma, out);
  else two_doubles_rows_loop<kLength>(p, rows, length, sigma, out);
}

}  // namespace xreduce::detail
