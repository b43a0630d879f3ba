#pragma once
// The CPU reduction kernels shared by the sequential, TBB and OpenMP backends. Templates over
// the element type and an accumulation policy, so that later user-defined operators reuse them.
//
// Accuracy comes from the shape of the sum, not from extra work: each leaf of kBlock elements is
// summed in kLanes independent accumulators (which the compiler keeps in vector registers), the
// lanes are combined pairwise, and the leaves are combined pairwise through a binary-counter
// stack. A value passes through at most kBlock/kLanes + log2(kLanes) + log2(n/kBlock) additions,
// under 64 for any n below 2^40.
//
// f32 sums: a leaf is summed in float lanes (16 additions each, so at most 20 roundings of
// eps(f32)), and only leaf results are widened to double. Widening every element instead costs
// about three times the instructions on baseline x86-64 (no AVX), enough to fall below memory
// speed on one core. The price: a leaf whose float partial overflows (values near FLT_MAX of
// mixed sign) gives inf where a double accumulator would not.

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <type_traits>
#include <vector>

#include "narrow_sums.hpp"
#include "xreduce/backend/ops.hpp"

namespace xreduce::detail {

//! A bool that is a whole object: what PerTask holds instead of a bit.
struct WholeBool {
  bool value = false;
  WholeBool() = default;
  WholeBool(bool v) : value(v) {}  // NOLINT: converts both ways, as the bool it stands for
  operator bool() const { return value; }
};

//! One value per task of a parallel loop: a std::vector, except that vector<bool> packs bits, and
//! tasks writing neighbouring ones would race; bools are held whole.
template <class T>
using PerTask = std::vector<std::conditional_t<std::is_same_v<T, bool>, WholeBool, T>>;

inline constexpr std::size_t kLanes = 16;
inline constexpr std::size_t kBlock = 256;

using ops::is_nan;
using ops::wide_t;

//! An accumulation policy over an op of the table (xreduce/backend/ops.hpp): `leaf` is the type
//! lanes accumulate in within one leaf, `acc` the op's, which leaves are combined in; `combine`
//! works on both, and `lift` makes an element a leaf value.
template <class T>
struct SumPolicy {
  using Op = ops::Sum<T>;
  using acc = typename Op::acc_t;
  // f32 sums a leaf in float lanes; the 8- and 16-bit types and bools in leaf_sum (narrow_sums.hpp).
  using leaf = std::conditional_t<std::is_same_v<T, float>, float, acc>;
  template <class A>
  static constexpr A identity() { return A(0); }
  static constexpr acc identity() { return Op::identity(); }
  template <class A>
  static A combine(A a, A b) { return a + b; }
  template <class L>
  static L lift(T x) { return static_cast<L>(x); }
};

//! Sums of squares (for norms and variances): squared in the accumulation type (exact for f32
//! in double; integers modulo 2^64, like their sums), never in float lanes.
template <class T>
struct SquaresPolicy {
  using Op = ops::SumOfSquares<T>;
  using acc = typename Op::acc_t;
  using leaf = acc;
  template <class A>
  static constexpr A identity() { return A(0); }
  static constexpr acc identity() { return Op::identity(); }
  template <class A>
  static A combine(A a, A b) { return a + b; }
  template <class L>
  static L lift(T x) { return static_cast<L>(x) * static_cast<L>(x); }
};

template <class T>
struct ProdPolicy {
  using Op = ops::Prod<T>;
  using acc = typename Op::acc_t;
  using leaf = acc;  // products keep double lanes: float lanes would overflow or vanish early
  template <class A>
  static constexpr A identity() { return A(1); }
  static constexpr acc identity() { return Op::identity(); }
  template <class A>
  static A combine(A a, A b) { return a * b; }
  template <class L>
  static L lift(T x) { return static_cast<L>(x); }
};

//! One leaf: n <= kBlock elements into kLanes accumulators, combined pairwise.
template <class P, class T>
typename P::acc reduce_leaf(const T* x, std::size_t n) {
  if constexpr (std::is_same_v<P, SumPolicy<T>> && has_leaf_sum<T>)
    return static_cast<typename P::acc>(leaf_sum(x, n));  // signed sums: two's complement, modulo 2^64
  using L = typename P::leaf;
  L lane[kLanes];
  for (std::size_t j = 0; j < kLanes; ++j) lane[j] = P::template identity<L>();
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (std::size_t j = 0; j < kLanes; ++j) lane[j] = P::combine(lane[j], P::template lift<L>(x[i + j]));
  for (std::size_t j = 0; i < n; ++i, ++j) lane[j] = P::combine(lane[j], P::template lift<L>(x[i]));
  for (std::size_t w = kLanes / 2; w > 0; w /= 2)
    for (std::size_t j = 0; j < w; ++j) lane[j] = P::combine(lane[j], lane[j + w]);
  return static_cast<typename P::acc>(lane[0]);
}

//! Pairwise combination of a sequence of partial results produced one at a time: stack[k]
//! holds the combination of 2^k consecutive leaves, merged like the carries of a binary counter.
template <class P>
class PairwiseStack {
 public:
  void push(typename P::acc v) {
    ++count_;
    for (std::uint64_t c = count_; (c & 1) == 0; c >>= 1) v = P::combine(stack_[--top_], v);
    stack_[top_++] = v;
  }
  typename P::acc result() const {
    if (top_ == 0) return P::identity();
    typename P::acc r = stack_[top_ - 1];
    for (int k = top_ - 2; k >= 0; --k) r = P::combine(stack_[k], r);
    return r;
  }

