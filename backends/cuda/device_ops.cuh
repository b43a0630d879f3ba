#pragma once
// The operations on the device, as policies the kernels are templated on (CUB's style: the
// kernels know nothing of sum or max). Each policy says what an element lifts to (`acc_t`,
// wide for sums and products, a value-index pair for argmin/argmax), the identity, and the
// combination, which is associative and commutative on acc_t, NaN rules included.

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "xreduce/backend/ops.hpp"
#include "xreduce/backend/part_fold.hpp"
#include "xreduce/backend/block_reduce.cuh"
#include "xreduce/request.hpp"
#include "xreduce/types.hpp"

namespace xreduce::cuda {

// The ops are the table's (xreduce/backend/ops.hpp), under the names the kernels use.
using ops::ArgPair;
using ops::extreme_identity;
using ops::index_t;
using ops::is_nan;
using ops::wide_t;
template <class T>
using SumOp = ops::Sum<T>;
template <class T>
using ProdOp = ops::Prod<T>;
template <class T, bool kMax>
using ExtremeOp = ops::Extreme<T, kMax>;
template <class T, bool kMax>
using ArgOp = ops::Arg<T, kMax>;

//! Several ops in one pass (Request::ops): the sum, the sum of squares, and the minimum and the
//! maximum with their indices, of every element, whatever subset was asked for (the subset only
//! decides what is written: one kernel per element type, not one per subset). The extremes are
//! argmin/argmax pairs, so min and max follow the same NaN rule (a NaN is the result).
template <class T>
struct StatsAcc {
  wide_t<T> sum, squares;
  ArgPair<T> lo, hi;
};

template <class T>
struct StatsOp {
  using In = T;
  using acc_t = StatsAcc<T>;
  //! Not an op of its own: `sum` only so that code asking F::op of any policy compiles; the
  //! paths that take this policy never branch on it.
  static constexpr Op op = Op::sum;
  using Sum = SumOp<T>;
  using Lo = ArgOp<T, false>;
  using Hi = ArgOp<T, true>;
  __host__ __device__ acc_t identity() const { return {0, 0, Lo{}.identity(), Hi{}.identity()}; }
  __host__ __device__ acc_t lift(T x, index_t i) const {
    const wide_t<T> w = static_cast<wide_t<T>>(x);
    return {w, w * w, {x, i}, {x, i}};
  }
  __host__ __device__ acc_t operator()(const acc_t& a, const acc_t& b) const {
    return {a.sum + b.sum, a.squares + b.squares, Lo{}(a.lo, b.lo), Hi{}(a.hi, b.hi)};
  }
};

template <class F>
inline constexpr bool is_stats_op = false;
template <class T>
inline constexpr bool is_stats_op<StatsOp<T>> = true;

//! Several ops with mean, var or std among them (of floats): StatsOp's accumulator beside the
//! moments that var's kernel folds (statistics.cuh: runs around a shift, then Chan's update), so
//! that `--ops mean,std,min,max` is one read of the data. The mean is read off the moments'
//! count and sum, var and std off their m2, each finished with the request's correction, as
//! the CPU's several ops do when var or std is named.
template <class T>
struct StatsMomentsAcc {
  StatsAcc<T> stats;
  ops::Moments moments;
};

template <class T>
struct StatsMomentsOp {
  using In = T;
  using acc_t = StatsMomentsAcc<T>;
  static constexpr Op op = Op::sum;  // as StatsOp's: not an op of its own
  using Stats = StatsOp<T>;
  using Moments = ops::MomentsOp<T, Op::var>;
  __host__ __device__ acc_t identity() const { return {Stats{}.identity(), Moments::identity()}; }
  __host__ __device__ acc_t lift(T x, index_t i) const { return {Stats{}.lift(x, i), Moments::lift(x, i)}; }
  __host__ __device__ acc_t operator()(const acc_t& a, const acc_t& b) const {
    return {Stats{}(a.stats, b.stats), Moments{}(a.moments, b.moments)};
  }
};

//! The same operation over partial results (later passes of a multi-pass reduction).
template <class F>
struct PartialOp {
  using In = typename F::acc_t;
  using acc_t = typename F::acc_t;
  static constexpr Op op = F::op;
  F f;
  __host__ __device__ acc_t identity() const { return f.identity(); }
  __host__ __device__ acc_t lift(In x, index_t) const { return x; }
  __host__ __device__ acc_t operator()(acc_t a, acc_t b) const { return f(a, b); }
};
template <class F>
struct PartialOp<PartialOp<F>> : PartialOp<F> {};

template <class F>
struct partial_of {
  using type = PartialOp<F>;
};
template <class F>
struct partial_of<PartialOp<F>> {
  using type = PartialOp<F>;
};

//! A thread's running result over many elements (grid-stride loops). Double sums of f64 data are
//! compensated (Neumaier): a thread may add thousands of elements in sequence, and the plain
//! error bound grows with that count; compensated, it does not.
template <class F>
struct Accumulator {
  typename F::acc_t v;
  __device__ void init(const F& f) { v = f.identity(); }
  __device__ void add(const F& f, typename F::acc_t x) { v = f(v, x); }
  __device__ typename F::acc_t value(const F&) const { return v; }
};

template <>
struct Accumulator<SumOp<double>> {
  double s, c;
  __device__ void init(const SumOp<double>&) { s = c = 0; }
  __device__ void add(const SumOp<double>&, double x) {
    const double t = s + x;
    c += fabs(s) >= fabs(x) ? (s - t) + x : (x - t) + s;
    s = t;
  }
  // Once s is infinite or NaN the compensation is inf - inf: the plain sum is the answer.
  __device__ double value(const SumOp<double>&) const { return isfinite(s) ? s + c : s; }
};

//! A thread's running stats: f64 sums and sums of squares compensated, as SumOp<double>'s are.
template <class T>
struct Accumulator<StatsOp<T>> {
  Accumulator<SumOp<T>> sum, squares;
  ArgPair<T> lo, hi;
  __device__ void init(const StatsOp<T>&) {
    sum.init(SumOp<T>{}), squares.init(SumOp<T>{});
    lo = typename StatsOp<T>::Lo{}.identity(), hi = typename StatsOp<T>::Hi{}.identity();
  }
  __device__ void add(const StatsOp<T>&, const StatsAcc<T>& x) {
    sum.add(SumOp<T>{}, x.sum), squares.add(SumOp<T>{}, x.squares);
    lo = typename StatsOp<T>::Lo{}(lo, x.lo), hi = typename StatsOp<T>::Hi{}(hi, x.hi);
  }
  __device__ StatsAcc<T> value(const StatsOp<T>&) const { return {sum.value(SumOp<T>{}), squares.value(SumOp<T>{}), lo, hi}; }
};

//! The policy as CUB wants it: any mix of element and accumulator in, accumulator out.
template <class F>
struct MixedOp {
  F f;
  template <class A, class B>
  __device__ typename F::acc_t operator()(const A& a, const B& b) const {
    return f(static_cast<typename F::acc_t>(a), static_cast<typename F::acc_t>(b));
  }
};

//! Element i lifted with its index (argmin/argmax through CUB: made on the fly from a counting
//! iterator).
template <class F>
struct LiftAt {
  const typename F::In* x;
  F f;
  __device__ typename F::acc_t operator()(index_t i) const { return f.lift(x[i], i); }
};

//! Calls fn with the policy object of (T, op): from the run-time op to the compile-time policy.
//! The sum of squares has no kernels of its own here: it is one of several ops (StatsOp), and the
//! backends do not declare it alone.
template <class T, class Fn>
decltype(auto) visit_op(Op op, Fn&& fn) {
  if (op == Op::sumsq) throw Error(ErrorCode::internal, "the CUDA module has no kernel for the sum of squares alone");
  return ops::visit<T>(op, [&](auto f) -> decltype(auto) {
    if constexpr (std::is_same_v<decltype(f), ops::SumOfSquares<T>>) return fn(SumOp<T>{});  // not reached
    else return fn(f);
  });
}

template <class F>
constexpr bool is_arg_op = ops::has_index<F>;

//! The request's result from the final accumulator: sums and products narrowed to the result
//! type (one rounding, at the very end), extremes as they are.
using backend::result_of;

template <class A>
inline constexpr bool is_stats_acc = false;
template <class T>
inline constexpr bool is_stats_acc<StatsAcc<T>> = true;

template <class A>
inline constexpr bool is_stats_moments_acc = false;
template <class T>
inline constexpr bool is_stats_moments_acc<StatsMomentsAcc<T>> = true;

template <class A>
inline constexpr bool is_arg_pair = false;
template <class T>
inline constexpr bool is_arg_pair<ArgPair<T>> = true;

//! Warp shuffle of any acc_t: a value-index pair or the stats field by field (their padding
//! need not cross); a scalar (a 16-bit float too) in one shuffle.
template <class A>
__device__ inline A shfl_down(A v, int offset) {
  if constexpr (!is_arg_pair<A> && !is_stats_acc<A> && !is_stats_moments_acc<A>) {
    return xreduce::gpu::shfl_down(v, offset);
  } else if constexpr (is_stats_moments_acc<A>) {
    return {shfl_down(v.stats, offset), xreduce::gpu::shfl_down(v.moments, offset)};
  } else if constexpr (is_stats_acc<A>) {
    return {shfl_down(v.sum, offset), shfl_down(v.squares, offset), shfl_down(v.lo, offset), shfl_down(v.hi, offset)};
  } else {
    A r;
    r.value = xreduce::gpu::shfl_down(v.value, offset);
    r.index = xreduce::gpu::shfl_down(v.index, offset);
    return r;
  }
}
struct AccShuffle {
  template <class A>
  __device__ A operator()(const A& v, int offset) const {
    return shfl_down(v, offset);
  }
};

//! Load that bypasses L1 (partials written by other blocks of the same launch). __ldcg has no
//! overload for `long` (int64_t on Linux), so scalars (16-bit floats too) go through an unsigned
//! type of their size.
template <class A>
__device__ inline A load_cg(const A* p) {
  if constexpr (!is_arg_pair<A>) {
    static_assert(sizeof(A) == 1 || sizeof(A) == 2 || sizeof(A) == 4 || sizeof(A) == 8, "a scalar partial");
    using Bits = std::conditional_t<
        sizeof(A) == 1, unsigned char,
        std::conditional_t<sizeof(A) == 2, unsigned short, std::conditional_t<sizeof(A) == 4, unsigned int, unsigned long long>>>;
    Bits b = __ldcg(reinterpret_cast<const Bits*>(p));
    A r;
    memcpy(&r, &b, sizeof r);
    return r;
  } else {
    A r;
    r.value = load_cg(&p->value);
    r.index = __ldcg(&p->index);
    return r;
  }
}

}  // namespace xreduce::cuda
