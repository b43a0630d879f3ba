#pragma once
//! For backend authors: what kind of request a backend receives, and the terms its capabilities
//! are declared in. The core works out a request's Features once (features_of); a backend fits
//! a request when one of its FeatureSets contains them, a subset test on every feature.
//!
//! C++17, as the CUDA sources that include it are.

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "xreduce/request.hpp"
#include "xreduce/types.hpp"

namespace xreduce {

//! How well a backend does a set of requests.
enum class Support : std::uint8_t {
  none,     //!< refuses them with ErrorCode::unsupported
  exact,    //!< obeys the semantics table (floating sums within the stated tolerance)
  inexact,  //!< runs, but makes no accuracy promise (the seeds' naive loop)
};

//! How a request's elements are laid out, once canonical() has simplified its view: dimensions
//! of extent 1 dropped, reduced axes placed and merged by their strides. The classes are the ones
//! engines have kernels for; a backend receives a request in the canonical form of its class.
enum class Layout : std::uint8_t {
  //! Every element into one result: `count` contiguous elements at `data` (no view).
  all,
  //! Equal rows, each reduced: view (rows, length), strides (length, 1), axes {1}.
  inner,
  //! Columns: view (count, width), strides (width, 1), axes {0}: `count` records of `width`.
  outer,
  //! A batch of column reductions: view (batch, count, width), strides (count * width, width, 1),
  //! axes {1}.
  middle,
  //! Any other view: up to kMaxRank dimensions of any strides, any axes reduced.
  strided,
  //! Segments at offsets (Request::segments) of `count` elements, no view.
  ragged,
};
inline constexpr std::array<Layout, 6> all_layouts{Layout::all, Layout::inner, Layout::outer,
                                                   Layout::middle, Layout::strided, Layout::ragged};
inline constexpr std::array<std::string_view, 6> layout_names{"all", "inner", "outer", "middle", "strided", "ragged"};
constexpr std::string_view to_string(Layout l) { return layout_names[static_cast<int>(l)]; }

//! What kind of request it is: everything a backend's capabilities are tested against.
struct Features {
  DType dtype = DType::f32;
  OpSet ops = {Op::sum};   //!< the request's op, or the ops it computes together
  bool several = false;    //!< several ops in one pass (Request::ops), even if only one is named
  Layout layout = Layout::all;
  //! exact only where it changes what is computed: sums, means, variances and deviations of
  //! floats. Everything else is exact anyway.
  Accuracy accuracy = Accuracy::standard;
  Memory memory = Memory::host;  //!< where the data lives: host or device
  //! Results in f64 (wide_results): a float sum, product, sum of squares or statistic whose
  //! caller asked for another type than the op's own (Options::result_dtype). The backend returns its
  //! accumulator's value as f64 (Options::result_dtype is f64 in what it receives), and the core
  //! rounds it once to the type asked.
  bool wide = false;

  //! The features as one number, equal for equal features (a cache's key).
  constexpr std::uint64_t key() const {
    return (static_cast<std::uint64_t>(ops.bits()) << 32) | (static_cast<std::uint64_t>(dtype) << 24) |
           (static_cast<std::uint64_t>(layout) << 16) | (static_cast<std::uint64_t>(accuracy) << 8) |
           (wide ? 1u << 6 : 0u) | (static_cast<std::uint64_t>(memory) << 1) | (several ? 1u : 0u);
  }
  friend constexpr bool operator==(const Features& a, const Features& b) { return a.key() == b.key(); }
  friend constexpr bool operator!=(const Features& a, const Features& b) { return a.key() != b.key(); }
};

//! "argmax of f32, layout inner, device memory", for messages.
inline std::string to_string(const Features& f) {
  std::string ops;
  for (Op op : all_ops)
    if (f.ops.contains(op)) ops += (ops.empty() ? "" : ", ") + std::string(to_string(op));
  std::string text = f.several ? "several ops in one pass (" + ops + ")" : ops;
  text += " of " + std::string(to_string(f.dtype));
  if (f.layout != Layout::all) text += ", layout " + std::string(to_string(f.layout));
  if (f.accuracy == Accuracy::exact) text += ", accuracy exact";
  if (f.wide) text += ", results in f64 (a result_dtype other than the element type's)";
  return text + ", " + std::string(to_string(f.memory)) + " memory";
}

//! A set of requests a backend does: a set of values for each feature. It contains a request when
//! each of the request's features is in its set (several ops: all of them in `ops`).
class FeatureSet {
 public:
  // Defined before the builders that use them: clang evaluates a constexpr set in the class that
  // declares it, where a member defined further down is not yet usable.
  template <class E>
  static constexpr std::uint32_t bit(E e) {
    return 1u << static_cast<unsigned>(e);
  }
  static constexpr std::uint32_t kOne = 1, kSeveral = 2;
  static constexpr std::uint32_t kNarrow = 1, kWide = 2;

