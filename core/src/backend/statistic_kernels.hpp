#pragma once
// The CPU kernels of the statistics (mean, var, the norms, logsumexp, the nan* ops, ...): any op
// of the table's statistics (xreduce/backend/ops.hpp) over a run of elements, as a partial of
// the op, which the drivers fold and finish (host_segments.cpp, columns.cpp). The rules are the
// table's; what is this file's is how a run is accumulated:
//
// - the moments (mean, var, std): a run is summed around a shift, one of its own elements, in
//   eight lanes of double: the sums of x - shift and (var, std) of its square. No division
//   per element (Welford's update has one); the shift is an element, so the sum of squares of
//   the deviations loses at most log10(n) digits to cancellation, and runs are kept to kBlock
//   elements, then combined by Chan's update. Data of mean 1e4 and spread 1e-3 keeps its digits.
// - logsumexp: a leaf's maximum first, then the sum of exp(x - max): one exponential an element;
// - norm2: three lanes of scaled squares picked by selects (of f32 and narrower, one);
// - nanmin, nanmax, nanargmin, nanargmax: the vector min/max kernel's way, NaN passed over;
// - the other ops that return an index: one element at a time, in order;
// - the rest: the sum kernels' lanes and pairwise tree over the op's own partial.

#include <cmath>
#include <cstddef>
#include <cstring>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "cpu_kernels.hpp"
#include "xreduce/backend/ops.hpp"

