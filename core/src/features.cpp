// A request's shape of work, worked out once: its canonical form (the simplest view of the same
// reduction), its layout class, its features, and the shape of its results.

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "xreduce/backend/features.hpp"
#include "xreduce/backend/registry.hpp"
#include "xreduce/error.hpp"

namespace xreduce {
namespace {

struct Dim {
  std::int64_t extent, stride;
  bool reduced;
};

//! Whether the request returns an index (argmin, argmax and their nan forms), alone or among
//! several ops: the order of its reduced axes then decides which of equal elements it names.
bool has_index(const Request& q) {
  if (q.ops.empty()) return returns_index(q.op);
  for (Op op : all_ops)
    if (q.ops.contains(op) && returns_index(op)) return true;
  return false;
}

//! Whether dimension k of q's view is reduced.
bool reduced_axis(const Request& q, std::size_t k) { return q.axes.empty() || q.axes.contains(k); }

//! Whether the results of q have a shape (a view with a kept axis, or keepdims): then they are
//! an array, even of one.
bool shaped_result(const Request& q) {
  if (q.view.rank == 0) return false;
  if (q.keepdims) return true;
  for (std::size_t k = 0; k < q.view.rank; ++k)
    if (!reduced_axis(q, k)) return true;
  return false;
}

void check_view(const Request& q) {
  const View& v = q.view;
  if (v.rank > kMaxRank)
    throw Error(ErrorCode::invalid_argument, "a view of rank " + std::to_string(v.rank) + ": at most " + std::to_string(kMaxRank));
  if (!q.axes.within(v.rank))
    throw Error(ErrorCode::invalid_argument, "an axis to reduce is not a dimension of the view (rank " + std::to_string(v.rank) + ")");
  if (q.segments.segmented()) throw Error(ErrorCode::invalid_argument, "a request is a view or segmented, not both");
  for (std::size_t k = 0; k < v.rank; ++k)
    if (v.shape[k] < 0)
      throw Error(ErrorCode::invalid_argument, "the view's extent " + std::to_string(k) + " is negative (" + std::to_string(v.shape[k]) + ")");
  // No memory holds an axis that reaches further, and within it every product of an extent and a
  // stride, counted in bytes too, fits in 64 bits.
  constexpr std::uint64_t kReach = std::uint64_t{1} << 59;
  for (std::size_t k = 0; k < v.rank; ++k) {
    const std::int64_t s = v.strides[k];
    const std::uint64_t step = s < 0 ? std::uint64_t{0} - static_cast<std::uint64_t>(s) : static_cast<std::uint64_t>(s);
    if (v.shape[k] > 1 && step > kReach / static_cast<std::uint64_t>(v.shape[k] - 1))
      throw Error(ErrorCode::invalid_argument, "the view's axis " + std::to_string(k) + " (extent " + std::to_string(v.shape[k]) +
                                                   ", stride " + std::to_string(s) + ") reaches past 2^59 elements");
  }
}

//! The elements of a view, at most 2^62.
std::uint64_t elements_of(const View& v) {
  std::uint64_t n = 1;
  for (std::size_t k = 0; k < v.rank; ++k) {
    const auto e = static_cast<std::uint64_t>(v.shape[k]);
    if (e == 0) return 0;
    if (n > (std::uint64_t{1} << 62) / e)
      throw Error(ErrorCode::invalid_argument, "the view holds more than 2^62 elements");
    n *= e;
  }
  return n;
}

//! Dims merged where the outer one steps over the whole inner one, of the same kind.
std::vector<Dim> merged(const std::vector<Dim>& dims) {
  std::vector<Dim> out;
  for (const Dim& d : dims) {
    if (!out.empty() && out.back().reduced == d.reduced && out.back().stride == d.extent * d.stride) {
      out.back().extent *= d.extent;
      out.back().stride = d.stride;
    } else {
      out.push_back(d);
    }
  }
  return out;
}

}  // namespace

Request canonical(const Request& q) {
  if (q.view.rank == 0) return q;
  check_view(q);
  Request c = q;
  c.keepdims = false;
  c.out = nullptr;
  c.out_index = nullptr;
  c.out_strides = nullptr;
  c.ops_out = nullptr;
  c.count = static_cast<std::size_t>(elements_of(q.view));
  if (c.count == 0) {
    // The core answers an empty view itself, from its shape; C-order strides of the extents as
    // they are (no element is read) put it in the class its shape has, so that a backend that
    // does records does empty ones too.
    std::int64_t step = 1;
    for (std::size_t k = c.view.rank; k-- > 0;) {
      c.view.strides[k] = step;
      step *= c.view.shape[k];
    }
    return c;
  }

  // The kept axes in their order (the results' order), the reduced ones apart.
  std::vector<Dim> kept, reduced;
  // An address, moved in integers: no pointer arithmetic on a caller's pointer that may not point
  // into an array this code can see.
  auto base = reinterpret_cast<std::uintptr_t>(q.data);
  const auto element = static_cast<std::int64_t>(size_of(q.dtype));
  const bool order_free = !has_index(q);
  for (std::size_t k = 0; k < q.view.rank; ++k) {
    Dim d{q.view.shape[k], q.view.strides[k], reduced_axis(q, k)};
    if (d.extent == 1) continue;
    if (d.reduced && order_free && d.stride < 0) {  // walked forwards: the same elements
      base += static_cast<std::uintptr_t>((d.extent - 1) * d.stride * element);
      d.stride = -d.stride;
    }
    (d.reduced ? reduced : kept).push_back(d);
  }
  auto wider = [](const Dim& a, const Dim& b) { return std::llabs(a.stride) > std::llabs(b.stride); };
  if (order_free) std::stable_sort(reduced.begin(), reduced.end(), wider);
  // The two sequences merged by stride, widest first, each keeping its own order.
  std::vector<Dim> dims;
  std::size_t i = 0, j = 0;
  while (i < kept.size() || j < reduced.size()) {
    if (j < reduced.size() && (i == kept.size() || wider(reduced[j], kept[i]))) dims.push_back(reduced[j++]);
    else dims.push_back(kept[i++]);
  }
  dims = merged(dims);
  // A dimension of extent 1 where the reduction needs one: a reduced one if every reduced axis
  // had extent 1, a kept one if the results have a shape but no kept axis is left. Its stride
  // keeps the view in its class's canonical form (any stride reads the same one element).
  // A view has at most kMaxRank dimensions: sixteen that no strides join leave no room for one
  // more (all of them reduced, with keepdims; found by fuzz_view_args).
  auto room = [&] {
    if (dims.size() >= kMaxRank)
      throw Error(ErrorCode::unsupported, "a view of " + std::to_string(kMaxRank) + " dimensions that no strides join, every one " +
                                              "reduced, with keepdims: there is no room for the results' axis; reduce it without " +
                                              "keepdims, or a contiguous copy of it");
  };
  auto in_front = [&](bool is_reduced) {
    room();
    const std::int64_t stride = dims.empty() ? 1 : dims.front().extent * dims.front().stride;
    dims.insert(dims.begin(), Dim{1, stride, is_reduced});
  };
  // An axis of extent 1 reduced goes after the kept ones if the view's last axis is reduced (rows
  // of one element stay rows: layout inner), else before them (one record stays records: outer).
  if (std::none_of(dims.begin(), dims.end(), [](const Dim& d) { return d.reduced; })) {
    if (reduced_axis(q, q.view.rank - 1) && !dims.empty()) room(), dims.push_back(Dim{1, 1, true});
    else in_front(true);
  }
  if (shaped_result(q) && std::all_of(dims.begin(), dims.end(), [](const Dim& d) { return d.reduced; })) in_front(false);

  c.data = reinterpret_cast<const void*>(base);
  if (dims.size() == 1 && dims[0].stride == 1) {  // one contiguous run, all reduced: flat
    c.view = View{};
    c.axes = Axes{};
    return c;
  }
  c.view = View{};
  c.view.rank = dims.size();
  c.axes = Axes{};
  for (std::size_t k = 0; k < dims.size(); ++k) {
    c.view.shape[k] = dims[k].extent;
    c.view.strides[k] = dims[k].stride;
    if (dims[k].reduced) c.axes.add(k);
  }
  return c;
}




std::vector<std::int64_t> result_shape(const Request& q) {
  if (q.segments.segmented()) return {static_cast<std::int64_t>(q.segments.count)};
  std::vector<std::int64_t> shape;
  for (std::size_t k = 0; k < q.view.rank; ++k) {
    if (!reduced_axis(q, k)) shape.push_back(q.view.shape[k]);
    else if (q.keepdims) shape.push_back(1);
  }
  return shape;
}


Workload Workload::of(const Request& c, bool pinned, Accuracy accuracy, std::optional<DType> result) {
  Workload w;
  w.features = features_of(c, accuracy, result);
  w.elements = c.count;
  if (w.features.layout == Layout::inner) w.segments = static_cast<std::uint64_t>(c.view.shape[0]);
  if (w.features.layout == Layout::ragged) w.segments = c.segments.count;
  w.pinned = pinned;
  return w;
}

}  // namespace xreduce