  //! Nothing yet: name the values of each feature (every dtype, every op... are the defaults of
  //! nothing; each builder below adds).
  constexpr FeatureSet() = default;

  constexpr FeatureSet& dtypes(std::initializer_list<DType> ts) {
    for (DType t : ts) dtypes_ |= bit(t);
    return *this;
  }
  template <std::size_t N>
  constexpr FeatureSet& dtypes(const std::array<DType, N>& ts) {
    for (DType t : ts) dtypes_ |= bit(t);
    return *this;
  }
  constexpr FeatureSet& every_dtype() {
    for (DType t : all_dtypes) dtypes_ |= bit(t);
    return *this;
  }
  constexpr FeatureSet& ops(OpSet ops) {
    ops_ = OpSet::from_bits(ops_.bits() | ops.bits());
    return *this;
  }
  constexpr FeatureSet& layouts(std::initializer_list<Layout> ls) {
    for (Layout l : ls) layouts_ |= bit(l);
    return *this;
  }
  constexpr FeatureSet& every_layout() {
    for (Layout l : all_layouts) layouts_ |= bit(l);
    return *this;
  }
  //! Sums of floats exactly too (Accuracy::exact), not only within the tolerance.
  constexpr FeatureSet& exact_sums() {
    accuracies_ |= bit(Accuracy::exact);
    return *this;
  }
  //! Only exact results (Accuracy::exact: the sums, means, variances and deviations among the
  //! ops), not standard ones.
  constexpr FeatureSet& only_exact_sums() {
    accuracies_ = bit(Accuracy::exact);
    return *this;
  }
  constexpr FeatureSet& memory(std::initializer_list<Memory> ms) {
    memory_ = 0;
    for (Memory m : ms) memory_ |= bit(m);
    return *this;
  }
  //! Several of `ops` together in one pass (Request::ops), as well as one at a time.
  constexpr FeatureSet& together() {
    passes_ |= kSeveral;
    return *this;
  }
  //! Only several together, not one at a time.
  constexpr FeatureSet& only_together() {
    passes_ = kSeveral;
    return *this;
  }
  //! Float sums, products, sums of squares and statistics whose results are asked in another
  //! type (Features::wide): the backend returns them as f64, its accumulator's value.
  constexpr FeatureSet& wide_results() {
    widths_ |= kWide;
    return *this;
  }
  constexpr bool takes_wide_results() const { return (widths_ & kWide) != 0; }
  //! The promise for the requests of this set: Support::exact (the semantics table, the default)
  //! or Support::inexact (runs, promises nothing of accuracy).
  constexpr FeatureSet& support(Support s) {
    support_ = s;
    return *this;
  }

  constexpr bool contains(const Features& f) const {
    return (dtypes_ & bit(f.dtype)) != 0 && (layouts_ & bit(f.layout)) != 0 && (accuracies_ & bit(f.accuracy)) != 0 &&
           (memory_ & bit(f.memory)) != 0 && (passes_ & (f.several ? kSeveral : kOne)) != 0 && ops_.contains(f.ops) &&
           (widths_ & (f.wide ? kWide : kNarrow)) != 0;
  }

  constexpr std::uint32_t dtype_bits() const { return dtypes_; }
  constexpr OpSet op_set() const { return ops_; }
  constexpr std::uint32_t layout_bits() const { return layouts_; }
  constexpr std::uint32_t accuracy_bits() const { return accuracies_; }
  constexpr std::uint32_t memory_bits() const { return memory_; }
  //! Bit 0: one op a request; bit 1: several together.
  constexpr std::uint32_t pass_bits() const { return passes_; }
  constexpr Support promise() const { return support_; }
  //! The set of these bits (the plugin ABI's form); bits of no known value are dropped.
  static constexpr FeatureSet from_bits(std::uint32_t dtypes, std::uint32_t ops, std::uint32_t layouts, std::uint32_t accuracies,
                                        std::uint32_t memory, std::uint32_t passes, Support support) {
    FeatureSet s;
    s.dtypes_ = dtypes & ((1u << all_dtypes.size()) - 1);
    s.ops_ = OpSet::from_bits(ops);
    s.layouts_ = layouts & ((1u << all_layouts.size()) - 1);
    s.accuracies_ = accuracies & 3u;
    s.memory_ = memory & (bit(Memory::host) | bit(Memory::device));
    s.passes_ = passes & (kOne | kSeveral);
    s.support_ = support;
    return s;
  }