 private:
  typename P::acc stack_[65];
  int top_ = 0;
  std::uint64_t count_ = 0;
};

//! Sum or product of x[0..n) in the accumulation type of P.
template <class P, class T>
typename P::acc reduce_pairwise(const T* x, std::size_t n) {
  // Sums of the narrow integers and bools are exact (modulo 2^64) in any grouping: one leaf_sum
  // over the whole run, without a leaf's fixed cost every 256 elements, which held one core to
  // 70% of its read rate on 8- and 16-bit data.
  if constexpr (std::is_same_v<P, SumPolicy<T>> && has_leaf_sum<T> && !is_float_v<T>)
    return static_cast<typename P::acc>(leaf_sum(x, n));
  // f16 and bf16 sums: leaves of twice kBlock in 32 float lanes (narrow_sums.hpp, kFloat16Lanes),
  // the same 16 additions a lane as an f32 leaf, for half the leaves' fixed cost.
  constexpr std::size_t leaf = std::is_same_v<P, SumPolicy<T>> && is_float16_v<T> ? kBlock * kFloat16Lanes / kLanes : kBlock;
  PairwiseStack<P> stack;
  for (std::size_t i = 0; i < n; i += leaf) stack.push(reduce_leaf<P>(x + i, n - i < leaf ? n - i : leaf));
  return stack.result();
}

//! Combines already-reduced partials (one per chunk) in the same pairwise way.
template <class P>
typename P::acc combine_pairwise(std::span<const typename P::acc> partials) {
  PairwiseStack<P> stack;
  for (auto v : partials) stack.push(v);
  return stack.result();
}

//! Partials combined with the table's operator F, in the order pushed: a fold for the ops whose
//! partials need no tree (extremes, argmin/argmax), beside PairwiseStack for sums.
template <class F>
struct Running {
  typename F::acc_t a = F::identity();
  void push(const typename F::acc_t& v) { a = F{}(a, v); }
  typename F::acc_t result() const { return a; }
};

//! A min or max accumulated one element at a time: a running value and a NaN flag apart, so that
//! each element costs one compare; result() is ops::Extreme's partial (NaN if any element was).
template <bool kMax, class T>
struct RunningExtreme {
  T value = ops::extreme_identity<T, kMax>();
  bool nan = false;
  void add(T x) {
    nan |= is_nan(x);
    if constexpr (kMax) value = value < x ? x : value;
    else value = x < value ? x : value;
  }
  T result() const {
    if constexpr (is_float_v<T>)
      if (nan) return std::numeric_limits<T>::quiet_NaN();
    return value;
  }
};

//! 16 bytes of T as one vector (GCC's and Clang's vector extensions: SSE2 on x86-64, NEON on
//! Arm), for the kernels the compilers do not vectorise on their own. A specialisation per type:
//! GCC drops the attribute on a dependent type.
template <class T>
struct Vector16;
#define XREDUCE_VECTOR16(T) \
  template <>               \
  struct Vector16<T> {      \
    typedef T type __attribute__((vector_size(16))); \
  };
XREDUCE_VECTOR16(float)
XREDUCE_VECTOR16(double)
XREDUCE_VECTOR16(std::int32_t)
XREDUCE_VECTOR16(std::int64_t)
XREDUCE_VECTOR16(std::uint32_t)
XREDUCE_VECTOR16(std::uint64_t)
XREDUCE_VECTOR16(std::int8_t)
XREDUCE_VECTOR16(std::uint8_t)
XREDUCE_VECTOR16(std::int16_t)
XREDUCE_VECTOR16(std::uint16_t)
#undef XREDUCE_VECTOR16

//! How many 16-bit floats extreme() converts to float at a time: a block that stays in L1.
inline constexpr std::size_t kConvertBlock = 512;

template <bool kMax, class T>
T extreme_of_vectors(const T* x, std::size_t n);

//! Minimum or maximum of x[0..n), n >= 1, as ops::Extreme has it: NaN if any element is NaN.
template <bool kMax, class T>
T extreme(const T* x, std::size_t n) {
  if constexpr (std::is_same_v<T, bool>) {
    // A bool is a byte, 0 or 1: the byte kernel's min is `all`, its max `any`.
    return extreme<kMax>(reinterpret_cast<const std::uint8_t*>(x), n) != 0;
  } else if constexpr (is_float16_v<T>) {
    // Blocks widened to float (exact, and it keeps the order, ±0 and NaN), then the float kernel;
    // the extreme converts back exactly, being one of the elements.
    float wide[kConvertBlock];
    RunningExtreme<kMax, float> r;
    for (std::size_t start = 0; start < n; start += kConvertBlock) {
      const std::size_t len = n - start < kConvertBlock ? n - start : kConvertBlock;
      for (std::size_t i = 0; i < len; ++i) wide[i] = static_cast<float>(x[start + i]);
      const float e = extreme<kMax>(wide, len);
      r.nan |= is_nan(e);
      r.add(e);
    }
    return T(r.result());
  } else {
    return extreme_of_vectors<kMax>(x, n);
  }
}

//! extreme() of the types that GCC's vectors hold.
template <bool kMax, class T>
T extreme_of_vectors(const T* x, std::size_t n) {
  // Vectors of `v < m ? v : m` (one minps/maxps) and of `v != v`, the NaN flags, tracked apart
  // so that a NaN cannot be lost. Written as plain lanes, neither GCC nor Clang vectorised the
  // select without -ffast-math: min and max ran at 40% of the sum's speed on one core.
  using V = typename Vector16<T>::type;
  using Mask = decltype(V{} < V{});
  constexpr std::size_t kWidth = 16 / sizeof(T), kVectors = kLanes / kWidth;
  V m[kVectors];
  Mask nan[kVectors] = {};
  for (std::size_t k = 0; k < kVectors; ++k) m[k] = V{} + x[0];
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (std::size_t k = 0; k < kVectors; ++k) {
      V v;
      std::memcpy(&v, x + i + k * kWidth, sizeof v);
      nan[k] |= v != v;
      if constexpr (kMax) m[k] = m[k] < v ? v : m[k];
      else m[k] = v < m[k] ? v : m[k];
    }
  RunningExtreme<kMax, T> r;
  for (std::size_t k = 0; k < kVectors; ++k)
    for (std::size_t j = 0; j < kWidth; ++j) {
      r.nan |= nan[k][j] != 0;
      r.add(m[k][j]);
    }
  for (; i < n; ++i) r.add(x[i]);
  return r.result();
}

//! argmin/argmax of x[0..n), n >= 1, indices offset by `base`. Per block: find the extreme with
//! the vector kernel, then its first position, so the scan for the index touches cached data.
template <bool kMax, class T>
ops::ArgPair<T> arg_extreme(const T* x, std::size_t n, std::uint64_t base) {
  constexpr std::size_t kArgBlock = 4096;
  constexpr ops::Arg<T, kMax> combine;
  ops::ArgPair<T> best{x[0], base};
  for (std::size_t start = 0; start < n; start += kArgBlock) {
    std::size_t len = n - start < kArgBlock ? n - start : kArgBlock;
    const T* b = x + start;
    const T e = extreme<kMax>(b, len);
    // The scan for the index only where the block holds a new extreme: a later block's equal
    // one loses to the earlier index anyway. (Scanning every block cost as much as the search.)
    if (start > 0 && !is_nan(e) && !(kMax ? best.value < e : e < best.value)) continue;
    std::size_t k = 0;
    if (is_nan(e)) {
      while (!is_nan(b[k])) ++k;
    } else {
      while (!(b[k] == e)) ++k;
    }
    best = combine(best, ops::ArgPair<T>{b[k], base + start + k});
    if (is_nan(best.value)) break;  // nothing later can win
  }
  return best;
}

}  // namespace xreduce::detail