namespace xreduce::detail {

//! The type op F of elements T writes as a wide result (Features::wide: another result type was
//! asked for, which the core rounds to): double for a float result, whatever the element type
//! (the 16-bit floats' too), else the op's own result type.
template <class T, class F>
using wide_result_t = std::conditional_t<is_float_v<T> && is_float_v<typename F::result_t>, double, typename F::result_t>;

//! Writes op F's partial `v` as result `at` of `out`: of the op's result type, or, `wide`, of
//! wide_result_t's. Which one is a branch here, not a second instantiation of the driver that
//! calls it: a copy of every float type's drivers for wide results was a fifth of the
//! statistics' code in the CPU kernel tables (columns.cpp, host_segments.cpp).
template <class T, class F>
void store_result(void* out, std::size_t at, const typename F::acc_t& v, bool wide, ops::FinishArgs args = {}) {
  using Result = typename F::result_t;
  using Wide = wide_result_t<T, F>;
  if constexpr (!std::is_same_v<Wide, Result>) {
    if (wide) {
      static_cast<Wide*>(out)[at] = ops::finish_as<Wide, F>(v, args);
      return;
    }
  }
  static_cast<Result*>(out)[at] = ops::finish_as<Result, F>(v, args);
}

template <class F>
inline constexpr bool is_moments = std::is_same_v<typename F::acc_t, ops::Moments>;

//! A statistic of the table as an accumulation policy of the sum kernels (reduce_leaf,
//! PairwiseStack): lanes and partials both of the op's own partial type.
template <class F>
struct TablePolicy {
  using Op = F;
  using T = typename F::In;
  using acc = typename F::acc_t;
  using leaf = acc;
  template <class A>
  static constexpr A identity() { return F::identity(); }
  static constexpr acc identity() { return F::identity(); }
  template <class A>
  static A combine(const A& a, const A& b) { return F{}(a, b); }
  template <class L>
  static L lift(T x) { return F::lift(x, 0); }
};

//! One element at a time (a column's accumulator): the op's own update, or for the moments the
//! shifted sums around the first element kept.
template <class F>
struct Accumulate {
  typename F::acc_t v = F::identity();
  void add(typename F::In x, std::uint64_t i) { v = F{}(v, F::lift(x, i)); }
  typename F::acc_t result() const { return v; }
};
template <class T, Op kOp>
struct Accumulate<ops::MomentsOp<T, kOp>> {
  using F = ops::MomentsOp<T, kOp>;
  double shift = 0, n = 0, sum = 0, s1 = 0, s2 = 0;
  void add(T x, std::uint64_t) {
    if (F::dropped(x)) return;
    const double v = static_cast<double>(x);
    if (n == 0) shift = v;
    const double d = v - shift;
    n += 1, sum += v, s1 += d, s2 += d * d;
  }
  ops::Moments result() const { return n == 0 ? F::identity() : ops::Moments{n, sum, s2 - s1 * s1 / n}; }
};

//! The moments of one leaf, n <= kBlock elements, around its first element kept: the sums of
//! d = x - shift and (var, std) of d^2; the sum of x is n shift + sum d (off by eps(f64) max|x|
//! at most, within the mean's bound). Eight lanes: their accumulators and temporaries fit the
//! sixteen vector registers of baseline x86-64 (sixteen lanes spilled, at 60% of the speed).
template <class F, class T>
[[gnu::always_inline]] inline ops::Moments moments_leaf_lanes(const T* x, std::size_t n) {
  constexpr bool kSquares = without_nan(F::op) != Op::mean;
  constexpr std::size_t kMomentLanes = 8;
  std::size_t first = 0;
  if constexpr (F::skip_nan)
    while (first < n && F::dropped(x[first])) ++first;
  if (first == n) return F::identity();
  // An infinite shift would make inf - inf of the other infinities: around 0 then (plain sums).
  const double shift = std::isfinite(static_cast<double>(x[first])) ? static_cast<double>(x[first]) : 0.0;
  double count[kMomentLanes] = {}, s1[kMomentLanes] = {}, s2[kMomentLanes] = {};
  auto add = [&](std::size_t j, T e) {
    const double v = static_cast<double>(e);
    double d = v - shift;
    if constexpr (F::skip_nan) {  // branch-free: a NaN adds nothing and counts nothing
      const bool keep = v == v;
      d = keep ? d : 0.0;
      count[j] += keep ? 1.0 : 0.0;
    }
    s1[j] += d;
    if constexpr (kSquares) s2[j] += d * d;
  };
  std::size_t i = first;
  for (; i + kMomentLanes <= n; i += kMomentLanes)
    for (std::size_t j = 0; j < kMomentLanes; ++j) add(j, x[i + j]);
  for (std::size_t j = 0; i < n; ++i, ++j) add(j, x[i]);
  double c = 0, d1 = 0, d2 = 0;
  for (std::size_t j = 0; j < kMomentLanes; ++j) c += count[j], d1 += s1[j], d2 += s2[j];
  if constexpr (!F::skip_nan) c = static_cast<double>(n - first);
  if (c == 0) return F::identity();
  // A NaN or an infinity among them: d1 is NaN (or inf), and so is the sum, as it should be.
  return {c, c * shift + d1, kSquares ? d2 - d1 * d1 / c : 0.0};
}

//! The same lanes in AVX2's four-double vectors, where the processor has them: twice baseline
//! x86-64's two, which held 16 threads of an H200 host at 74% of the read probe (var, f32).
//! Without FMA, so that both round alike: the same bits on every x86-64.
#if defined(__x86_64__) && defined(__GNUC__)
template <class F, class T>
__attribute__((target("avx2"))) ops::Moments moments_leaf_avx2(const T* x, std::size_t n) {
  return moments_leaf_lanes<F>(x, n);
}
#endif

template <class F, class T>
ops::Moments moments_leaf(const T* x, std::size_t n) {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) return moments_leaf_avx2<F>(x, n);
#endif
  return moments_leaf_lanes<F>(x, n);
}

template <class F>
inline constexpr bool is_logsumexp = std::is_same_v<typename F::acc_t, ops::LogSumExp>;
template <class F>
inline constexpr bool is_norm2 = std::is_same_v<typename F::acc_t, ops::ScaledSquares>;

