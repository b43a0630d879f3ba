// Exact references: what every backend is measured against.

#include <algorithm>
#include <cmath>
#include <memory>
#include <limits>
#include <vector>

#include "aligned_input.hpp"
#include "results.hpp"
#include "xreduce/backend/ops.hpp"
#include "xreduce/error.hpp"
#include "xreduce/exact.hpp"
#include "xreduce/validate.hpp"

namespace xreduce {
namespace {

using ops::is_nan;

//! The exactly rounded sum (ExactSum: the tests check it against MPFR), and sum |x|.
template <class T>
T rounded_sum(const T* x, std::size_t n, double* abs_sum) {
  ExactSum s;
  s.add(x, n);
  double abs = 0;
  for (std::size_t i = 0; i < n; ++i) abs += std::fabs(static_cast<double>(x[i]));
  *abs_sum = abs;
  return s.round<T>();
}

//! The sum of squares: of floats the exactly rounded sum of the exact squares (each square is
//! a double and its fma remainder), of integers modulo 2^64.
template <class T>
Reference squares_reference(const T* x, std::size_t n) {
  Reference r;
  r.count = n;
  if constexpr (is_float_v<T>) {
    ExactSum s;
    double plain = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double v = static_cast<double>(x[i]), square = v * v;
      s.add(square);
      // The remainder only of a finite square: fma(v, v, -inf) of an infinite one is NaN or -inf.
      if (std::isfinite(square)) s.add(std::fma(v, v, -square));
      plain += square;
    }
    r.value = Scalar(s.round<T>());
    r.abs_sum = plain;
    r.slack = static_cast<double>(n) * static_cast<double>(std::numeric_limits<T>::denorm_min());
  } else {
    std::uint64_t s = 0;
    for (std::size_t i = 0; i < n; ++i) s += static_cast<std::uint64_t>(x[i]) * static_cast<std::uint64_t>(x[i]);
    if constexpr (std::is_signed_v<T>) r.value = Scalar(static_cast<std::int64_t>(s));
    else r.value = Scalar(s);
  }
  return r;
}

template <class T>
Reference reference_of(const T* x, std::size_t n, Op op, double correction = 0);

//! The relative precision of a statistic's result: its type's, or f64's for integers.
template <class T>
double result_epsilon() {
  if constexpr (std::is_same_v<T, double> || !is_float_v<T>) return std::numeric_limits<double>::epsilon();
  else return static_cast<double>(std::numeric_limits<T>::epsilon());
}

//! The statistics, in long double (64-bit significand, 15-bit exponent: no square of a double
//! overflows or underflows in it) and by their textbook definitions: two passes for the variance,
//! the maximum first for logsumexp. `slack` carries each one's tolerance, which is not a sum's:
//! the result's last rounding, and the double accumulation's error, in terms of the data.
template <class T>
Reference statistic_reference(const T* x, std::size_t n, Op op, double correction) {
  using L = long double;
  constexpr double eps64 = std::numeric_limits<double>::epsilon();
  const double eps = result_epsilon<T>();
  if (skips_nan(op)) {  // namesake of the elements that are not NaN (an index: the element's own)
    std::vector<T> kept;
    std::vector<std::uint64_t> where;
    kept.reserve(n), where.reserve(n);
    for (std::size_t i = 0; i < n; ++i)
      if (!is_nan(x[i])) kept.push_back(x[i]), where.push_back(i);
    const Op base = without_nan(op);
    if (kept.empty() && (base == Op::min || base == Op::max || base == Op::argmin || base == Op::argmax)) {
      Reference r;  // an all-NaN slice: NaN, and no index
      r.value = Scalar(std::numeric_limits<T>::quiet_NaN());
      if (returns_index(op)) r.index = no_index;
      r.count = n;
      return r;
    }
    std::unique_ptr<T[]> packed(new T[kept.size() + 1]);  // not a vector<bool>
    std::copy(kept.begin(), kept.end(), packed.get());
    Reference r = reference_of(packed.get(), kept.size(), base, correction);
    if (r.index) r.index = where[*r.index];
    r.count = n;
    return r;
  }
  Reference r;
  r.count = n;
  const DType type = result_dtype(dtype_of<T>(), op);
  auto result = [&](L v) { r.value = detail::rounded(type, static_cast<double>(v)); };
  // Only finite elements go through long double arithmetic: the x87 unit takes a microcode assist
  // for every NaN or infinite operand, 60 times a finite one's cost (the flat conformance cases of
  // NaN and infinite data spent three quarters of their time here). What IEEE arithmetic would make
  // of the others is set after the loop: NaN, or the sign of the infinities (NaN for both).
  L finite_sum = 0, largest = 0;
  bool nan = false, pos_inf = false, neg_inf = false;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(x[i]);
    if (std::isfinite(d)) {
      finite_sum += static_cast<L>(d);
      largest = std::max(largest, static_cast<L>(std::fabs(d)));
    } else {
      nan = nan || d != d;
      pos_inf = pos_inf || d > 0;
      neg_inf = neg_inf || d < 0;
    }
  }
  const bool inf = pos_inf || neg_inf;
  constexpr L kNaN = std::numeric_limits<L>::quiet_NaN(), kInf = std::numeric_limits<L>::infinity();
  if (inf) largest = kInf;
  //! The long double sum of f(v) over the finite elements v, in order.
  auto over_finite = [&](auto f) {
    L s = 0;
    for (std::size_t i = 0; i < n; ++i)
      if (const double d = static_cast<double>(x[i]); std::isfinite(d)) s += f(static_cast<L>(d));
    return s;
  };
  //! The long double sum of f(v) over every element, from that over the finite ones, where f(+inf)
  //! is at_pos_inf and f(-inf) at_neg_inf.
  auto with_specials = [&](L finite, L at_pos_inf, L at_neg_inf) {
    if (nan || (pos_inf && neg_inf && at_pos_inf != at_neg_inf)) return kNaN;
    return pos_inf ? at_pos_inf : neg_inf ? at_neg_inf : finite;
  };
  const L sum = with_specials(finite_sum, kInf, -kInf);
  const L mean = sum / static_cast<L>(n);
  switch (op) {
    case Op::mean:
      result(mean);
      r.slack = 64 * eps64 * static_cast<double>(largest) + eps * std::fabs(static_cast<double>(mean));
      break;
    case Op::var:
    case Op::std: {
      const L dof = static_cast<L>(n) - static_cast<L>(correction);
      // NaN or infinite data: a NaN variance (and no second pass)
      const L var = nan || inf || !(dof > 0) ? kNaN : over_finite([&](L v) { return (v - mean) * (v - mean); }) / dof;
      // Shifted sums and Chan's update in double: a few thousand roundings of eps64 relative to
      // the variance, and to the size of the data times the spread (the means' own rounding).
      const double v = static_cast<double>(var), spread = std::sqrt(v), big = static_cast<double>(largest);
      const double var_tol = 4096 * eps64 * (v + big * spread) + (op == Op::var ? eps * v : 0);
      if (op == Op::var) {
        result(var);
        r.slack = var_tol;
      } else {
        result(std::sqrt(var));
        r.slack = (spread > 0 ? var_tol / (2 * spread) : std::sqrt(var_tol)) + eps * spread;
      }
      break;
    }
    case Op::norm1:
      result(with_specials(over_finite([](L v) { return std::fabs(v); }), kInf, kInf));
      r.slack = 2 * (64 * eps64 + eps) * static_cast<double>(r.value.to_double());
      break;
    case Op::norm2: {
      const L squares = with_specials(over_finite([](L v) { return v * v; }), kInf, kInf);
      result(std::sqrt(squares));
      r.slack = 2 * (64 * eps64 + eps) * static_cast<double>(std::sqrt(squares));
      break;
    }
    case Op::norminf:
      result(nan ? kNaN : largest);
      break;
    case Op::logsumexp: {
      // The maximum in double (exact), NaN skipped as std::max skips it; -inf adds exp(-inf) = 0.
      double m = -std::numeric_limits<double>::infinity();
      for (std::size_t i = 0; i < n; ++i) m = std::max(m, static_cast<double>(x[i]));
      L v = m;
      if (nan) v = kNaN;
      else if (std::isfinite(m))
        v = m + std::log(over_finite([&](L e) { return std::exp(e - static_cast<L>(m)); }));
      result(v);
      // Elements of f32 and narrower may take their exponentials in float and add them in float
      // groups of four (cuda.shuffle: within 4 eps(f32) of the sum, relative): 8 eps(f32) more,
      // an absolute error of log(sum).
      r.slack = 1024 * eps64 * (std::fabs(static_cast<double>(v)) + 1) + eps * std::fabs(static_cast<double>(v)) +
                (is_float_v<T> && !std::is_same_v<T, double> ? 8 * static_cast<double>(std::numeric_limits<float>::epsilon()) : 0.0);
      break;
    }
    case Op::count_nonzero:
    case Op::any:
    case Op::all: {
      std::int64_t nonzero = 0;
      for (std::size_t i = 0; i < n; ++i) nonzero += ops::nonzero(x[i]) ? 1 : 0;
      if (op == Op::count_nonzero) r.value = Scalar(nonzero);
      else r.value = Scalar(op == Op::any ? nonzero > 0 : nonzero == static_cast<std::int64_t>(n));
      break;
    }
    default:
      throw Error(ErrorCode::internal, "reference: no statistic " + std::string(to_string(op)));
  }
  if (!std::isfinite(r.slack)) r.slack = 0;
  return r;
}

