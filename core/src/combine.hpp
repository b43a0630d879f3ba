#pragma once
// Combining the results of parts of one reduction (the hybrid backend's CPU and GPU slices).

#include <cstdint>
#include <optional>
#include <vector>

#include "xreduce/request.hpp"

namespace xreduce::detail {

//! Folds the results of disjoint parts of one reduction, added in any order, each with the index
//! of its first element (record). Floating sums are kept in double with Neumaier's compensation,
//! so folding many parts adds no error beyond each part's own rounding; argmin/argmax keep the
//! lowest index among equal extremes (and the first NaN) whatever order the parts come in.
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

}  // namespace xreduce::detail
