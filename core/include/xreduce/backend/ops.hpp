#pragma once
//! For backend authors and for combines across threads, GPUs and ranks: what every op means, as
//! one table compiled for the host and for the GPU. Each op is a policy (CUB's style: a kernel
//! templated on it knows nothing of sums or maxima):
//!
//!   In        the element type
//!   acc_t     what an element lifts to and partials combine in: wide for sums and products, a
//!             value-index pair for argmin/argmax
//!   result_t  the result's type (result_dtype)
//!   identity()        the partial of no element
//!   lift(x, i)        element x at index i as a partial
//!   operator()(a, b)  combines two partials: associative and commutative, NaN and tie rules
//!                     included, so any tree of combinations over any split gives the same result
//!                     (for floating sums, up to rounding)
//!   finish(a)         the result of a partial
//!
//! Every engine (the CPU kernels, the CUDA kernels) and every combine of partials (PartFold, the
//! MPI and NCCL combine) takes its rules from here; an engine may accumulate differently within
//! one part (f32 lanes, compensated sums) but never decides a rule of its own.
//!
//! C++17, so that the CUDA module's sources compile it.

#include <cstdint>
#include <limits>
#include <type_traits>

#include "xreduce/types.hpp"

#if defined(__CUDACC__)
#define XREDUCE_HOST_DEVICE __host__ __device__
#else
#define XREDUCE_HOST_DEVICE
#endif