template <class T>
Reference reference_of(const T* x, std::size_t n, Op op, double correction) {
  Reference r;
  r.count = n;
  if (n == 0 && OpSet{op}.needs_elements())
    throw Error(ErrorCode::empty_input, std::string(to_string(op)) + " of an empty array has no value");
  if (!is_core_op(op)) return statistic_reference(x, n, op, correction);
  switch (op) {
    case Op::sum:
      if constexpr (is_float_v<T>) {
        r.value = Scalar(rounded_sum(x, n, &r.abs_sum));
      } else {
        std::uint64_t s = 0;
        for (std::size_t i = 0; i < n; ++i) s += static_cast<std::uint64_t>(x[i]);
        if constexpr (std::is_signed_v<T>) r.value = Scalar(static_cast<std::int64_t>(s));
        else r.value = Scalar(s);
      }
      break;
    case Op::prod:
      if constexpr (is_float_v<T>) {
        long double p = 1;  // 64-bit mantissa: error about n * 2^-64, far below the tolerance
        std::size_t i = 0;
        for (; i < n && std::isfinite(p); ++i) p *= static_cast<double>(x[i]);
        // A NaN or infinite product goes on in double, whose IEEE rules for them are long
        // double's, without the x87 unit's slow path for such operands (statistic_reference).
        double special = static_cast<double>(p);
        for (; i < n && special == special; ++i) special *= static_cast<double>(x[i]);
        if (!std::isfinite(p)) p = special;
        r.value = Scalar(static_cast<T>(static_cast<double>(p)));
        r.abs_sum = std::fabs(static_cast<double>(p));
      } else {
        std::uint64_t p = 1;
        for (std::size_t i = 0; i < n; ++i) p *= static_cast<std::uint64_t>(x[i]);
        if constexpr (std::is_signed_v<T>) r.value = Scalar(static_cast<std::int64_t>(p));
        else r.value = Scalar(p);
      }
      break;
    case Op::sumsq:
      return squares_reference(x, n);
    case Op::min:
    case Op::max:
    case Op::argmin:
    case Op::argmax: {
      const bool want_max = op == Op::max || op == Op::argmax;
      std::size_t best = 0;
      for (std::size_t i = 0; i < n && !is_nan(x[best]); ++i) {
        if (is_nan(x[i]) || (want_max ? x[best] < x[i] : x[i] < x[best])) best = i;
      }
      r.value = Scalar(x[best]);
      if (returns_index(op)) r.index = best;
      break;
    }
    default: break;
  }
  return r;
}

