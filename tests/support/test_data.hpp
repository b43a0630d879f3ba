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
#include <type_traits>
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

//! The elements of a test array: a std::vector, but one whose data() is a `const T*` for bool too
//! (std::vector<bool> packs bits and has no data()).
template <class T>
class Elements {
  struct Bool {  // a bool in a struct of its own: the vector cannot specialise it
    bool value;
  };
  using Slot = std::conditional_t<std::is_same_v<T, bool>, Bool, T>;
  static_assert(sizeof(Slot) == sizeof(T) && alignof(Slot) == alignof(T));

 public:
  Elements() = default;
  explicit Elements(std::size_t n, T value = T{}) : slots_(n, Slot{value}) {}
  //! A copy as a plain vector, for the types that have one.
  template <class U = T, class = std::enable_if_t<!std::is_same_v<U, bool>>>
  operator std::vector<T>() const {
    return std::vector<T>(begin(), end());
  }
  std::size_t size() const { return slots_.size(); }
  bool empty() const { return slots_.empty(); }
  T* data() { return reinterpret_cast<T*>(slots_.data()); }
  const T* data() const { return reinterpret_cast<const T*>(slots_.data()); }
  T& operator[](std::size_t i) { return data()[i]; }
  const T& operator[](std::size_t i) const { return data()[i]; }
  T* begin() { return data(); }
  T* end() { return data() + size(); }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size(); }

 private:
  std::vector<Slot> slots_;
};

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
Elements<T> make_data(Pattern p, Op op, std::size_t n, std::mt19937_64& rng) {
  Elements<T> v(n);
  // Uniform on [-1, 1) in steps of 2^-52, from one draw's top 53 bits: std::uniform_real_distribution
  // takes long double arithmetic a draw, and the conformance suite draws hundreds of millions.
  auto unit = [](std::mt19937_64& g) { return std::ldexp(static_cast<double>(static_cast<std::int64_t>(g()) >> 11), -52); };
  op = without_nan(op);  // nanprod's data are prod's
  for (auto& x : v) {
    if constexpr (std::is_same_v<T, bool>) {
      x = (rng() & (p == Pattern::ties ? 7 : 1)) != 0;  // ties: mostly true, so that argmin has few candidates
    } else if (p == Pattern::ties) {
      x = static_cast<T>(static_cast<int>(rng() % 5) - 2);
    } else if constexpr (is_float_v<T>) {
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
  if constexpr (is_float_v<T>) {
    if (n > 0 && (p == Pattern::nan || p == Pattern::inf || p == Pattern::both_inf)) {
      const T special = p == Pattern::nan ? std::numeric_limits<T>::quiet_NaN() : std::numeric_limits<T>::infinity();
      v[rng() % n] = special;
      v[rng() % n] = p == Pattern::both_inf ? T(-static_cast<double>(special)) : special;
    }
  }
  return v;
}

}  // namespace xreduce::test
