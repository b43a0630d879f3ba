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

//! Warp shuffle of any acc_t: a value-index pair field by field (its padding need not cross).
template <class A>
__device__ inline A shfl_down(A v, int offset) {
  if constexpr (std::is_arithmetic_v<A>) {
    return xreduce::detail::gpu::shfl_down(v, offset);
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