namespace xreduce::ops {

//! An element's index: within the array, or within the reduced axes of an axis reduction.
using index_t = unsigned long long;
//! The index of no element (an empty segment's argmin/argmax; the identity's).
inline constexpr index_t no_element = ~index_t{0};

template <class T>
XREDUCE_HOST_DEVICE constexpr bool is_nan(T x) {
  if constexpr (is_float_v<T>) return x != x;
  else return false;
}

//! Sums and products of floats (f16 and bf16 too) accumulate in double, of integers and bools in
//! 64 bits (exact modulo 2^64).
template <class T>
using wide_t = std::conditional_t<is_float_v<T>, double, unsigned long long>;
//! Their result type: floats keep their type, integers widen to int64 / uint64, bools count in uint64.
template <class T>
using widened_t = std::conditional_t<is_float_v<T>, T,
                                     std::conditional_t<std::is_signed_v<T>, std::int64_t, std::uint64_t>>;

//! A wide partial as its result: rounded once to the float type, or the integer's bits.
template <class T>
XREDUCE_HOST_DEVICE constexpr widened_t<T> narrow(wide_t<T> a) {
  return static_cast<widened_t<T>>(a);  // integers: two's complement, the same bits
}

//! What the ops that accumulate in wide_t share: types, and a result narrowed once, at the end.
template <class T, Op kOp>
struct Widening {
  using In = T;
  using acc_t = wide_t<T>;
  using result_t = widened_t<T>;
  static constexpr Op op = kOp;
  XREDUCE_HOST_DEVICE static constexpr result_t finish(acc_t a) { return narrow<T>(a); }
};

template <class T>
struct Sum : Widening<T, Op::sum> {
  using acc_t = wide_t<T>;
  XREDUCE_HOST_DEVICE static constexpr acc_t identity() { return acc_t(0); }
  XREDUCE_HOST_DEVICE static constexpr acc_t lift(T x, index_t = 0) { return static_cast<acc_t>(x); }
  XREDUCE_HOST_DEVICE constexpr acc_t operator()(acc_t a, acc_t b) const { return a + b; }
};

//! The sum of squares (norms, variances): each element squared in the wide type (exact for f32
//! in double; integers modulo 2^64), then summed.
template <class T>
struct SumOfSquares : Widening<T, Op::sumsq> {
  using acc_t = wide_t<T>;
  XREDUCE_HOST_DEVICE static constexpr acc_t identity() { return acc_t(0); }
  XREDUCE_HOST_DEVICE static constexpr acc_t lift(T x, index_t = 0) { return static_cast<acc_t>(x) * static_cast<acc_t>(x); }
  XREDUCE_HOST_DEVICE constexpr acc_t operator()(acc_t a, acc_t b) const { return a + b; }
};

template <class T>
struct Prod : Widening<T, Op::prod> {
  using acc_t = wide_t<T>;
  XREDUCE_HOST_DEVICE static constexpr acc_t identity() { return acc_t(1); }
  XREDUCE_HOST_DEVICE static constexpr acc_t lift(T x, index_t = 0) { return static_cast<acc_t>(x); }
  XREDUCE_HOST_DEVICE constexpr acc_t operator()(acc_t a, acc_t b) const { return a * b; }
};

//! What min (max) of nothing starts from: +inf (-inf) for floats, the type's max (lowest) for
//! integers. An empty segment's min or max is this.
template <class T, bool kMax>
XREDUCE_HOST_DEVICE constexpr T extreme_identity() {
  if constexpr (is_float16_v<T>)
    return T::from_bits(static_cast<std::uint16_t>(std::numeric_limits<T>::infinity().bits | (kMax ? 0x8000u : 0u)));
  else if constexpr (is_float_v<T>)
    return kMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
  else return kMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
}

//! min / max: NaN is absorbing, so the result is NaN if any element is, whatever the order (fmin
//! would drop it; a bare `<` would keep or drop it depending on where it sits).
template <class T, bool kMax>
struct Extreme {
  using In = T;
  using acc_t = T;
  using result_t = T;
  static constexpr Op op = kMax ? Op::max : Op::min;
  XREDUCE_HOST_DEVICE static constexpr acc_t identity() { return extreme_identity<T, kMax>(); }
  XREDUCE_HOST_DEVICE static constexpr acc_t lift(T x, index_t = 0) { return x; }
  XREDUCE_HOST_DEVICE constexpr acc_t operator()(acc_t a, acc_t b) const {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
    if constexpr (kMax) return a < b ? b : a;
    else return b < a ? b : a;
  }
  XREDUCE_HOST_DEVICE static constexpr result_t finish(acc_t a) { return a; }
};
template <class T>
using Min = Extreme<T, false>;
template <class T>
using Max = Extreme<T, true>;

//! An extreme and where it is.
template <class T>
struct ArgPair {
  T value;
  index_t index;
};

//! argmin / argmax: the first NaN if any element is NaN, else the extreme with the lowest index.
//! Written as a total order on (value, index): NaN before any number, then by value, then by
//! index. So the combination is commutative as well as associative: partials combine in any
//! order and any tree (threads, blocks, GPUs, ranks) and still pick the same element.
template <class T, bool kMax>
struct Arg {
  using In = T;
  using acc_t = ArgPair<T>;
  using result_t = T;
  static constexpr Op op = kMax ? Op::argmax : Op::argmin;
  XREDUCE_HOST_DEVICE static constexpr acc_t identity() { return {extreme_identity<T, kMax>(), no_element}; }
  XREDUCE_HOST_DEVICE static constexpr acc_t lift(T x, index_t i) { return {x, i}; }
  XREDUCE_HOST_DEVICE constexpr acc_t operator()(acc_t a, acc_t b) const {
    const bool an = is_nan(a.value), bn = is_nan(b.value);
    if (an || bn) {
      if (an && bn) return a.index <= b.index ? a : b;
      return an ? a : b;
    }
    const bool b_better = kMax ? a.value < b.value : b.value < a.value;
    const bool a_better = kMax ? b.value < a.value : a.value < b.value;
    if (b_better) return b;
    if (a_better) return a;
    return a.index <= b.index ? a : b;
  }
  XREDUCE_HOST_DEVICE static constexpr result_t finish(acc_t a) { return a.value; }
};
template <class T>
using ArgMin = Arg<T, false>;
template <class T>
using ArgMax = Arg<T, true>;

//! F's partial as a result of type Out: F's own finish, or for wide results (Features::wide: a
//! float sum, product or sum of squares whose caller asked for another type) the accumulator's
//! value itself, which the core rounds once to the type asked.
template <class Out, class F>
XREDUCE_HOST_DEVICE constexpr Out finish_as(typename F::acc_t a) {
  if constexpr (std::is_same_v<Out, typename F::result_t>) return F::finish(a);
  else return static_cast<Out>(a);
}

//! Whether policy F returns an index with its value.
template <class F>
inline constexpr bool has_index = F::op == Op::argmin || F::op == Op::argmax;

//! Calls `fn` with the policy of (T, op): from the run-time op to the compile-time table.
template <class T, class Fn>
decltype(auto) visit(Op op, Fn&& fn) {
  switch (op) {
    case Op::sum: return fn(Sum<T>{});
    case Op::prod: return fn(Prod<T>{});
    case Op::min: return fn(Min<T>{});
    case Op::max: return fn(Max<T>{});
    case Op::argmin: return fn(ArgMin<T>{});
    case Op::argmax: return fn(ArgMax<T>{});
    case Op::sumsq: break;
  }
  return fn(SumOfSquares<T>{});
}

}  // namespace xreduce::ops
