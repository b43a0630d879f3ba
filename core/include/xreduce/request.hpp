#pragma once
//! What to reduce (Request), how (Options), and what came back (Result).
//!
//! A request is the data and what to do with it: a flat array (`count` elements), an N-D view
//! with the axes to reduce (View, Axes; records and equal rows are two ways of building one), or
//! ragged segments (Segments); one op, or several computed in one read (`ops`); the results of a
//! request that has more than one go to the caller's `out`, or come back in Result::values.
//!
//! C++17, as the CUDA sources that include it are.

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "xreduce/exact.hpp"
#include "xreduce/scalar.hpp"
#include "xreduce/settings.hpp"
#include "xreduce/types.hpp"

namespace xreduce {

//! The index an empty segment's argmin/argmax reports: it has no element.
inline constexpr std::uint64_t no_index = ~std::uint64_t{0};

//! The most dimensions a view has.
inline constexpr std::size_t kMaxRank = 16;

//! An N-D strided view of the data, as numpy and DLPack describe one: the extent of each
//! dimension and the step between its elements, both in elements. A stride may be negative (a
//! reversed axis) or zero (a broadcast one).
struct View {
  std::size_t rank = 0;  //!< 0: no view (the request's `count` contiguous elements)
  std::int64_t shape[kMaxRank] = {};
  std::int64_t strides[kMaxRank] = {};

  //! A C-contiguous view of `shape` (the last dimension's stride 1). At most kMaxRank dimensions:
  //! Error(invalid_argument) beyond.
  static View of(std::initializer_list<std::int64_t> shape) { return of(shape.begin(), nullptr, shape.size()); }
  //! A view of `rank` dimensions: `shape`, and `strides` (null: C order).
  static View of(const std::int64_t* shape, const std::int64_t* strides, std::size_t rank) {
    if (rank > kMaxRank)
      throw Error(ErrorCode::invalid_argument, "a view of " + std::to_string(rank) + " dimensions: at most " +
                                                   std::to_string(kMaxRank) + " are read");
    View v;
    v.rank = rank;
    // In unsigned arithmetic: a view too large to hold wraps here, and is refused by every reducer.
    std::uint64_t step = 1;
    for (std::size_t k = rank; k-- > 0;) {
      v.shape[k] = shape[k];
      v.strides[k] = strides ? strides[k] : static_cast<std::int64_t>(step);
      step *= shape[k] > 0 ? static_cast<std::uint64_t>(shape[k]) : 1;
    }
    return v;
  }
  //! The same view with these strides, in elements.
  View with_strides(std::initializer_list<std::int64_t> s) const {
    View v = *this;
    std::size_t k = 0;
    for (std::int64_t stride : s)
      if (k < kMaxRank) v.strides[k++] = stride;
    return v;
  }
};

//! The axes of a view to reduce, by dimension number (numpy's `axis`, counted from 0). Empty: all
//! of them.
class Axes {
 public:
  constexpr Axes() = default;
  constexpr Axes(std::initializer_list<std::size_t> axes) {
    for (std::size_t a : axes) add(a);
  }
  static constexpr Axes from_bits(std::uint32_t bits) {
    Axes a;
    a.bits_ = bits;
    return a;
  }
  //! Adds `axis`; one past the 32nd is remembered as out of range (Reducer::reduce refuses it).
  constexpr Axes& add(std::size_t axis) {
    if (axis < 32) bits_ |= std::uint32_t{1} << axis;
    else beyond_ = true;
    return *this;
  }
  constexpr bool contains(std::size_t axis) const { return axis < 32 && ((bits_ >> axis) & 1u) != 0; }
  constexpr bool empty() const { return bits_ == 0 && !beyond_; }
  constexpr std::uint32_t bits() const { return bits_; }
  //! Whether every axis named is a dimension of a view of `rank`.
  constexpr bool within(std::size_t rank) const { return !beyond_ && (rank >= 32 || (bits_ >> rank) == 0); }
  friend constexpr bool operator==(Axes a, Axes b) { return a.bits_ == b.bits_ && a.beyond_ == b.beyond_; }
  friend constexpr bool operator!=(Axes a, Axes b) { return !(a == b); }

 private:
  std::uint32_t bits_ = 0;
  bool beyond_ = false;
};

//! Ragged segments of a flat request, each reduced on its own (the rows of a CSR matrix, a batch
//! of sequences of different lengths). Equal rows are a view instead (Request::rows).
struct Segments {
  std::size_t count = 0;  //!< how many segments
  //! `count + 1` non-decreasing offsets, at most Request::count, in the data's memory space:
  //! segment s is [offsets[s], offsets[s + 1]); elements outside [offsets[0], offsets[count])
  //! are not read. Null: the request is not segmented.
  const std::uint64_t* offsets = nullptr;

