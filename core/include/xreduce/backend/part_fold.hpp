#pragma once
//! For backend authors: folding the results of disjoint parts of one reduction (a backend that
//! splits a request between engines, devices or calls, as `hybrid` does).

#include <cstdint>
#include <optional>
#include <vector>

#include "xreduce/request.hpp"

namespace xreduce::backend {

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
