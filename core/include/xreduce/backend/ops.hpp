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

#include <cmath>
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
inline constexpr bool has_index = returns_index(F::op);

// ---------------------------------------------------------------------------------------------
// The statistics. Their partials are small structs of doubles (or a count, or a flag), their
// finish may need the request's correction (FinishArgs), and their value is computed in double
// and rounded once to the result type (value(), then finish()).

//! What a statistic's finish needs beyond its partial: the divisor of var and std is
//! n - correction (Request::correction; numpy's ddof).
struct FinishArgs {
  double correction = 0;
};

//! The result type of the float statistics: floats keep their type, integers and bools give f64.
template <class T>
using float_result_t = std::conditional_t<is_float_v<T>, T, double>;

//! Whether x is not zero (NaN is not zero, as numpy counts it).
template <class T>
XREDUCE_HOST_DEVICE constexpr bool nonzero(T x) {
  if constexpr (is_float16_v<T>) return static_cast<float>(x) != 0.0f;
  else return x != T(0);
}

//! What the float statistics share: an element as a double, dropped (the identity) when the op
//! skips NaN and it is one, and the value rounded once to the result type.
template <class T, Op kOp, class Acc>
struct Statistic {
  using In = T;
  using acc_t = Acc;
  using result_t = float_result_t<T>;
  static constexpr Op op = kOp;
  static constexpr bool skip_nan = skips_nan(kOp);
  XREDUCE_HOST_DEVICE static constexpr bool dropped(T x) { return skip_nan && is_nan(x); }
};

//! mean, var and std (and nanmean, nanvar, nanstd) accumulate xreduce::Moments (types.hpp). Two
//! partials combine by Chan, Golub and LeVeque's update (the difference of the means, never the
//! raw sum of squares less the square of the sum), which an engine may feed with partials of its
//! own (a run summed around a shift, cpu_kernels.hpp). An infinity makes var and std NaN, as
//! numpy's (x - mean is inf - inf); n - correction <= 0 too.
using ::xreduce::Moments;
template <class T, Op kOp>
struct MomentsOp : Statistic<T, kOp, Moments> {
  using Base = Statistic<T, kOp, Moments>;
  XREDUCE_HOST_DEVICE static constexpr Moments identity() { return {0, 0, 0}; }
  XREDUCE_HOST_DEVICE static constexpr Moments lift(T x, index_t = 0) {
    return Base::dropped(x) ? identity() : Moments{1, static_cast<double>(x), 0};
  }
  XREDUCE_HOST_DEVICE constexpr Moments operator()(const Moments& a, const Moments& b) const {
    if (a.n == 0) return b;
    if (b.n == 0) return a;
    const double n = a.n + b.n, d = b.sum / b.n - a.sum / a.n;
    return {n, a.sum + b.sum, a.m2 + b.m2 + d * d * (a.n / n * b.n)};
  }
  XREDUCE_HOST_DEVICE static double value(const Moments& a, FinishArgs args = {}) {
    constexpr Op base = without_nan(kOp);
    if (base == Op::mean) return a.sum / a.n;  // 0 / 0: NaN, numpy's mean of nothing
    const double dof = a.n - args.correction;
    if (!(dof > 0) || !(a.sum - a.sum == 0)) return std::numeric_limits<double>::quiet_NaN();
    const double var = (a.m2 > 0 ? a.m2 : 0) / dof;
    return base == Op::var ? var : std::sqrt(var);
  }
  XREDUCE_HOST_DEVICE static typename Base::result_t finish(const Moments& a, FinishArgs args = {}) {
    return static_cast<typename Base::result_t>(value(a, args));
  }
};

//! norm1 (the sum of |x|, in double) and norminf (the largest |x|; NaN if any is); 0 for nothing.
template <class T, Op kOp>
struct AbsOp : Statistic<T, kOp, double> {
  using Base = Statistic<T, kOp, double>;
  XREDUCE_HOST_DEVICE static constexpr double identity() { return 0; }
  XREDUCE_HOST_DEVICE static double lift(T x, index_t = 0) { return std::fabs(static_cast<double>(x)); }
  XREDUCE_HOST_DEVICE constexpr double operator()(double a, double b) const {
    if constexpr (kOp == Op::norm1) return a + b;
    else return a != a ? a : b != b ? b : a < b ? b : a;
  }
  XREDUCE_HOST_DEVICE static double value(double a, FinishArgs = {}) { return a; }
  XREDUCE_HOST_DEVICE static typename Base::result_t finish(double a, FinishArgs = {}) { return static_cast<typename Base::result_t>(a); }
};

