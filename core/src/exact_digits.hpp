#pragma once
// Exact sums in fewer digits than ExactSum's 67, and the one rounding both use.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace xreduce::detail {

//! The exact value of the digits d[0..kCount) (32-bit digits in 64-bit words, carries pending; d[0]
//! weighs 2^lowest_exponent, d[kCount - 1] holds the sign once normalized) rounded once to T (float,
//! double, f16 or bf16), ties to even, +-inf past T's largest finite value; a zero as -0 if
//! negative_zero. d is normalized in place, its value unchanged. ExactSum::round's rounding, for
//! its 67 digits and for F32Digits' ten.
template <class T, int kCount>
T round_digits(std::int64_t* d, int lowest_exponent, bool negative_zero);

//! The most binades (F32Binades' hi - lo) that a run of f32 may span for ExactSum's fast path, its
//! four bins (exact.cpp checks this against their sizes): a run that spans more goes into the
//! large accumulator, whose setup costs more than ten digits do for fewer than 2048 elements.
inline constexpr std::uint32_t kMostBinadesOfFastRuns = 143;
//! The same for f64 runs (biased exponent fields, subnormals as 1), their three bins: rows that
//! span more take two doubles and their error bound before the superaccumulator.
inline constexpr std::uint32_t kMostBinadesOfFastF64Runs = 72;

//! The exact sum of finite f32 values in ExactSum's digits 29..38 alone: ten 32-bit digits in
//! 64-bit words, digit k weighing 2^(32 k - 160) (every f32 is a multiple of 2^-149 below 2^128).
//! Rows whose binades a double cannot hold, shorter than the superaccumulator's runs pay back,
//! take it rather than an ExactSum: ten digits to clear, carry and round instead of 67 (an
//! ExactSum's clearing, carries and rounding took about 160 ns a row of 4 random-bit f32, these
//! 50), and one addition an element. An element's significand, shifted to its place within its
//! digit, is below 2^55 and goes whole into that digit's word: 256 of them fit before the words
//! are carried (two additions an element, a digit's half each, took 2.1 ns an element on the
//! 2-core EPYC, one 1.4).
struct F32Digits {
  static constexpr int kCount = 10, kLowestExponent = -160;
  std::int64_t d[kCount] = {};
  std::uint32_t not_negative_zero = 0;  //!< nonzero unless every element was -0 (the sum's zero is -0 then)

  //! Adds x[0..n), which must be finite (no infinity or NaN).
  void add(const float* x, std::size_t n) {
    constexpr std::size_t kBetweenCarries = 256;  // 2^63 / 2^55
    for (std::size_t i = 0; i < n;) {
      for (const std::size_t stop = std::min(n, i + kBetweenCarries); i < stop; ++i) add_one(x[i]);
      if (i < n) carry();
    }
  }
  //! The sum rounded once to T.
  template <class T>
  T round() {
    return round_digits<T, kCount>(d, kLowestExponent, not_negative_zero == 0);
  }

 private:
  void add_one(float x) {
    const auto bits = std::bit_cast<std::uint32_t>(x);
    not_negative_zero |= bits ^ 0x80000000u;
    const std::uint32_t field = bits >> 23 & 0xff;
    const std::uint32_t mantissa = (bits & 0x7fffff) | static_cast<std::uint32_t>(field != 0) << 23;
    // The element is mantissa * 2^(max(field, 1) - 150): its lowest bit sits p bits above
    // 2^kLowestExponent, in digit p / 32 (8 at most: the top digit takes only carries).
    const int p = static_cast<int>(std::max(field, 1u)) - 150 - kLowestExponent;
    const auto v = static_cast<std::int64_t>(static_cast<std::uint64_t>(mantissa) << (p & 31));
    // Negated without a branch (a sign at random mispredicted half the time): (v ^ s) - s.
    const std::int64_t sign = -static_cast<std::int64_t>(bits >> 31);
    d[p >> 5] += (v ^ sign) - sign;
  }
  //! Each word below the top back into [0, 2^32), its carry (floor division) into the next.
  void carry() {
    for (int k = 0; k + 1 < kCount; ++k) d[k + 1] += d[k] >> 32, d[k] &= 0xffffffff;
  }
};

}  // namespace xreduce::detail
