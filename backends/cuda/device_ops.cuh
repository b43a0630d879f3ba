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

#include "xreduce/detail/block_reduce.cuh"
#include "xreduce/request.hpp"
#include "xreduce/types.hpp"

namespace xreduce::cuda {

using index_t = unsigned long long;

template <class T>
__host__ __device__ inline bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>) return x != x;
  else return false;
}

//! Sums and products: floats in double, integers in uint64 (exact modulo 2^64).
template <class T>
using wide_t = std::conditional_t<std::is_floating_point_v<T>, double, unsigned long long>;

template <class T>
struct SumOp {
  using In = T;
  using acc_t = wide_t<T>;
  static constexpr Op op = Op::sum;
  //! The elements of one 16-byte load may be added in T first (f32: three float additions, then
  //! one conversion instead of four): a bound of 3 eps(f32) per group, far inside the tolerance.
  static constexpr bool group_in_element_type = std::is_same_v<T, float>;
  __host__ __device__ acc_t identity() const { return acc_t(0); }
  __host__ __device__ acc_t lift(T x, index_t) const { return static_cast<acc_t>(x); }
  __host__ __device__ acc_t operator()(acc_t a, acc_t b) const { return a + b; }
};

template <class T>
struct ProdOp {
  using In = T;
  using acc_t = wide_t<T>;
  static constexpr Op op = Op::prod;
  __host__ __device__ acc_t identity() const { return acc_t(1); }
  __host__ __device__ acc_t lift(T x, index_t) const { return static_cast<acc_t>(x); }
  __host__ __device__ acc_t operator()(acc_t a, acc_t b) const { return a * b; }
};

template <class T, bool kMax>
__host__ __device__ constexpr T extreme_identity() {
  if constexpr (std::is_floating_point_v<T>)
    return kMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
  else return kMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
}

//! min/max: NaN is absorbing, so the result is NaN whatever the order (fminf would drop it,
//! a bare `<` would keep or drop it depending on where it sits).
template <class T, bool kMax>
struct ExtremeOp {
  using In = T;
  using acc_t = T;
  static constexpr Op op = kMax ? Op::max : Op::min;
  __host__ __device__ acc_t identity() const { return extreme_identity<T, kMax>(); }
  __host__ __device__ acc_t lift(T x, index_t) const { return x; }
  __host__ __device__ acc_t operator()(acc_t a, acc_t b) const {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
    if constexpr (kMax) return a < b ? b : a;
    else return b < a ? b : a;
  }
};

template <class T>
struct ArgPair {
  T value;
  index_t index;
};

//! argmin/argmax: the order is (NaN first, then by value, then by lower index), a total order,
//! so any tree of combinations picks the same element: the first NaN, else the lowest index
//! among equal extremes.
template <class T, bool kMax>
struct ArgOp {
  using In = T;
  using acc_t = ArgPair<T>;
  static constexpr Op op = kMax ? Op::argmax : Op::argmin;
  __host__ __device__ acc_t identity() const { return {extreme_identity<T, kMax>(), ~index_t{0}}; }
  __host__ __device__ acc_t lift(T x, index_t i) const { return {x, i}; }
  __host__ __device__ acc_t operator()(acc_t a, acc_t b) const {
    const bool an = is_nan(a.value), bn = is_nan(b.value);
    if (an || bn) {
      if (an && bn) return a.index < b.index ? a : b;
      return an ? a : b;
    }
    const bool b_better = kMax ? a.value < b.value : b.value < a.value;
    const bool a_better = kMax ? b.value < a.value : a.value < b.value;
    if (b_better) return b;
    if (a_better) return a;
    return a.index <= b.index ? a : b;
  }
};

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
template <class T, class Fn>
decltype(auto) visit_op(Op op, Fn&& fn) {
  switch (op) {
    case Op::sum: return fn(SumOp<T>{});
    case Op::prod: return fn(ProdOp<T>{});
    case Op::min: return fn(ExtremeOp<T, false>{});
    case Op::max: return fn(ExtremeOp<T, true>{});
    case Op::argmin: return fn(ArgOp<T, false>{});
    case Op::argmax: break;
  }
  return fn(ArgOp<T, true>{});
}

template <class F>
constexpr bool is_arg_op = F::op == Op::argmin || F::op == Op::argmax;

//! The request's result from the final accumulator: sums and products narrowed to the result
//! type (one rounding, at the very end), extremes as they are.
template <class F>
Result result_of(const typename F::acc_t& a) {
  using T = typename F::In;
  if constexpr (is_arg_op<F>) {
    return Result{Scalar(a.value), a.index, {}};
  } else if constexpr (F::op == Op::sum || F::op == Op::prod) {
    if constexpr (std::is_floating_point_v<T>) return Result{Scalar(static_cast<T>(a)), {}, {}};
    else if constexpr (std::is_signed_v<T>) return Result{Scalar(static_cast<std::int64_t>(a)), {}, {}};
    else return Result{Scalar(static_cast<std::uint64_t>(a)), {}, {}};
  } else {
    return Result{Scalar(a), {}, {}};
  }
}

template <class A>
inline constexpr bool is_stats_acc = false;
template <class T>
inline constexpr bool is_stats_acc<StatsAcc<T>> = true;

//! Warp shuffle of any acc_t: a value-index pair or the stats field by field (their padding
//! need not cross).
template <class A>
__device__ inline A shfl_down(A v, int offset) {
  if constexpr (std::is_arithmetic_v<A>) {
    return xreduce::detail::gpu::shfl_down(v, offset);
  } else if constexpr (is_stats_acc<A>) {
    return {shfl_down(v.sum, offset), shfl_down(v.squares, offset), shfl_down(v.lo, offset), shfl_down(v.hi, offset)};
  } else {
    A r;
    r.value = xreduce::detail::gpu::shfl_down(v.value, offset);
    r.index = xreduce::detail::gpu::shfl_down(v.index, offset);
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
//! overload for `long` (int64_t on Linux), so scalars go through an unsigned type of their size.
template <class A>
__device__ inline A load_cg(const A* p) {
  if constexpr (std::is_arithmetic_v<A>) {
    using Bits = std::conditional_t<sizeof(A) == 4, unsigned int, unsigned long long>;
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