 private:
  std::uint32_t dtypes_ = 0;
  OpSet ops_ = {};
  std::uint32_t layouts_ = 0;
  std::uint32_t accuracies_ = bit(Accuracy::standard);
  std::uint32_t memory_ = bit(Memory::host);
  std::uint32_t passes_ = kOne;
  std::uint32_t widths_ = kNarrow;
  Support support_ = Support::exact;
};

//! The request as backends receive it: its view simplified to the canonical form of its Layout.
//! Dimensions of extent 1 go (one is kept, or put in, where the result has a shape but no axis of
//! it is left); the reduced axes are placed among the kept ones by their strides (the kept ones
//! keep their order, the results' order); for ops without an index (no argmin/argmax), reduced
//! axes with negative strides are walked forwards and ordered by stride (which changes nothing
//! but the rounding of float sums); adjacent axes that are contiguous with each other are
//! merged. A view that is one contiguous run of elements all reduced becomes flat. `count` is the
//! number of elements read; `keepdims`, `out`, `out_index` and `out_strides` are cleared (the
//! core hands backends packed results to write). A request without a view is returned as it is.
//! Throws Error(invalid_argument) for a bad view: negative extents, axes beyond its rank, more
//! than 2^62 elements, segments with it.
Request canonical(const Request& request);

// Inline from here on, so that a plugin, built against the headers alone, needs nothing from the
// core to know what it received.

//! The layout class of a canonical request.
inline Layout layout_of(const Request& c) {
  if (c.segments.segmented()) return Layout::ragged;
  const View& v = c.view;
  if (v.rank == 0) return Layout::all;
  const std::uint32_t axes = c.axes.bits();
  if (v.rank == 2 && v.strides[1] == 1 && v.strides[0] == v.shape[1]) {
    if (axes == 0b10) return Layout::inner;
    if (axes == 0b01) return Layout::outer;
  }
  if (v.rank == 3 && axes == 0b010 && v.strides[2] == 1 && v.strides[1] == v.shape[2] && v.strides[0] == v.shape[1] * v.shape[2])
    return Layout::middle;
  return Layout::strided;
}

//! The features of a canonical request run with `accuracy` (resolved: Options, else the config)
//! and a result type asked for or not (Options::result_dtype): a float sum of device data whose
//! result is asked in another type runs exactly.
inline Features features_of(const Request& c, Accuracy accuracy, std::optional<DType> result = std::nullopt) {
  Features f;
  f.dtype = c.dtype;
  f.several = !c.ops.empty();
  f.ops = f.several ? c.ops : OpSet{c.op};
  f.layout = layout_of(c);
  // Exact: sums of floats, and the mean, var and std of floats (one op).
  const bool exact_op = f.ops.contains(Op::sum) || (!f.several && exact_statistic(c.op));
  f.accuracy = accuracy == Accuracy::exact && is_floating(c.dtype) && exact_op ? Accuracy::exact : Accuracy::standard;
  f.memory = c.memory == Memory::device ? Memory::device : Memory::host;
  // A result type other than the op's own: an exact sum needs nothing more (the core rounds its
  // partials to the type asked); a float sum of device data becomes one, which the GPU kernels
  // do at the speed of a plain sum, where they hand on partials, not f64 accumulators; the rest
  // return wide results.
  const bool other_type = result && !f.several && *result != result_dtype(c.dtype, c.op);
  if (other_type && f.memory == Memory::device && is_floating(c.dtype) && c.op == Op::sum) f.accuracy = Accuracy::exact;
  f.wide = other_type && f.accuracy != Accuracy::exact;  // an exact mean or var: the core rounds its partials
  return f;
}

//! How many exact partials (ExactSum: Result::exact, and the plugin ABI's request `exact`) a
//! canonical request run with features `f` hands on: with Accuracy::exact, of layout all one (a
//! sum's or mean's, of x) or two (a var's or std's: of x, then of x squared), of layout outer
//! one a column; none otherwise.
inline std::size_t exact_partial_count(const Request& c, const Features& f) {
  if (f.accuracy != Accuracy::exact) return 0;
  if (f.layout == Layout::outer) return static_cast<std::size_t>(c.view.shape[1]);
  if (f.layout != Layout::all) return 0;
  return !f.several && (c.op == Op::var || c.op == Op::std) ? 2 : 1;
}

//! Whether a backend is to return wide results (Features::wide): Reducer::reduce hands it Options
//! whose result_dtype is f64 then, and unset otherwise.
inline bool wide_results(const Options& o) { return o.result_dtype.has_value(); }

//! How many results a canonical request has: one (layout all), one per row, column, batch and
//! column, index of the kept axes, or segment.
inline std::uint64_t result_count(const Request& c) {
  if (c.segments.segmented()) return c.segments.count;
  std::uint64_t n = 1;
  for (std::size_t k = 0; k < c.view.rank; ++k)
    if (!c.axes.empty() && !c.axes.contains(k)) n *= static_cast<std::uint64_t>(c.view.shape[k]);
  return n;
}

//! The result's shape of a request as the caller gave it (Result::shape): a view's kept axes
//! (keepdims: all, the reduced ones 1), the number of segments; empty for one result.
std::vector<std::int64_t> result_shape(const Request& request);

}  // namespace xreduce
