#pragma once
// Inside the CPU chunk driver: a canonical view split into the axes its results run along (kept)
// and the axes each result reduces, and the odometer that walks either in C order.

#include <cstdint>
#include <vector>

#include "xreduce/request.hpp"

namespace xreduce::backend {

struct Axis {
  std::int64_t extent, stride;  // stride in elements
};

//! A canonical view's kept axes (in the results' order) and reduced ones (in the order their
//! C-order index runs: what argmin/argmax count).
struct SplitView {
  std::vector<Axis> kept, reduced;
  std::uint64_t results = 1;     // the product of the kept extents
  std::uint64_t per_result = 1;  // the product of the reduced extents

  explicit SplitView(const Request& q) {
    for (std::size_t k = 0; k < q.view.rank; ++k) {
      const Axis a{q.view.shape[k], q.view.strides[k]};
      if (q.axes.contains(k)) {
        reduced.push_back(a);
        per_result *= static_cast<std::uint64_t>(a.extent);
      } else {
        kept.push_back(a);
        results *= static_cast<std::uint64_t>(a.extent);
      }
    }
  }
};

//! The element offset of a C-order index over `axes`, moved one index at a time (the last axis
//! fastest), from any start.
class Odometer {
 public:
  Odometer(const std::vector<Axis>& axes, std::uint64_t start) : axes_(axes), at_(axes.size(), 0) {
    for (std::size_t k = axes.size(); k-- > 0;) {
      const auto e = static_cast<std::uint64_t>(axes[k].extent);
      at_[k] = static_cast<std::int64_t>(start % e);
      start /= e;
      offset_ += at_[k] * axes[k].stride;
    }
  }
  std::int64_t offset() const { return offset_; }
  //! The position along the last axis, and how many indices are left along it.
  std::int64_t last_position() const { return at_.empty() ? 0 : at_.back(); }
  std::int64_t left_along_last() const { return at_.empty() ? 1 : axes_.back().extent - at_.back(); }
  //! Moves `n` indices on along the last axis (at most left_along_last()), carrying into the
  //! others when it reaches the end.
  void advance(std::int64_t n) {
    if (at_.empty()) return;
    std::size_t k = axes_.size() - 1;
    at_[k] += n;
    offset_ += n * axes_[k].stride;
    while (at_[k] == axes_[k].extent) {
      offset_ -= at_[k] * axes_[k].stride;
      at_[k] = 0;
      if (k == 0) return;  // wrapped past the end: back at the start
      --k;
      ++at_[k];
      offset_ += axes_[k].stride;
    }
  }
  void next() { advance(1); }

 private:
  const std::vector<Axis>& axes_;
  std::vector<std::int64_t> at_;
  std::int64_t offset_ = 0;
};

//! The results' packed strides along the kept axes (C order): what a result's index is.
inline std::vector<std::int64_t> packed_strides(const std::vector<Axis>& kept) {
  std::vector<std::int64_t> s(kept.size(), 1);
  for (std::size_t k = kept.size(); k-- > 1;) s[k - 1] = s[k] * kept[k].extent;
  return s;
}

}  // namespace xreduce::backend
