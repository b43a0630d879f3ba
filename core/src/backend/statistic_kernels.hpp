#pragma once
// The CPU kernels of the statistics (mean, var, the norms, logsumexp, the nan* ops, ...): any op
// of the table's statistics (xreduce/backend/ops.hpp) over a run of elements, as a partial of
// the op, which the drivers fold and finish (host_segments.cpp, columns.cpp). The rules are the
// table's; what is this file's is how a run is accumulated:
//
// - the moments (mean, var, std): a run is summed around a shift, one of its own elements, in
//   sixteen lanes of double: n, the sum, and the sums of x - shift and of its square. No division
//   per element (Welford's update has one); the shift is an element, so the sum of squares of
//   the deviations loses at most log10(n) digits to cancellation, and runs are kept to kBlock
//   elements, then combined by Chan's update. Data of mean 1e4 and spread 1e-3 keeps its digits.
// - the ops that return an index: one element at a time, in order;
// - the rest: the sum kernels' lanes and pairwise tree over the op's own partial.

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "cpu_kernels.hpp"
#include "xreduce/backend/ops.hpp"

namespace xreduce::detail {

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

//! The moments of one leaf, n <= kBlock elements, around its first element kept.
template <class F, class T>
ops::Moments moments_leaf(const T* x, std::size_t n) {
  std::size_t first = 0;
  if constexpr (F::skip_nan)
    while (first < n && F::dropped(x[first])) ++first;
  if (first == n) return F::identity();
  const double shift = static_cast<double>(x[first]);
  double count[kLanes] = {}, sum[kLanes] = {}, s1[kLanes] = {}, s2[kLanes] = {};
  auto add = [&](std::size_t j, T e) {
    const double v = static_cast<double>(e);
    if constexpr (F::skip_nan) {  // branch-free: a NaN adds nothing and counts nothing
      const bool keep = v == v;
      const double d = keep ? v - shift : 0.0;
      count[j] += keep ? 1.0 : 0.0, sum[j] += keep ? v : 0.0, s1[j] += d, s2[j] += d * d;
    } else {
      const double d = v - shift;
      sum[j] += v, s1[j] += d, s2[j] += d * d;
    }
  };
  std::size_t i = first;
  for (; i + kLanes <= n; i += kLanes)
    for (std::size_t j = 0; j < kLanes; ++j) add(j, x[i + j]);
  for (std::size_t j = 0; i < n; ++i, ++j) add(j, x[i]);
  double c = 0, s = 0, d1 = 0, d2 = 0;
  for (std::size_t j = 0; j < kLanes; ++j) c += count[j], s += sum[j], d1 += s1[j], d2 += s2[j];
  if constexpr (!F::skip_nan) c = static_cast<double>(n - first);
  if (c == 0) return F::identity();
  return {c, s, d2 - d1 * d1 / c};
}

//! Statistic F of the run x[0..n), whose first element has index `first` in its result's
//! elements: the op's partial.
template <class F, class T>
typename F::acc_t statistic_run(const T* x, std::size_t n, std::uint64_t first) {
  using P = TablePolicy<F>;
  if constexpr (ops::has_index<F>) {
    typename F::acc_t a = F::identity();
    for (std::size_t i = 0; i < n; ++i) a = F{}(a, F::lift(x[i], first + i));
    return a;
  } else if constexpr (is_moments<F>) {
    if (n <= kBlock) return moments_leaf<F>(x, n);
    PairwiseStack<P> stack;
    for (std::size_t i = 0; i < n; i += kBlock) stack.push(moments_leaf<F>(x + i, n - i < kBlock ? n - i : kBlock));
    return stack.result();
  } else {
    return n <= kBlock ? reduce_leaf<P>(x, n) : reduce_pairwise<P>(x, n);
  }
}

}  // namespace xreduce::detail
