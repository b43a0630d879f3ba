#pragma once
// Exact sums of f32 that a double holds: the CPU's short rows and columns add them there and
// touch the superaccumulator (ExactSum, 576 bytes) only when the elements' binades would not
// fit, as the GPU's exact kernels keep a double while an ExponentSpan allows it. Clearing,
// filling and rounding an ExactSum for every row of 4 took 24 times the plain sum's time, and
// adding each element of a column to its own ExactSum 20-31 times.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace xreduce::detail {

//! The binades of the nonzero f32 elements seen: their biased exponent fields, subnormals as 1
//! (their step is the smallest normal one's). An infinity or a NaN makes hi 255.
struct F32Binades {
  std::uint32_t lo = 255, hi = 0;  //!< lo > hi: no nonzero element yet
  void add(const F32Binades& other) { lo = std::min(lo, other.lo), hi = std::max(hi, other.hi); }
  //! Whether `count` elements of these binades sum exactly in a double, in any order: each is a
  //! multiple of its step 2^(field - 150), so of 2^(lo - 150), and their sum, and any partial
  //! sum, is below count * 2^(hi - 126) <= 2^(hi - 126 + ceil(log2 count)); a double's 53 bits
  //! hold all of them if hi - lo + ceil(log2 count) <= 29. Never with an infinity or a NaN.
  bool fit(std::uint64_t count) const {
    if (hi == 255) return false;
    return lo > hi || hi - lo + static_cast<std::uint32_t>(std::bit_width(count - 1)) <= 29;
  }
};

//! The binades of x[0..n) (as F32Binades counts them) in one pass of integer minima and maxima
//! (element by element, through the struct, it took 60% of a column sum's time); inlined into a
//! default and an AVX2 build, since the baseline x86-64 has no vector minimum of 32-bit integers
//! and the loop stayed scalar.
[[gnu::always_inline]] inline F32Binades binades_loop(const float* x, std::size_t n) {
  std::uint32_t lo = 255, hi = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(x[i]), field = bits >> 23 & 0xff;
    const std::uint32_t binade = field | static_cast<std::uint32_t>(field == 0);
    const std::uint32_t zero = static_cast<std::uint32_t>((bits << 1) == 0);  // as masks, not selects: those kept it scalar
    lo = std::min(lo, binade | (0u - zero));
    hi = std::max(hi, binade & (zero - 1u));
  }
  return {lo, hi};
}
__attribute__((target("avx2"))) inline F32Binades binades_avx2(const float* x, std::size_t n) { return binades_loop(x, n); }
inline F32Binades binades_of(const float* x, std::size_t n) {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2 ? binades_avx2(x, n) : binades_loop(x, n);
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

//! The sum of x[0..n) (n >= 1) into `sum` and true where a double holds it exactly (F32Binades),
//! in four lanes, since order does not matter then; false, before adding, where it needs the
//! superaccumulator.
//! The lanes start at -0, so that a sum of -0s is -0 as the exact sum's rounding gives it.
inline bool sum_in_double(const float* x, std::size_t n, double& sum) {
  if (!binades_of(x, n).fit(n)) return false;
  double lane[4] = {-0.0, -0.0, -0.0, -0.0};
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (std::size_t j = 0; j < 4; ++j) lane[j] += x[i + j];
  for (; i < n; ++i) lane[0] += x[i];
  sum = (lane[0] + lane[1]) + (lane[2] + lane[3]);
  return true;
}

}  // namespace xreduce::detail
