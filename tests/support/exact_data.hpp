#pragma once
// Data that exact sums must get right to the last bit: each shape aims at one way of getting it
// wrong (a lost low bit, a double rounding, a wrong tie, an early overflow, a lost sign of zero).

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include "xreduce/float16.hpp"

namespace xreduce::test {

enum class ExactShape {
  uniform,       //!< U(-1, 1): the common case, the fast path
  wide,          //!< random bit patterns: every exponent from subnormal to the largest, both signs
  subnormal,     //!< multiples of the smallest subnormal, and values near the smallest normal
  cancellation,  //!< wide values and their negations, plus one tiny value: the sum is the tiny one
  halfway,       //!< a value and pieces adding to half the gap to a neighbour: ties to even, or just past them
  hidden_tie,    //!< a tie broken by 2^-53 of the big value's binade: a double holding the sum loses it
  overflow,      //!< the largest finite value and canceling pairs: the sum overflows only at the end, or not
  specials,      //!< NaN, +inf or -inf among ordinary values
  zeros,         //!< only zeros: all -0 (the sum is -0) or mixed (+0)
  //! One sign, full significands, each element's lowest bit 31 bits above a multiple of 2^32 (f32
  //! and bf16 as f32: the exponent 22 mod 32): every element the largest that one 32-bit digit's
  //! 64-bit word of the exact sums takes at once, so that a row piles into a few words and fills
  //! them fastest; f32 and bf16 rows into one word, to a tie broken by a smallest subnormal
  //! (piled_tie) (not in all_exact_shapes: the rows that take ten digits draw it)
  piled,
};
inline constexpr ExactShape all_exact_shapes[] = {ExactShape::uniform,  ExactShape::wide,     ExactShape::subnormal,
                                                  ExactShape::cancellation, ExactShape::halfway, ExactShape::hidden_tie,
                                                  ExactShape::overflow, ExactShape::specials, ExactShape::zeros};

inline const char* name(ExactShape s) {
  constexpr const char* names[] = {"uniform",  "wide",     "subnormal", "cancellation", "halfway",
                                   "hidden tie", "overflow", "specials",  "zeros",        "piled"};
  return names[static_cast<int>(s)];
}

//! An ExactShape::piled row of f32 or bf16 (`precision` significand bits, `smallest` the least
//! subnormal): m copies of the largest significand at 2^118 (its lowest bit 31 mod 32 above
//! 2^-160, so that one of the ten 32-bit digits' 64-bit words takes each whole: past 256 of them
//! that word must carry), then powers of two that bring their sum exactly halfway between two
//! neighbours of the type, then one smallest subnormal of either sign that breaks the tie, then
//! zeros; one sign for all but that. No sum in doubles and bound on its error settles a tie, so
//! the rows that take ten digits take these whole (m up to 511; rows shorter than 12, the copies
//! alone).
inline std::vector<double> piled_tie(std::size_t n, int precision, double smallest, std::mt19937_64& rng) {
  std::vector<double> v(n, 0.0);
  const double s = rng() % 2 ? 1.0 : -1.0;
  const double largest = std::ldexp(std::ldexp(1.0, precision) - 1, 119 - precision);
  const std::size_t m = n >= 12 ? std::min<std::size_t>(n - 11, 511) : n;
  for (std::size_t i = 0; i < m; ++i) v[i] = s * largest;
  if (m == n) return v;
  const double pile = static_cast<double>(m) * largest;  // exact: precision + 9 bits
  const double ulp = std::ldexp(1.0, std::ilogb(pile) - precision + 1);
  double rest = ulp / 2 - std::fmod(pile, ulp);  // below 2^10 multiples of 2^(119 - precision)
  if (rest < 0) rest += ulp;
  // A pile of one copy has a finer ulp than the copies' step: no tie to reach with them.
  if (std::fmod(rest, std::ldexp(1.0, 119 - precision)) != 0) return v;
  std::size_t i = m;
  for (int b = 119 - precision; rest != 0 && i + 1 < n; ++b)
    if (std::fmod(rest, std::ldexp(1.0, b + 1)) != 0) v[i++] = s * std::ldexp(1.0, b), rest -= std::ldexp(1.0, b);
  v[i] = rng() % 2 ? smallest : -smallest;
  return v;
}

//! A finite T from random bits: any exponent, any sign.
template <class T>
T random_finite(std::mt19937_64& rng) {
  using Bits = std::conditional_t<std::is_same_v<T, float>, std::uint32_t, std::uint64_t>;
  for (;;) {
    const T v = std::bit_cast<T>(static_cast<Bits>(rng()));
    if (std::isfinite(v)) return v;
  }
}

template <class T>
std::vector<T> make_exact_data(ExactShape shape, std::size_t n, std::mt19937_64& rng) {
  using L = std::numeric_limits<T>;
  std::vector<T> v(n);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  auto sign = [&] { return rng() % 2 ? T(1) : T(-1); };
  switch (shape) {
    case ExactShape::uniform:
      for (T& x : v) x = static_cast<T>(unit(rng));
      break;
    case ExactShape::wide:
      for (T& x : v) x = random_finite<T>(rng);
      break;
    case ExactShape::subnormal:
      for (T& x : v)
        x = rng() % 4 ? static_cast<T>(static_cast<double>(static_cast<std::int64_t>(rng() % (1u << 20)) - (1 << 19))) * L::denorm_min()
                      : sign() * L::min() * static_cast<T>(1 + unit(rng) / 4);
      break;
    case ExactShape::cancellation: {
      for (std::size_t i = 0; i + 1 < n; i += 2) {
        v[i] = random_finite<T>(rng);
        v[i + 1] = -v[i];
      }
      if (n % 2) v[n - 1] = sign() * std::ldexp(T(1), -static_cast<int>(rng() % 140));
      else if (n > 0) {  // the first pair broken: a subnormal is left
        v[0] = sign() * L::denorm_min();
        v[1] = T(0);
      }
      break;
    }
    case ExactShape::halfway: {
      if (n == 0) break;
      // big + pieces that add to half the gap to a neighbour of big: a tie, rounded to the even
      // neighbour; a last piece of one smallest subnormal moves the sum just past (or before) the
      // tie. Half the time big is a power of two and the pieces go toward zero, where the gap is
      // half big's ulp (a rounding that took the gap above for it would settle such a tie wrong).
      const bool power_of_two = rng() % 2;
      const T big = std::ldexp(power_of_two ? T(1) : static_cast<T>(1 + std::fabs(unit(rng))), static_cast<int>(rng() % 40) - 20);
      v[0] = rng() % 2 ? big : -big;
      T half = (std::nextafter(big, power_of_two ? T(0) : L::infinity()) - big) / 2;  // toward the neighbour
      half = v[0] < 0 ? -half : half;
      std::size_t i = 1;
      for (T piece = half / 2; i + 1 < n && piece != 0 && std::fabs(piece) >= L::min(); ++i, piece /= 2) v[i] = piece;
      if (i < n) {  // the last piece again: the pieces add to half
        v[i] = i >= 2 ? v[i - 1] : half;
        ++i;
      }
      if (i < n && rng() % 2) v[i++] = sign() * L::denorm_min();
      break;
    }
    case ExactShape::hidden_tie: {
      // big + half its ulp (a tie) + p - q, where p and q lie 2^30 below big and differ by p's
      // ulp: the tie is broken by 2^-53 of big's binade for f32 (2^-82 for f64), which a double
      // holding the sum of f32 rounds away. The other elements are zeros.
      if (n < 4) {
        for (T& x : v) x = static_cast<T>(unit(rng));
        break;
      }
      const int e = static_cast<int>(rng() % 40) - 20;
      const T big = std::ldexp(static_cast<T>(1 + std::fabs(unit(rng))), e), q = std::ldexp(T(1), e - 30);
      const T s = sign();
      v[0] = s * big;
      v[1] = s * (std::nextafter(big, L::infinity()) - big) / 2;
      v[2] = sign() * std::nextafter(q, L::infinity());
      v[3] = v[2] > 0 ? -q : q;
      break;
    }
    case ExactShape::overflow: {
      for (std::size_t i = 0; i + 1 < n; i += 2) {
        v[i] = static_cast<T>(unit(rng)) * L::max();
        v[i + 1] = -v[i];
      }
      if (n == 0) break;
      const T ulp = L::max() - std::nextafter(L::max(), T(0));
      const T last[] = {ulp / 2, ulp / 4, ulp, -L::max(), T(0)};  // overflow (a tie to even), no, yes, zero, no
      v[0] = L::max();
      if (n > 1) v[n - 1] = last[rng() % 5];
      break;
    }
    case ExactShape::specials: {
      for (T& x : v) x = static_cast<T>(unit(rng));
      const T special[] = {L::quiet_NaN(), L::infinity(), -L::infinity()};
      for (int k = 0, count = n > 0 ? 1 + static_cast<int>(rng() % 3) : 0; k < count; ++k) v[rng() % n] = special[rng() % 3];
      break;
    }
    case ExactShape::zeros: {
      const bool all_negative = rng() % 2;
      for (T& x : v) x = all_negative || rng() % 2 ? -T(0) : T(0);
      break;
    }
    case ExactShape::piled: {
      if constexpr (std::is_same_v<T, float>) {
        const std::vector<double> d = piled_tie(n, L::digits, L::denorm_min(), rng);
        for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<T>(d[i]);
        break;
      }
      // The largest significand at exponent E, its lowest bit at E - (digits - 1), 31 mod 32.
      const T s = sign(), largest = T(2) - std::ldexp(T(1), 1 - L::digits);
      for (T& x : v) {
        int e = 31 + (L::digits - 1) + 32 * (static_cast<int>(rng() % 8) - 4);
        while (e > L::max_exponent - 1) e -= 32;
        while (e < L::min_exponent - 1) e += 32;
        x = s * std::ldexp(largest, e);
      }
      break;
    }
  }
  std::shuffle(v.begin(), v.end(), rng);
  return v;
}

//! The same bits, or both NaN.
template <class T>
bool same_bits(T a, T b) {
  if (std::isnan(static_cast<double>(a)) && std::isnan(static_cast<double>(b))) return true;
  return std::memcmp(&a, &b, sizeof a) == 0;
}

//! make_exact_data's shapes for f16 and bf16, built from bit patterns and doubles (every value of
//! T is a double): the same ways of going wrong, at 16 bits. Overflow matters most for f16, whose
//! largest finite value (65504) is within reach of a few thousand ordinary elements.
template <class T>
std::vector<T> make_exact_data16(ExactShape shape, std::size_t n, std::mt19937_64& rng) {
  static_assert(is_float16_v<T>);
  using L = std::numeric_limits<T>;
  constexpr unsigned kMant = L::digits - 1;                      // stored significand bits
  constexpr std::uint16_t kExpMask = static_cast<std::uint16_t>(0x7fff & ~((1u << kMant) - 1));
  const double max = static_cast<double>(L::max()), tiny = static_cast<double>(L::denorm_min());
  auto finite = [&] {
    for (;;) {
      const auto b = static_cast<std::uint16_t>(rng());
      if ((b & kExpMask) != kExpMask) return T::from_bits(b);
    }
  };
  auto sign = [&] { return rng() % 2 ? 1.0 : -1.0; };
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::vector<T> v(n);
  switch (shape) {
    case ExactShape::uniform:
      for (T& x : v) x = T(unit(rng));
      break;
    case ExactShape::wide:
      for (T& x : v) x = finite();
      break;
    case ExactShape::subnormal:
      for (T& x : v)
        x = rng() % 4 ? T::from_bits(static_cast<std::uint16_t>((rng() & ((1u << kMant) - 1)) | (rng() % 2 ? 0x8000u : 0u)))
                      : T(sign() * static_cast<double>(L::min()) * (1 + std::fabs(unit(rng)) / 4));
      break;
    case ExactShape::cancellation:
      for (std::size_t i = 0; i + 1 < n; i += 2) {
        v[i] = finite();
        v[i + 1] = T(-static_cast<double>(v[i]));
      }
      if (n % 2) v[n - 1] = T(sign() * std::ldexp(1.0, -static_cast<int>(rng() % 24)));
      break;
    case ExactShape::halfway: {
      if (n == 0) break;
      // big + pieces adding to half its ulp: a tie; one smallest subnormal more moves it past.
      const T big = T(std::ldexp(1 + std::fabs(unit(rng)), static_cast<int>(rng() % 12) - 6));
      v[0] = T(sign() * static_cast<double>(big));
      const double ulp = static_cast<double>(T::from_bits(static_cast<std::uint16_t>(big.bits + 1))) - static_cast<double>(big);
      double half = (static_cast<double>(v[0]) < 0 ? -ulp : ulp) / 2;
      std::size_t i = 1;
      for (double piece = half / 2; i + 1 < n && std::fabs(piece) >= tiny; ++i, piece /= 2) v[i] = T(piece);
      if (i < n) {
        v[i] = i >= 2 ? v[i - 1] : T(half);
        ++i;
      }
      if (i < n && rng() % 2) v[i++] = T(sign() * tiny);
      break;
    }
    case ExactShape::hidden_tie:  // 16 bits have no double to hide a tie from: the halfway shape's tie, kept short
      for (T& x : v) x = T(0.0);
      if (n >= 2) {
        const T big = T(std::ldexp(1 + std::fabs(unit(rng)), static_cast<int>(rng() % 12) - 6));
        v[0] = big;
        v[1] = T((static_cast<double>(T::from_bits(static_cast<std::uint16_t>(big.bits + 1))) - static_cast<double>(big)) / 2);
      }
      break;
    case ExactShape::overflow: {
      for (std::size_t i = 0; i + 1 < n; i += 2) {
        v[i] = T(unit(rng) * max);
        v[i + 1] = T(-static_cast<double>(v[i]));
      }
      if (n == 0) break;
      const double ulp = max - static_cast<double>(T::from_bits(static_cast<std::uint16_t>(L::max().bits - 1)));
      const double last[] = {ulp / 2, ulp / 4, ulp, -max, 0};  // past max: a tie (to even: inf), no, yes, zero, no
      v[n - 1] = L::max();
      if (n >= 2) v[n - 2] = T(last[rng() % 5]);
      break;
    }
    case ExactShape::specials: {
      const T special[] = {L::quiet_NaN(), L::infinity(), T(-HUGE_VAL)};
      for (T& x : v) x = rng() % 8 ? T(unit(rng)) : special[rng() % 3];
      break;
    }
    case ExactShape::zeros: {
      const bool all_negative = rng() % 2;
      for (T& x : v) x = T(all_negative || rng() % 2 ? -0.0 : 0.0);
      break;
    }
    case ExactShape::piled: {
      // As f32's: bf16 is summed as the f32 it widens to (its exponent 22 mod 32); f16, the
      // largest finite value, of one sign.
      if constexpr (std::is_same_v<T, bf16>) {
        const std::vector<double> d = piled_tie(n, L::digits, tiny, rng);
        for (std::size_t i = 0; i < n; ++i) v[i] = T(d[i]);
        break;
      }
      const double s = sign();
      for (T& x : v) x = T(s * max);
      break;
    }
  }
  std::shuffle(v.begin(), v.end(), rng);
  return v;
}

}  // namespace xreduce::test