//! logsumexp of one leaf in two passes over it (in the cache): its maximum, then the sum of
//! exp(x - max), one exponential an element (the table's update takes two).
template <class F, class T>
ops::LogSumExp logsumexp_leaf(const T* x, std::size_t n) {
  double m = -std::numeric_limits<double>::infinity();
  bool nan = false;
  for (std::size_t i = 0; i < n; ++i) {
    const double v = static_cast<double>(x[i]);
    nan = nan || v != v;
    m = v > m ? v : m;
  }
  if (nan) return {std::numeric_limits<double>::quiet_NaN(), 1};
  if (m == std::numeric_limits<double>::infinity() || m == -std::numeric_limits<double>::infinity()) return {m, m > 0 ? 1.0 : 0.0};
  double lane[kLanes] = {};
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (std::size_t j = 0; j < kLanes; ++j) lane[j] += std::exp(static_cast<double>(x[i + j]) - m);
  for (std::size_t j = 0; i < n; ++i, ++j) lane[j] += std::exp(static_cast<double>(x[i]) - m);
  double s = 0;
  for (double l : lane) s += l;
  return {m, s};
}

//! norm2 of one leaf: three sums of scaled squares, chosen per element by selects rather than
//! branches (the compiler keeps them in vector registers). Elements narrower than f64 (and
//! integers) are all of the medium range: their squares neither overflow nor vanish in double.
template <class F, class T>
ops::ScaledSquares norm2_leaf(const T* x, std::size_t n) {
  double small[kLanes] = {}, medium[kLanes] = {}, big[kLanes] = {};
  auto add = [&](std::size_t j, T e) {
    const double a = std::fabs(static_cast<double>(e));
    if constexpr (!std::is_same_v<T, double>) {
      medium[j] += a * a;
    } else {
      const bool is_big = a > F::tbig, is_small = a < F::tsml;
      const double bs = a * F::sbig, ss = a * F::ssml;
      big[j] += is_big ? bs * bs : 0.0;
      small[j] += is_small ? ss * ss : 0.0;
      medium[j] += is_big || is_small ? 0.0 : a * a;  // NaN: neither, so here
    }
  };
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (std::size_t j = 0; j < kLanes; ++j) add(j, x[i + j]);
  for (std::size_t j = 0; i < n; ++i, ++j) add(j, x[i]);
  ops::ScaledSquares r{0, 0, 0};
  for (std::size_t j = 0; j < kLanes; ++j) r.small += small[j], r.medium += medium[j], r.big += big[j];
  return r;
}

template <class F>
struct nan_extreme_of : std::false_type {};
template <class T, bool kMax>
struct nan_extreme_of<ops::NanExtremeOp<T, kMax>> : std::true_type {};
template <class T, bool kMax>
struct nan_extreme_of<ops::NanArgOp<T, kMax>> : std::true_type {};

//! nanmin / nanmax of x[0..n) as the table's partial: the extreme of the elements that are not
//! NaN, and whether there was one. Floats in vectors of `v > m ? v : m` (maxps: a NaN compares
//! false and is passed over), the 16-bit floats a block at a time widened to float; integers are
//! the plain extreme (none is NaN).
template <bool kMax, class T>
ops::SeenExtreme<T> nan_extreme(const T* x, std::size_t n) {
  if constexpr (!is_float_v<T>) {
    if (n == 0) return {ops::extreme_identity<T, kMax>(), false};
    return {extreme<kMax>(x, n), true};
  } else if constexpr (is_float16_v<T>) {
    float wide[kConvertBlock];
    ops::SeenExtreme<T> r{ops::extreme_identity<T, kMax>(), false};
    for (std::size_t start = 0; start < n; start += kConvertBlock) {
      const std::size_t len = n - start < kConvertBlock ? n - start : kConvertBlock;
      for (std::size_t i = 0; i < len; ++i) wide[i] = static_cast<float>(x[start + i]);
      const ops::SeenExtreme<float> e = nan_extreme<kMax>(wide, len);
      if (e.seen) r = ops::NanExtremeOp<T, kMax>{}(r, {T(e.value), true});  // exact: one of the elements
    }
    return r;
  } else {
    using V = typename Vector16<T>::type;
    using Mask = decltype(V{} < V{});
    constexpr std::size_t kWidth = 16 / sizeof(T), kVectors = kLanes / kWidth;
    V m[kVectors];
    Mask seen[kVectors] = {};
    for (std::size_t k = 0; k < kVectors; ++k) m[k] = V{} + ops::extreme_identity<T, kMax>();
    std::size_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
      for (std::size_t k = 0; k < kVectors; ++k) {
        V v;
        std::memcpy(&v, x + i + k * kWidth, sizeof v);
        seen[k] |= v == v;
        if constexpr (kMax) m[k] = v > m[k] ? v : m[k];
        else m[k] = v < m[k] ? v : m[k];
      }
    ops::SeenExtreme<T> r{ops::extreme_identity<T, kMax>(), false};
    constexpr ops::NanExtremeOp<T, kMax> combine;
    for (std::size_t k = 0; k < kVectors; ++k)
      for (std::size_t j = 0; j < kWidth; ++j) r = combine(r, {m[k][j], seen[k][j] != 0});
    for (; i < n; ++i) r = combine(r, ops::NanExtremeOp<T, kMax>::lift(x[i]));
    return r;
  }
}