//! norm2 without overflow or underflow: Blue's algorithm as LAPACK's dnrm2 has it (Anderson,
//! "Algorithm 978: Safe scaling in the Level 1 BLAS", 2017). Three sums of squares, of the small,
//! the medium and the big magnitudes, each scaled by a power of two into range: a partial is
//! three sums, and partials add. Of f32 and narrower elements only the medium sum is used.
struct ScaledSquares {
  double small, medium, big;
};
template <class T>
struct Norm2Op : Statistic<T, Op::norm2, ScaledSquares> {
  using Base = Statistic<T, Op::norm2, ScaledSquares>;
  // Below tsml (above tbig) a square may underflow (overflow); ssml and sbig scale them back.
  static constexpr double tsml = 0x1p-511, tbig = 0x1p486, ssml = 0x1p537, sbig = 0x1p-538;
  XREDUCE_HOST_DEVICE static constexpr ScaledSquares identity() { return {0, 0, 0}; }
  XREDUCE_HOST_DEVICE static ScaledSquares lift(T x, index_t = 0) {
    const double a = std::fabs(static_cast<double>(x));
    if (a > tbig) return {0, 0, (a * sbig) * (a * sbig)};
    if (a < tsml) return {(a * ssml) * (a * ssml), 0, 0};
    return {0, a * a, 0};  // NaN lands here: the medium sum carries it to the result
  }
  XREDUCE_HOST_DEVICE constexpr ScaledSquares operator()(const ScaledSquares& a, const ScaledSquares& b) const {
    return {a.small + b.small, a.medium + b.medium, a.big + b.big};
  }
  XREDUCE_HOST_DEVICE static double value(ScaledSquares a, FinishArgs = {}) {
    double scale = 1, sumsq = a.medium;
    if (a.big > 0) {
      if (a.medium > 0 || a.medium != a.medium) a.big += (a.medium * sbig) * sbig;
      scale = 1 / sbig, sumsq = a.big;
    } else if (a.small > 0) {
      if (a.medium > 0 || a.medium != a.medium) {
        const double med = std::sqrt(a.medium), sml = std::sqrt(a.small) / ssml;
        const double lo = sml < med ? sml : med, hi = sml < med ? med : sml;
        sumsq = hi * hi * (1 + (lo / hi) * (lo / hi));
      } else {
        scale = 1 / ssml, sumsq = a.small;
      }
    }
    return scale * std::sqrt(sumsq);
  }
  XREDUCE_HOST_DEVICE static typename Base::result_t finish(const ScaledSquares& a, FinishArgs args = {}) {
    return static_cast<typename Base::result_t>(value(a, args));
  }
};

//! logsumexp: log(sum exp(x)) in one pass, as a running maximum m and the sum s of exp(x - m),
//! rescaled when m grows. -inf for nothing (or only -inf); +inf if any element is; NaN if any is.
struct LogSumExp {
  double max, sum;
};
template <class T>
struct LogSumExpOp : Statistic<T, Op::logsumexp, LogSumExp> {
  using Base = Statistic<T, Op::logsumexp, LogSumExp>;
  XREDUCE_HOST_DEVICE static constexpr LogSumExp identity() { return {-std::numeric_limits<double>::infinity(), 0}; }
  XREDUCE_HOST_DEVICE static constexpr LogSumExp lift(T x, index_t = 0) { return {static_cast<double>(x), 1}; }
  XREDUCE_HOST_DEVICE LogSumExp operator()(const LogSumExp& a, const LogSumExp& b) const {
    if (a.max != a.max) return a;
    if (b.max != b.max) return b;
    const double m = a.max < b.max ? b.max : a.max;
    if (m == std::numeric_limits<double>::infinity() || m == -std::numeric_limits<double>::infinity()) return {m, m > 0 ? 1.0 : 0.0};
    return {m, a.sum * std::exp(a.max - m) + b.sum * std::exp(b.max - m)};
  }
  XREDUCE_HOST_DEVICE static double value(const LogSumExp& a, FinishArgs = {}) {
    if (a.max != a.max || a.sum == 0 || a.max == std::numeric_limits<double>::infinity()) return a.max;
    return a.max + std::log(a.sum);
  }
  XREDUCE_HOST_DEVICE static typename Base::result_t finish(const LogSumExp& a, FinishArgs args = {}) {
    return static_cast<typename Base::result_t>(value(a, args));
  }
};

