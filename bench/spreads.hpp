#pragma once
// The benchmarks' random data, the same values on the host and the GPU: element i of a draw is a
// function of splitmix64(i + seed) alone. Uniform data for every suite, and the exact suite's
// distributions (an exact sum's cost could depend on them where a plain sum's does not). C++17,
// for nvcc too.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "xreduce/float16.hpp"

#ifdef __CUDACC__
#define XREDUCE_BENCH_HD __host__ __device__
#else
#define XREDUCE_BENCH_HD
#endif

namespace xreduce::bench {

//! 64 random bits for index i (splitmix64): the test data's generator, the same on every launch shape.
XREDUCE_BENCH_HD inline std::uint64_t splitmix64(std::uint64_t i) {
  std::uint64_t z = i * 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

//! A value uniform in [0, 1) from 64 random bits, every mantissa bit random: 24 random bits for
//! float, 53 for double; the 16-bit floats get float's, rounded once (what
//! `torch.rand(n).to(dtype)` gives).
template <class T>
XREDUCE_BENCH_HD inline T uniform_value(std::uint64_t z) {
  if constexpr (sizeof(T) <= 4) return T(static_cast<float>(z >> 40) * 0x1p-24f);
  else return T(static_cast<double>(z >> 11) * 0x1p-53);
}

enum class Spread { uniform, wide, random_bits, cancelling_pairs, subnormal };
constexpr Spread kSpreads[] = {Spread::uniform, Spread::wide, Spread::random_bits, Spread::cancelling_pairs,
                               Spread::subnormal};

//! The exponent range of Spread::wide: 2^-range..2^range.
template <class T>
constexpr int wide_range() {
  return sizeof(T) == 8 ? 600 : 60;
}

inline const char* spread_name(Spread s, bool f64) {
  switch (s) {
    case Spread::uniform: return "uniform [0, 1)";
    case Spread::wide: return f64 ? "random sign, 2^-600..2^600" : "random sign, 2^-60..2^60";
    case Spread::random_bits: return "random bits (every finite exponent)";
    case Spread::cancelling_pairs: return "pairs x, -x of the wide data";
    case Spread::subnormal: return "subnormals, random sign";
  }
  return "?";
}

//! A wide value from 64 random bits: a random sign, 31 random bits of significand and an exponent
//! uniform in [-range, range].
XREDUCE_BENCH_HD inline double wide_value(std::uint64_t z, int range) {
  const int e = static_cast<int>((z >> 32) % static_cast<std::uint64_t>(2 * range + 1)) - range;
  const double v = ldexp(1.0 + static_cast<double>(z & ((1ull << 31) - 1)) * 0x1p-31, e);
  return (z >> 63) ? -v : v;
}

//! T of random bits, finite (an infinity or NaN loses its exponent's top bit); `subnormal`: with
//! the exponent field cleared.
template <class T>
XREDUCE_BENCH_HD inline T from_random_bits(std::uint64_t z, bool subnormal) {
  if constexpr (is_float16_v<T>) {
    auto b = static_cast<std::uint16_t>(z);
    const std::uint16_t field = std::is_same_v<T, bf16> ? 0x7f80 : 0x7c00;
    if (subnormal) b &= static_cast<std::uint16_t>(~field);
    else if ((b & field) == field) b &= 0xbfff;
    return T::from_bits(b);
  } else {
    using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
    constexpr Bits kField = sizeof(T) == 4 ? Bits(0x7f800000u) : Bits(0x7ff0000000000000ull);
    constexpr Bits kTop = Bits{1} << (8 * sizeof(T) - 2);  // the exponent field's top bit
    auto b = static_cast<Bits>(z);
    if (subnormal) b &= ~kField;
    else if ((b & kField) == kField) b &= ~kTop;
    T x;
    memcpy(&x, &b, sizeof x);
    return x;
  }
}

//! Element i of the draw `seed` of distribution s.
template <class T>
XREDUCE_BENCH_HD inline T spread_value(Spread s, std::uint64_t i, std::uint64_t seed) {
  const std::uint64_t z = splitmix64(i + seed);
  switch (s) {
    case Spread::uniform: return uniform_value<T>(z);
    case Spread::wide: return T(wide_value(z, wide_range<T>()));
    case Spread::random_bits: return from_random_bits<T>(z, false);
    case Spread::cancelling_pairs: {  // x[2j + 1] = -x[2j]: the sum is 0 whatever plain sums give
      const double v = static_cast<double>(T(wide_value(splitmix64(i / 2 + seed), wide_range<T>())));
      return T((i & 1) ? -v : v);
    }
    case Spread::subnormal: return from_random_bits<T>(z, true);
  }
  return T(0.0);
}

}  // namespace xreduce::bench
