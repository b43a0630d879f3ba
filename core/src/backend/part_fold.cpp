#include "xreduce/backend/part_fold.hpp"

#include <cmath>
#include <span>

#include "xreduce/error.hpp"

namespace xreduce::backend {
namespace {

//! The result of `op` over two parts, by the table's operator (xreduce/backend/ops.hpp): sums
//! and products combined in double (floats) or modulo 2^64 (integers), min/max keep NaN,
//! argmin/argmax the first NaN, else the extreme with the lowest index, in either order.
Result combine_results(Op op, const Result& a, const Result& b) {
  if (!a.values.empty() || !b.values.empty()) {  // records: column by column
    if (a.values.size() != b.values.size())
      throw Error(ErrorCode::internal, "combine_results: parts with different numbers of columns");
    Result r;
    for (std::size_t j = 0; j < a.values.size(); ++j)
      r.values.push_back(combine_results(op, Result{a.values[j], {}, {}}, Result{b.values[j], {}, {}}).value);
    r.value = r.values.front();
    return r;
  }
  if (a.value.dtype() != b.value.dtype()) throw Error(ErrorCode::internal, "combine_results: parts of different types");
  // Visited by the result's type: a widened integer partial combines as the same op of int64 or
  // uint64 elements would (modulo 2^64, whatever the elements' width).
  return visit_dtype(a.value.dtype(), [&](auto tag) {
    return ops::visit<decltype(tag)>(op, [&](auto f) {
      using F = decltype(f);
      return result_of<F>(f(partial_of<F>(a.value, a.index), partial_of<F>(b.value, b.index)));
    });
  });
}

bool floating_sum(Op op, const Result& r) {
  const DType t = r.values.empty() ? r.value.dtype() : r.values.front().dtype();
  return op == Op::sum && is_floating(t);
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
  acc_ = acc_ ? combine_results(op_, *acc_, p) : std::move(p);  // the table's rules hold in either order
}

Result PartFold::result() const {
  if (!acc_) throw Error(ErrorCode::internal, "PartFold::result: nothing was added");
  if (sum_.empty()) return *acc_;  // exact sums too: Reducer::reduce rounds their partials
  Result r = *acc_;
  auto rounded = [&](const Scalar& like, std::size_t j) {
    const double v = std::isfinite(sum_[j]) ? sum_[j] + compensation_[j] : sum_[j];
    return visit_dtype(like.dtype(), [&](auto tag) { return Scalar(static_cast<decltype(tag)>(v)); });
  };
  if (r.values.empty()) r.value = rounded(r.value, 0);
  else {
    for (std::size_t j = 0; j < r.values.size(); ++j) r.values[j] = rounded(r.values[j], j);
    r.value = r.values.front();
  }
  return r;
}

}  // namespace xreduce::backend