  static constexpr Segments at(const std::uint64_t* offsets, std::size_t count) { return {count, offsets}; }
  constexpr bool segmented() const { return offsets != nullptr; }
};

//! Where each op of a request with several ops (Request::ops) puts its results, indexed by Op:
//! `values[op]` holds one value of result_dtype(dtype, op) per result (one for a request with one
//! result), packed in the order of the results (see Request::out); `indices[op]` as many indices,
//! argmin/argmax only. Host memory, or device memory like the data (GPU backends). Only the
//! requested ops' pointers are read.
struct OpsOut {
  void* values[all_ops.size()] = {};
  std::uint64_t* indices[all_ops.size()] = {};
};

//! A type-erased reduction of `dtype` elements at `data` by `op`:
//!
//! - flat: `count` contiguous elements, one result;
//! - a view (view.rank > 0): the axes `axes` reduced (empty: all), one result per index of the
//!   kept axes, in their C order, as numpy's `x.sum(axis=...)`; argmin/argmax give the index
//!   along the reduced axes (several: flattened in C order; all: the index into the view
//!   flattened in C order, as numpy's `argmax(axis=None)`);
//! - ragged: `count` elements cut into `segments`, one result per segment.
//!
//! Build views with View::of, or Request::over, records and rows below.
struct Request {
  const void* data = nullptr;
  //! Flat and ragged requests: the elements. A view: not read (its shape says).
  std::size_t count = 0;
  DType dtype = DType::f32;
  Op op = Op::sum;
  Memory memory = Memory::automatic;
  //! A view's axes to reduce; empty: all of them.
  Axes axes = {};
  View view = {};
  //! A view's Result::shape keeps the reduced axes, as extents of 1 (numpy's keepdims).
  bool keepdims = false;
  //! Ragged: one result per segment. Empty segments give sum 0, prod 1, the op's identity for min
  //! and max (+inf / -inf for floats, the type's max / lowest for integers), and for
  //! argmin/argmax that identity with index `no_index`; indices are relative to the segment.
  Segments segments = {};
  //! A request with more than one result (a view with kept axes or keepdims, segments),
  //! optional: where the results go, values of result_dtype(dtype, op) in `out`, and for
  //! argmin/argmax the indices in `out_index`; host memory, or device memory like the data (GPU
  //! backends). Packed in C order of the result's shape unless `out_strides` says otherwise.
  //! Null: the results come back in Result::values and Result::indices.
  void* out = nullptr;
  std::uint64_t* out_index = nullptr;
  //! Optional, with `out`: the step between results along each kept axis, in elements (of
  //! `out` and of `out_index` alike), one per kept axis in order; host memory only.
  const std::int64_t* out_strides = nullptr;
  //! Several ops in one read of the data (every op but prod; the GPU backends take the core ops
  //! sum, min, max, argmin, argmax and sumsq): when not empty, `op` is not used and Result::ops
  //! has one entry per op, each under its own rules (docs/semantics.md says where the bits are
  //! the op's alone). Exact accuracy only for ops that do not round (extremes, indices, counts):
  //! an exact sum, mean or variance is one op at a time.
  OpSet ops = {};
  //! With `ops` and more than one result, optional: where each op's results go (as `out` for
  //! one op, packed). Null: they come back in Result::ops.
  const OpsOut* ops_out = nullptr;
  //! var, std, nanvar and nanstd: the divisor is n - correction (the Array API's `correction`,
  //! numpy's `ddof`): 0 the population's variance, 1 the sample's (Bessel's). Finite and not
  //! negative; where n - correction <= 0 the result is NaN, as numpy's.
  double correction = 0;