//! count_nonzero (an i64 count), any and all (bools) of the elements that are not zero.
template <class T, Op kOp>
struct NonzeroOp {
  using In = T;
  using acc_t = std::conditional_t<kOp == Op::count_nonzero, unsigned long long, bool>;
  using result_t = std::conditional_t<kOp == Op::count_nonzero, std::int64_t, bool>;
  static constexpr Op op = kOp;
  XREDUCE_HOST_DEVICE static constexpr acc_t identity() { return kOp == Op::all; }
  XREDUCE_HOST_DEVICE static constexpr acc_t lift(T x, index_t = 0) { return nonzero(x); }
  XREDUCE_HOST_DEVICE constexpr acc_t operator()(acc_t a, acc_t b) const {
    if constexpr (kOp == Op::count_nonzero) return a + b;
    else if constexpr (kOp == Op::any) return a || b;
    else return a && b;
  }
  XREDUCE_HOST_DEVICE static constexpr result_t value(acc_t a, FinishArgs = {}) { return static_cast<result_t>(a); }
  XREDUCE_HOST_DEVICE static constexpr result_t finish(acc_t a, FinishArgs = {}) { return static_cast<result_t>(a); }
};

//! nansum and nanprod: the sum and product with each NaN taken as 0 (1).
template <class T, class Base>
struct SkippingNaN : Base {
  static constexpr Op op = Base::op == Op::sum ? Op::nansum : Op::nanprod;
  XREDUCE_HOST_DEVICE static constexpr typename Base::acc_t lift(T x, index_t = 0) {
    return is_nan(x) ? Base::identity() : Base::lift(x);
  }
  //! A float's accumulator unrounded (a wide result is rounded once, to the type asked for); an
  //! integer's result.
  XREDUCE_HOST_DEVICE static constexpr auto value(typename Base::acc_t a, FinishArgs = {}) {
    if constexpr (is_float_v<T>) return static_cast<double>(a);
    else return Base::finish(a);
  }
  XREDUCE_HOST_DEVICE static constexpr typename Base::result_t finish(typename Base::acc_t a, FinishArgs = {}) { return Base::finish(a); }
};

//! nanmin and nanmax: the extreme of the elements that are not NaN; NaN if every one is.
template <class T>
struct SeenExtreme {
  T value;
  bool seen;
};
template <class T, bool kMax>
struct NanExtremeOp {
  using In = T;
  using acc_t = SeenExtreme<T>;
  using result_t = T;
  static constexpr Op op = kMax ? Op::nanmax : Op::nanmin;
  XREDUCE_HOST_DEVICE static constexpr acc_t identity() { return {extreme_identity<T, kMax>(), false}; }
  XREDUCE_HOST_DEVICE static constexpr acc_t lift(T x, index_t = 0) { return is_nan(x) ? identity() : acc_t{x, true}; }
  XREDUCE_HOST_DEVICE constexpr acc_t operator()(const acc_t& a, const acc_t& b) const {
    return {Extreme<T, kMax>{}(a.value, b.value), a.seen || b.seen};
  }
  XREDUCE_HOST_DEVICE static constexpr T value(const acc_t& a, FinishArgs = {}) {
    if constexpr (is_float_v<T>)
      if (!a.seen) return std::numeric_limits<T>::quiet_NaN();
    return a.value;
  }
  XREDUCE_HOST_DEVICE static constexpr T finish(const acc_t& a, FinishArgs = {}) { return value(a); }
};