//! The reference of every segment: of its elements, or for an empty one the identity (and
//! no_index) that the backends give.
template <class T>
Reference segments_reference(const Request& q) {
  const Segments& seg = q.segments;
  if (seg.offsets[seg.count] > q.count) throw Error(ErrorCode::invalid_argument, "reference: offsets past the data");
  const T* x = static_cast<const T*>(q.data);
  Reference r;
  r.results.reserve(seg.count);
  for (std::size_t s = 0; s < seg.count; ++s) {
    const std::uint64_t b = seg.offsets[s], e = seg.offsets[s + 1];
    if (e < b) throw Error(ErrorCode::invalid_argument, "reference: decreasing offsets");
    if (e > b || !OpSet{q.op}.needs_elements()) {
      r.results.push_back(reference_of(x + b, e - b, q.op, q.correction));
      continue;
    }
    Reference empty;
    const bool want_max = without_nan(q.op) == Op::max || without_nan(q.op) == Op::argmax;
    empty.value = Scalar(want_max ? ops::extreme_identity<T, true>() : ops::extreme_identity<T, false>());
    if (skips_nan(q.op) && is_float_v<T>) empty.value = Scalar(std::numeric_limits<T>::quiet_NaN());  // as an all-NaN one
    if (returns_index(q.op)) empty.index = no_index;
    r.results.push_back(empty);
  }
  if (!r.results.empty()) r.value = r.results.front().value;
  r.count = q.count;
  return r;
}