  //! A view: `axes` of `view` reduced by `op`.
  static Request over(const void* data, DType dtype, const View& view, Axes axes = {}, Op op = Op::sum) {
    Request q;
    q.data = data;
    q.dtype = dtype;
    q.op = op;
    q.view = view;
    q.axes = axes;
    return q;
  }
  //! Records: `count` records of `width` consecutive values, reduced column by column to `width`
  //! results (axis 0 of a count x width matrix).
  static Request records(const void* data, std::size_t count, std::size_t width, DType dtype, Op op) {
    return over(data, dtype, View::of({static_cast<std::int64_t>(count), static_cast<std::int64_t>(width)}), Axes{0}, op);
  }
  //! Equal rows: `rows` rows of `length` values each, one result per row (axis 1 of a rows x
  //! length matrix).
  static Request rows(const void* data, std::size_t rows, std::size_t length, DType dtype, Op op) {
    return over(data, dtype, View::of({static_cast<std::int64_t>(rows), static_cast<std::int64_t>(length)}), Axes{1}, op);
  }
};

//! One op's results, of a request with several ops.
struct OpResult {
  Op op = Op::sum;
  Scalar value;                         //!< of type result_dtype(dtype, op); the first result's
  std::optional<std::uint64_t> index;  //!< argmin/argmax only
  std::vector<Scalar> values = {};      //!< more than one result, without Request::ops_out: every one
  std::vector<std::uint64_t> indices = {};
};

//! How to run it. Empty or zero fields mean "not set here": the environment, then the config
//! file, then the defaults decide (see Config).
struct Options {
  std::string backend = {};  //!< a registered name, or "auto"; empty: XREDUCE_BACKEND, config, "auto"
  //! Deprecated: the CUDA module's setting `block_size` now (`settings.set("block_size", "512")`,
  //! `--set block_size=512`, `[backends.cuda] block_size = 512`). Still read: a nonzero value
  //! becomes that setting for a backend that declares it, unless the settings name it too.
  int block_size = 0;
  int threads = 0;      //!< CPU threads for parallel backends; 0: all hardware threads
  //! Accuracy::exact: sums of f32/f64 are the exact sum rounded once (other ops are exact
  //! anyway, except products and sums of squares of floats, which refuse it). Unset: the
  //! config's `accuracy`, else standard.
  std::optional<Accuracy> accuracy = std::nullopt;
  //! The running backend's own settings for this call, over its config table (`xreduce list
  //! --settings` shows each backend's keys): a named backend refuses keys it does not declare;
  //! with "auto", keys the chosen backend does not declare are left out.
  Settings settings = {};
  //! Sums, products and sums of squares of floats: the result's type, f32 or f64 as wide as the
  //! element type or wider (f16 and bf16 to f32 or f64, f32 to f64; result_dtype_allowed). The
  //! accumulation is the usual one (f32 lanes and f64 partials, or exact), rounded once, to this
  //! type: the f32 sum of a million f16 values is finite where their f16 sum is not. Results in
  //! Result::value and in `out` are of this type. Unset: the op's own (result_dtype). Other ops
  //! and types take only their own; a request of several ops takes none (invalid_argument).
  std::optional<DType> result_dtype = std::nullopt;
};

struct Result {
  Scalar value;                         //!< of type result_dtype(request.dtype, request.op, options.result_dtype); the first result's
  std::optional<std::uint64_t> index;  //!< argmin/argmax only: lowest index of the extreme
  std::string backend;                  //!< the backend that ran (never "auto")
  //! More than one result (a view with kept axes or keepdims, segments) without Request::out:
  //! every one, in C order of `shape` (`value` and `index` are the first's, if any). Else empty.
  std::vector<Scalar> values = {};
  std::vector<std::uint64_t> indices = {};  //!< argmin/argmax of the same, without Request::out_index
  //! The shape of the results: a view's kept axes (with keepdims, every axis, the reduced ones
  //! of extent 1), or the number of segments. Empty for a single result.
  std::vector<std::int64_t> shape = {};
  //! Accuracy::exact sums of floats, flat or records: the exact partial of each result, which
  //! `value`/`values` round. For combining with other parts of one sum (threads, GPUs, MPI
  //! ranks): add them, then ExactSum::round. An exact mean of a flat array: the exact partial of
  //! its sum; var and std: that, then the exact partial of the squares (exact_mean and
  //! exact_variance round them, combined or not).
  std::vector<ExactSum> exact = {};
  //! var and std of a flat array of floats (one op), where the backend keeps them
  //! (cuda.shuffle): the elements' moments, unrounded. Parts of one variance (MPI ranks, GPUs)
  //! combine them by Chan's update without a second read for the mean. Else empty.
  std::optional<Moments> moments = std::nullopt;
  //! Request::ops: one entry per op, in the order of all_ops (`value` and `index` above are the
  //! first one's). Else empty.
  std::vector<OpResult> ops = {};

  //! The entry of `op` in `ops`; throws Error(invalid_argument) if the request did not ask for it.
  const OpResult& of(Op op) const {
    for (const OpResult& r : ops)
      if (r.op == op) return r;
    throw Error(ErrorCode::invalid_argument, "the result has no " + std::string(to_string(op)) + ": the request's ops did not name it");
  }
};

}  // namespace xreduce