//! nanargmin and nanargmax: argmin and argmax of the elements that are not NaN; an all-NaN
//! slice has index no_element and value NaN (numpy raises there; the Python package does too).
template <class T, bool kMax>
struct NanArgOp : Arg<T, kMax> {
  using Base = Arg<T, kMax>;
  static constexpr Op op = kMax ? Op::nanargmax : Op::nanargmin;
  XREDUCE_HOST_DEVICE static constexpr ArgPair<T> lift(T x, index_t i) { return is_nan(x) ? Base::identity() : ArgPair<T>{x, i}; }
  XREDUCE_HOST_DEVICE static constexpr T value(const ArgPair<T>& a, FinishArgs = {}) {
    if constexpr (is_float_v<T>)
      if (a.index == no_element) return std::numeric_limits<T>::quiet_NaN();
    return a.value;
  }
  XREDUCE_HOST_DEVICE static constexpr T finish(const ArgPair<T>& a, FinishArgs = {}) { return value(a); }
};

//! A partial of any op as a result of type Out: the core ops' finish_as; a statistic's finish
//! with its FinishArgs, or for a wide result (Features::wide) its double value, unrounded.
template <class Out, class F>
XREDUCE_HOST_DEVICE Out finish_as(const typename F::acc_t& a, FinishArgs args) {
  if constexpr (is_core_op(F::op)) return finish_as<Out, F>(a);
  else if constexpr (std::is_same_v<Out, typename F::result_t>) return F::finish(a, args);
  else return static_cast<Out>(F::value(a, args));
}

//! Calls `fn` with the policy of (T, op) for a statistic (an op after the core ones). Of a type
//! that holds no NaN (integers, bool), nanmean, nanvar and nanstd are mean's, var's and std's
//! policies: the same partial and result, and one instantiation fewer of every kernel and driver
//! that visits them.
template <class T, class Fn>
decltype(auto) visit_statistic(Op op, Fn&& fn) {
  constexpr bool kNaN = is_float_v<T>;
  switch (op) {
    case Op::mean: return fn(MomentsOp<T, Op::mean>{});
    case Op::var: return fn(MomentsOp<T, Op::var>{});
    case Op::std: return fn(MomentsOp<T, Op::std>{});
    case Op::nanmean: return fn(MomentsOp<T, kNaN ? Op::nanmean : Op::mean>{});
    case Op::nanvar: return fn(MomentsOp<T, kNaN ? Op::nanvar : Op::var>{});
    case Op::nanstd: return fn(MomentsOp<T, kNaN ? Op::nanstd : Op::std>{});
    case Op::norm1: return fn(AbsOp<T, Op::norm1>{});
    case Op::norminf: return fn(AbsOp<T, Op::norminf>{});
    case Op::norm2: return fn(Norm2Op<T>{});
    case Op::logsumexp: return fn(LogSumExpOp<T>{});
    case Op::count_nonzero: return fn(NonzeroOp<T, Op::count_nonzero>{});
    case Op::any: return fn(NonzeroOp<T, Op::any>{});
    case Op::all: return fn(NonzeroOp<T, Op::all>{});
    case Op::nansum: return fn(SkippingNaN<T, Sum<T>>{});
    case Op::nanprod: return fn(SkippingNaN<T, Prod<T>>{});
    case Op::nanmin: return fn(NanExtremeOp<T, false>{});
    case Op::nanmax: return fn(NanExtremeOp<T, true>{});
    case Op::nanargmin: return fn(NanArgOp<T, false>{});
    default: break;
  }
  return fn(NanArgOp<T, true>{});
}

//! Calls `fn` with the policy of (T, op) for a core op: from the run-time op to the compile-time
//! table (visit_statistic has the rest).
template <class T, class Fn>
decltype(auto) visit(Op op, Fn&& fn) {
  switch (op) {
    case Op::sum: return fn(Sum<T>{});
    case Op::prod: return fn(Prod<T>{});
    case Op::min: return fn(Min<T>{});
    case Op::max: return fn(Max<T>{});
    case Op::argmin: return fn(ArgMin<T>{});
    case Op::argmax: return fn(ArgMax<T>{});
    default: break;  // sumsq; a statistic is visit_statistic's, and no caller passes one here
  }
  return fn(SumOfSquares<T>{});
}

}  // namespace xreduce::ops
