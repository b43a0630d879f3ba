#pragma once
// Random test data: a fresh seed per run (or XREDUCE_TEST_SEED to replay one), printed by every
// failing check through doctest's INFO.

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "xreduce/types.hpp"

namespace xreduce::test {

inline std::uint64_t run_seed() {
  static const std::uint64_t seed = []() -> std::uint64_t {
    if (const char* s = std::getenv("XREDUCE_TEST_SEED")) return std::strtoull(s, nullptr, 0);
    return (std::uint64_t{std::random_device{}()} << 32) ^ std::uint64_t{std::random_device{}()};
  }();
  return seed;
}

//! The shapes of data the conformance suite draws.
enum class Pattern { random, ties, nan, inf, both_inf, negative };

inline const char* name(Pattern p) {
  switch (p) {
    case Pattern::random: return "random";
    case Pattern::ties: return "ties";
    case Pattern::nan: return "nan";
    case Pattern::inf: return "inf";
    case Pattern::both_inf: return "+inf and -inf";
    case Pattern::negative: return "negative";
  }
  return "?";
}

//! n elements of T for `op`: sums get full-range integers (so they wrap) and mixed-sign floats;
//! products get odd integers (never zero) and floats 2^u, |u| < 1/64, with random signs (so the
//! product neither overflows nor vanishes); ties draw from {-2..2}.
template <class T>
std::vector<T> make_data(Pattern p, Op op, std::size_t n, std::mt19937_64& rng) {
  std::vector<T> v(n);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  for (auto& x : v) {
    if (p == Pattern::ties) {
      x = static_cast<T>(static_cast<int>(rng() % 5) - 2);
    } else if constexpr (std::is_floating_point_v<T>) {
      double u = unit(rng);
      if (op == Op::prod) x = static_cast<T>(std::copysign(std::exp2(u / 64), unit(rng)));
      else x = static_cast<T>(p == Pattern::negative ? -std::fabs(u) : u);
    } else {
      T r = static_cast<T>(rng());
      if (op == Op::prod) r = static_cast<T>(r | 1);
      if (p == Pattern::negative && std::is_signed_v<T>) r = static_cast<T>(r < 0 ? r : -r - 1);
      x = r;
    }
  }
  if constexpr (std::is_floating_point_v<T>) {
    if (n > 0 && (p == Pattern::nan || p == Pattern::inf || p == Pattern::both_inf)) {
      const T special = p == Pattern::nan ? std::numeric_limits<T>::quiet_NaN() : std::numeric_limits<T>::infinity();
      v[rng() % n] = special;
      v[rng() % n] = p == Pattern::both_inf ? -special : special;
    }
  }
  return v;
}

}  // namespace xreduce::test