//! Whether dimension k of q's view is reduced.
bool reduced_axis(const Request& q, std::size_t k) { return q.axes.empty() || q.axes.contains(k); }

//! Whether the request's results are an array (Result::values): ragged, or a view that keeps an
//! axis or its dimensions.
bool array_result(const Request& q) {
  if (q.segments.segmented()) return true;
  if (q.view.rank == 0) return false;
  bool kept = q.keepdims;
  for (std::size_t k = 0; k < q.view.rank; ++k) kept = kept || !reduced_axis(q, k);
  return kept;
}

//! The element offset of C-order index i over the dimensions `dims` of q's view.
std::int64_t offset_of(const Request& q, const std::vector<std::size_t>& dims, std::uint64_t i) {
  std::int64_t offset = 0;
  for (std::size_t k = dims.size(); k-- > 0;) {
    const auto extent = static_cast<std::uint64_t>(q.view.shape[dims[k]]);
    offset += static_cast<std::int64_t>(i % extent) * q.view.strides[dims[k]];
    i /= extent;
  }
  return offset;
}

//! A view, the plain way: each result's elements gathered by their index, one at a time, in the C
//! order of the reduced axes (which is what argmin/argmax count), and referenced as an array.
template <class T>
Reference view_reference(const Request& q) {
  std::vector<std::size_t> kept, reduced;
  std::uint64_t results = 1, per_result = 1;
  for (std::size_t k = 0; k < q.view.rank; ++k) {
    if (q.view.shape[k] < 0) throw Error(ErrorCode::invalid_argument, "reference: a negative extent");
    (reduced_axis(q, k) ? reduced : kept).push_back(k);
    (reduced_axis(q, k) ? per_result : results) *= static_cast<std::uint64_t>(q.view.shape[k]);
  }
  const T* x = static_cast<const T*>(q.data);
  const std::unique_ptr<T[]> elements(new T[per_result]);  // not a vector: vector<bool> has no data()
  auto one = [&](std::uint64_t o) {
    const std::int64_t base = offset_of(q, kept, o);
    for (std::uint64_t i = 0; i < per_result; ++i) elements[i] = x[base + offset_of(q, reduced, i)];
    return reference_of(elements.get(), per_result, q.op, q.correction);
  };
  if (!array_result(q)) return one(0);
  Reference r;
  for (std::uint64_t o = 0; o < results; ++o) r.results.push_back(one(o));
  if (!r.results.empty()) r.value = r.results.front().value, r.index = r.results.front().index;
  r.count = per_result;
  return r;
}

//! One op of a request with several ops, as a request of that op alone.
Request alone(const Request& q, Op op) {
  Request one = q;
  one.ops = {};
  one.ops_out = nullptr;
  one.op = op;
  return one;
}

//! One result of an array request, as a flat request of its own (for its tolerance and check).
Request one_result(const Request& q) {
  Request one = q;
  one.view = View{};
  one.segments = {};
  return one;
}

}  // namespace

Reference exact_reference(const Request& request) {
  std::uint64_t elements = request.count;
  if (request.view.rank > 0) {
    elements = 1;
    for (std::size_t k = 0; k < request.view.rank; ++k) elements *= request.view.shape[k] > 0 ? request.view.shape[k] : 0;
  }
  if (elements > 0 && request.data == nullptr) throw Error(ErrorCode::invalid_argument, "reference: null data");
  if (request.segments.count > 0 && !request.segments.offsets) throw Error(ErrorCode::invalid_argument, "reference: segments without offsets");
  std::unique_ptr<std::uint64_t[]> aligned_copy;
  const Request q = elements > 0 ? detail::with_aligned_data(request, aligned_copy) : request;
  if (!q.ops.empty()) {  // each op as if alone
    Reference r;
    for (Op op : all_ops)
      if (q.ops.contains(op)) r.ops.push_back(exact_reference(alone(q, op)));
    r.value = r.ops.front().value;
    r.index = r.ops.front().index;
    r.count = q.count;
    return r;
  }
  return visit_dtype(q.dtype, [&](auto tag) {
    using T = decltype(tag);
    if (q.view.rank > 0) return view_reference<T>(q);
    if (q.segments.segmented()) return segments_reference<T>(q);
    return reference_of(static_cast<const T*>(q.data), q.count, q.op, q.correction);
  });
}

