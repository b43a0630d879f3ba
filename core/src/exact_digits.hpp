#pragma once
// Exact sums in fewer digits than ExactSum's 67, and the one rounding both use.

#include <algorithm>
#include <bit>
#include <cstdint>

namespace xreduce::detail {

//! The exact value of the digits d[0..kCount) (32-bit digits in 64-bit words, carries pending; d[0]
//! weighs 2^lowest_exponent, d[kCount - 1] holds the sign once normalized) rounded once to T (float,
//! double, f16 or bf16), ties to even, +-inf past T's largest finite value; a zero as -0 if
//! negative_zero. d is normalized in place, its value unchanged. ExactSum::round's rounding, for
//! its 67 digits and for F32Digits' ten.
template <class T, int kCount>
T round_digits(std::int64_t* d, int lowest_exponent, bool negative_zero);

//! The exact sum of finite f32 values, fewer than 2^31 of them, in ExactSum's digits 29..38 alone:
//! ten 32-bit digits in 64-bit words, digit k weighing 2^(32 k - 160) (every f32 is a multiple of
//! 2^-149 below 2^128). Short rows whose binades a double cannot hold take it rather than an
//! ExactSum: ten digits to clear, carry and round instead of 67.
struct F32Digits {
  static constexpr int kCount = 10, kLowestExponent = -160;
  std::int64_t d[kCount] = {};
  bool only_negative_zeros = true;  //!< -0 if the sum is zero: every element was -0

  //! Adds x, which must be finite (neither an infinity nor a NaN).
  void add(float x) {
    const auto bits = std::bit_cast<std::uint32_t>(x);
    only_negative_zeros &= bits == 0x80000000u;
    const std::uint32_t field = bits >> 23 & 0xff;
    const std::uint32_t mantissa = (bits & 0x7fffff) | static_cast<std::uint32_t>(field != 0) << 23;
    // The element is mantissa * 2^(max(field, 1) - 150): its lowest bit sits this far above
    // 2^kLowestExponent.
    const int p = static_cast<int>(std::max(field, 1u)) - 150 - kLowestExponent;
    const int k = p >> 5, r = p & 31;
    const std::uint64_t v = static_cast<std::uint64_t>(mantissa) << r;  // below 2^55: digits k and k+1
    // Negated without a branch (a sign at random mispredicted half the time): (a ^ s) - s.
    const std::int64_t sign = -static_cast<std::int64_t>(bits >> 31);
    d[k] += (static_cast<std::int64_t>(v & 0xffffffff) ^ sign) - sign;
    d[k + 1] += (static_cast<std::int64_t>(v >> 32) ^ sign) - sign;
  }
  //! The sum rounded once to T.
  template <class T>
  T round() {
    return round_digits<T, kCount>(d, kLowestExponent, only_negative_zeros);
  }
};

}  // namespace xreduce::detail
