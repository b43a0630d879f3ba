#include "xreduce/backend/part_fold.hpp"

#include <cmath>
#include <span>

#include "xreduce/error.hpp"

namespace xreduce::backend {
namespace {

//! The result of `op` over two parts, `low` holding the lower indices. Sums and products are
//! combined in double (floats) or modulo 2^64 (integers); min/max keep NaN; argmin/argmax keep the
//! first NaN, else the extreme with the lowest index.
Result combine_results(Op op, const Result& low, const Result& high) {
  if (!low.values.empty() || !high.values.empty()) {  // records: column by column
    if (low.values.size() != high.values.size())
      throw Error(ErrorCode::internal, "combine_results: parts with different numbers of columns");
    Result r;
    for (std::size_t j = 0; j < low.values.size(); ++j)
      r.values.push_back(combine_results(op, Result{low.values[j], {}, {}}, Result{high.values[j], {}, {}}).value);
    r.value = r.values.front();
    return r;
  }
  if (low.value.dtype() != high.value.dtype())
    throw Error(ErrorCode::internal, "combine_results: parts of different types");
  return visit_dtype(low.value.dtype(), [&](auto tag) -> Result {
    using T = decltype(tag);
    const T a = low.value.get<T>(), b = high.value.get<T>();
    auto nan = [](T x) {
      if constexpr (std::is_floating_point_v<T>) return x != x;
      else return false;
    };
    switch (op) {
      case Op::sum:
      case Op::prod: {
        if constexpr (std::is_floating_point_v<T>) {
          const double r = op == Op::sum ? double(a) + double(b) : double(a) * double(b);
          return {Scalar(static_cast<T>(r)), {}, {}};
        } else {
          const auto ua = static_cast<std::uint64_t>(a), ub = static_cast<std::uint64_t>(b);
          return {Scalar(static_cast<T>(op == Op::sum ? ua + ub : ua * ub)), {}, {}};
        }
      }
      case Op::min:
      case Op::max: {
        if (nan(a)) return {Scalar(a), {}, {}};
        if (nan(b)) return {Scalar(b), {}, {}};
        const bool take_b = op == Op::max ? a < b : b < a;
        return {Scalar(take_b ? b : a), {}, {}};
      }
      case Op::argmin:
      case Op::argmax: {
        if (nan(a)) return low;
        if (nan(b)) return high;
        const bool take_b = op == Op::argmax ? a < b : b < a;  // ties: the low part's index is lower
        return take_b ? high : low;
      }
    }
    throw Error(ErrorCode::internal, "combine_results: unknown op");
  });
}

bool floating_sum(Op op, const Result& r) {
  const DType t = r.values.empty() ? r.value.dtype() : r.values.front().dtype();
  return op == Op::sum && (t == DType::f32 || t == DType::f64);
}

double as_double(const Scalar& s) {
  return visit_dtype(s.dtype(), [&](auto tag) { return static_cast<double>(s.get<decltype(tag)>()); });
}

}  // namespace

void PartFold::add(const Result& part, std::uint64_t offset) {
  if (!part.exact.empty()) {  // exact sums: the partials add exactly, in any order
    if (!acc_) acc_ = part;
    else if (acc_->exact.size() != part.exact.size())
      throw Error(ErrorCode::internal, "PartFold: exact parts with different numbers of columns");
    else
      for (std::size_t j = 0; j < part.exact.size(); ++j) acc_->exact[j] += part.exact[j];
    return;
  }
  if (floating_sum(op_, part)) {
    const std::span<const Scalar> columns = part.values.empty() ? std::span<const Scalar>(&part.value, 1) : part.values;
    if (!acc_) acc_ = part;  // keeps the dtype and the number of columns for result()
    sum_.resize(columns.size(), 0.0);
    compensation_.resize(columns.size(), 0.0);
    for (std::size_t j = 0; j < columns.size(); ++j) {
      const double x = as_double(columns[j]), t = sum_[j] + x;
      if (std::isfinite(t))  // past infinity or NaN the compensation means nothing (and inf - inf is NaN)
        compensation_[j] += std::abs(sum_[j]) >= std::abs(x) ? (sum_[j] - t) + x : (x - t) + sum_[j];
      sum_[j] = t;
    }
    return;
  }
  Result p = part;
  if (p.index) *p.index += offset;
  if (!acc_) {
    acc_ = std::move(p);
    return;
  }
  // combine_results prefers its first argument on ties (and on NaN): give it the lower index.
  const bool part_first = p.index && acc_->index && *p.index < *acc_->index;
  acc_ = part_first ? combine_results(op_, p, *acc_) : combine_results(op_, *acc_, p);
}

Result PartFold::result() const {
  if (!acc_) throw Error(ErrorCode::internal, "PartFold::result: nothing was added");
  if (sum_.empty()) return *acc_;  // exact sums too: Reducer::reduce rounds their partials
  Result r = *acc_;
  auto rounded = [&](const Scalar& like, std::size_t j) {
    const double v = std::isfinite(sum_[j]) ? sum_[j] + compensation_[j] : sum_[j];
    return like.dtype() == DType::f32 ? Scalar(static_cast<float>(v)) : Scalar(v);
  };
  if (r.values.empty()) r.value = rounded(r.value, 0);
  else {
    for (std::size_t j = 0; j < r.values.size(); ++j) r.values[j] = rounded(r.values[j], j);
    r.value = r.values.front();
  }
  return r;
}

}  // namespace xreduce::backend