//! nanargmin / nanargmax of x[0..n), indices from `base`: per block, its NaN-skipping extreme by
//! the vector kernel, then the first position of it, only where the block holds a new extreme.
template <bool kMax, class T>
ops::ArgPair<T> nan_arg_extreme(const T* x, std::size_t n, std::uint64_t base) {
  constexpr std::size_t kArgBlock = 4096;
  constexpr ops::NanArgOp<T, kMax> combine;
  ops::ArgPair<T> best = combine.identity();
  for (std::size_t start = 0; start < n; start += kArgBlock) {
    const std::size_t len = n - start < kArgBlock ? n - start : kArgBlock;
    const ops::SeenExtreme<T> e = nan_extreme<kMax>(x + start, len);
    if (!e.seen) continue;
    if (best.index != ops::no_element && !(kMax ? best.value < e.value : e.value < best.value)) continue;
    std::size_t k = 0;
    while (!(x[start + k] == e.value)) ++k;
    best = combine(best, ops::ArgPair<T>{x[start + k], base + start + k});
  }
  return best;
}

//! One leaf (n <= kBlock) of a statistic without an index.
template <class F, class T>
typename F::acc_t statistic_leaf(const T* x, std::size_t n) {
  if constexpr (is_moments<F>) return moments_leaf<F>(x, n);
  else if constexpr (is_logsumexp<F>) return logsumexp_leaf<F>(x, n);
  else if constexpr (is_norm2<F>) return norm2_leaf<F>(x, n);
  else if constexpr (nan_extreme_of<F>::value) return nan_extreme<F::op == Op::nanmax>(x, n);
  else return reduce_leaf<TablePolicy<F>>(x, n);
}

//! Statistic F of the run x[0..n), whose first element has index `first` in its result's
//! elements: the op's partial.
template <class F, class T>
typename F::acc_t statistic_run(const T* x, std::size_t n, std::uint64_t first) {
  using P = TablePolicy<F>;
  if constexpr (nan_extreme_of<F>::value && ops::has_index<F>) {
    return nan_arg_extreme<F::op == Op::nanargmax>(x, n, first);
  } else if constexpr (ops::has_index<F>) {
    typename F::acc_t a = F::identity();
    for (std::size_t i = 0; i < n; ++i) a = F{}(a, F::lift(x[i], first + i));
    return a;
  } else {
    if (n <= kBlock) return statistic_leaf<F>(x, n);
    PairwiseStack<P> stack;
    for (std::size_t i = 0; i < n; i += kBlock) stack.push(statistic_leaf<F>(x + i, n - i < kBlock ? n - i : kBlock));
    return stack.result();
  }
}

}  // namespace xreduce::detail
