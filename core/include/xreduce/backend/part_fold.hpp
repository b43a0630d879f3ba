#pragma once
//! For backend authors: folding the results of disjoint parts of one reduction (a backend that
//! splits a request between engines, devices or calls, as `hybrid` does).

#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "xreduce/backend/ops.hpp"
#include "xreduce/request.hpp"

namespace xreduce::backend {

//! A part's result (`value`, and `index` for argmin/argmax, moved by `offset`: the part's first
//! element) as the partial of op F of the table (xreduce/backend/ops.hpp), to combine with F.
template <class F>
typename F::acc_t partial_of(const Scalar& value, std::optional<std::uint64_t> index, std::uint64_t offset = 0) {
  using T = typename F::In;
  using A = typename F::acc_t;
  if constexpr (ops::has_index<F>) {
    return A{value.get<T>(), *index + offset};
  } else if constexpr (std::is_same_v<A, T>) {
    return value.get<T>();
  } else {  // a wide partial: the float result widened, or the integer result's 64 bits
    const auto r = value.get<typename F::result_t>();
    A a;
    if constexpr (is_float_v<T>) a = static_cast<A>(r);
    else std::memcpy(&a, &r, sizeof a);
    return a;
  }
}

//! A partial of op F as a result: its value, and its index for argmin/argmax.
template <class F>
Result result_of(const typename F::acc_t& a) {
  Result r;
  r.value = Scalar(F::finish(a));
  if constexpr (ops::has_index<F>) r.index = a.index;
  return r;
}

//! Folds the results of disjoint parts of one reduction, added in any order, each with the index
//! of its first element (record). Floating sums are kept in double with Neumaier's compensation,
//! so folding many parts adds no error beyond each part's own rounding; argmin/argmax keep the
//! lowest index among equal extremes (and the first NaN) whatever order the parts come in.
//! Exact sums (parts with Result::exact) add their partials: the fold is exact.
//! Not thread-safe: add under a lock.
class PartFold {
 public:
  explicit PartFold(Op op) : op_(op) {}
  void add(const Result& part, std::uint64_t offset);
  bool empty() const { return !acc_; }
  //! The fold of every part added; call only when not empty().
  Result result() const;

 private:
  Op op_;
  std::optional<Result> acc_;                  // every op but floating sums
  std::vector<double> sum_, compensation_;     // floating sums, per column
};

}  // namespace xreduce::backend