double tolerance(const Request& q, const Reference& ref, Accuracy accuracy) {
  if (!ref.results.empty() || !ref.ops.empty()) {
    double widest = 0;
    for (const Reference& c : ref.results) widest = std::max(widest, tolerance(one_result(q), c, accuracy));
    std::size_t k = 0;
    for (Op op : all_ops)
      if (q.ops.contains(op) && k < ref.ops.size()) widest = std::max(widest, tolerance(alone(q, op), ref.ops[k++], accuracy));
    return widest;
  }
  // The statistics' own bound (statistic_reference), exact mode too: the reference is not itself
  // rounded once (the exact tests compare the bits with MPFR's).
  if (skips_nan(q.op) && is_core_op(without_nan(q.op))) {  // nansum, nanprod: their namesake's bound
    Request base = q;
    base.op = without_nan(q.op);
    return tolerance(base, ref, accuracy);
  }
  if (!is_core_op(q.op)) return ref.slack;
  if (!is_floating(q.dtype) || exact_sum(q.dtype, q.op, accuracy)) return 0;
  // f16 and bf16 accumulate as f32 does (float lanes, then double), and round once more at the
  // end, to their own type: half an ulp of the result, below eps(T) |result| (+ the subnormal
  // spacing, for a result among them).
  const double eps = q.dtype == DType::f64 ? std::numeric_limits<double>::epsilon() : std::numeric_limits<float>::epsilon();
  double last_rounding = 0;
  if (is_float16(q.dtype))
    visit_dtype(q.dtype, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (is_float16_v<T>)
        last_rounding = static_cast<double>(std::numeric_limits<T>::epsilon()) * std::fabs(ref.value.to_double()) +
                        static_cast<double>(std::numeric_limits<T>::denorm_min());
    });
  if (q.op == Op::sum || q.op == Op::sumsq) return 64 * eps * ref.abs_sum + ref.slack + last_rounding;
  if (q.op == Op::prod) return (static_cast<double>(ref.count) + 64) * eps * ref.abs_sum + last_rounding;
  return 0;
}

bool agrees(const Request& q, const Reference& ref, const Result& result, double* error, Accuracy accuracy) {
  if (!q.ops.empty()) {  // every op against its own reference, as if alone
    bool all = result.ops.size() == q.ops.size() && ref.ops.size() == q.ops.size();
    double worst = all ? 0 : std::numeric_limits<double>::infinity();
    std::size_t k = 0;
    for (Op op : all_ops) {
      if (!all || !q.ops.contains(op)) continue;
      const OpResult& got = result.ops[k];
      Result one{got.value, got.index, {}};
      one.values = got.values;
      one.indices = got.indices;
      double e = 0;
      all = got.op == op && agrees(alone(q, op), ref.ops[k++], one, &e, accuracy);
      worst = std::max(worst, e);
    }
    if (error) *error = worst;
    return all;
  }
  if (array_result(q)) {  // every result within its own tolerance, with its own index
    const std::size_t n = ref.results.size();
    bool all = result.values.size() == n && (!returns_index(q.op) || result.indices.size() == n);
    double worst = all ? 0 : std::numeric_limits<double>::infinity();
    const Request one = one_result(q);
    for (std::size_t s = 0; all && s < n; ++s) {
      double e = 0;
      std::optional<std::uint64_t> index;
      if (returns_index(q.op)) index = result.indices[s];
      all = agrees(one, ref.results[s], Result{result.values[s], index, {}}, &e, accuracy);
      worst = std::max(worst, e);
    }
    if (error) *error = worst;
    return all;
  }
  double err = 0;
  bool ok = result.value.dtype() == ref.value.dtype() && result.index == ref.index;
  if (ok && exact_sum(q.dtype, q.op, accuracy)) {  // the same bits (any NaN matches a NaN)
    ok = result.value == ref.value && (std::isnan(ref.value.to_double()) ||
                                       std::signbit(result.value.to_double()) == std::signbit(ref.value.to_double()));
    err = ok ? 0 : std::fabs(result.value.to_double() - ref.value.to_double());
    if (!ok && err == 0) err = std::numeric_limits<double>::denorm_min();  // +0 against -0
  } else if (ok && !(result.value == ref.value)) {
    if (is_floating(result.value.dtype())) {
      double a = result.value.to_double(), b = ref.value.to_double();
      if (std::isfinite(a) && std::isfinite(b)) {
        err = std::fabs(a - b);
        ok = err <= tolerance(q, ref, accuracy);
      } else {
        err = std::numeric_limits<double>::infinity();
        ok = false;
      }
    } else {
      err = std::fabs(result.value.to_double() - ref.value.to_double());
      ok = false;
    }
  } else if (!ok) {
    err = std::numeric_limits<double>::infinity();
  }
  if (error) *error = err;
  return ok;
}

}  // namespace xreduce
