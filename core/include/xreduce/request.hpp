#pragma once
//! What to reduce (Request), how (Options), and what came back (Result).

#include <cstddef>
#include <cstdint>
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

//! A request cut into consecutive segments, each reduced on its own (numpy's `sum(axis=1)` of a
//! matrix, the rows of a CSR matrix, a batch of sequences). Either equal rows, or offsets.
struct Segments {
  //! How many segments; zero (with no offsets) means the request is not segmented.
  std::size_t count = 0;
  //! Null: `count` equal rows of Request::count / count elements (count must divide it).
  //! Else `count + 1` non-decreasing offsets, at most Request::count, in the data's memory
  //! space: segment s is [offsets[s], offsets[s + 1]); elements outside [offsets[0],
  //! offsets[count]) are not read.
  const std::uint64_t* offsets = nullptr;

  static constexpr Segments rows(std::size_t r) { return {r, nullptr}; }
  static constexpr Segments at(const std::uint64_t* offsets, std::size_t count) { return {count, offsets}; }
  constexpr bool segmented() const { return count > 0 || offsets != nullptr; }
};

//! Where each op of a request with several ops (Request::ops) puts its results, indexed by Op:
//! `values[op]` holds one value of result_dtype(dtype, op) per segment (one for an unsegmented
//! request), packed; `indices[op]` as many indices, argmin/argmax only. Host memory, or device
//! memory like the data (GPU backends). Only the requested ops' pointers are read.
struct OpsOut {
  void* values[all_ops.size()] = {};
  std::uint64_t* indices[all_ops.size()] = {};
};

//! A type-erased reduction: `count` elements of `dtype` at `data`, combined by `op`.
//! With `width` k > 1 the data are `count` records of k consecutive values each (row-major,
//! count * k elements), reduced column by column to k results: sum, prod, min and max only.
struct Request {
  const void* data = nullptr;
  std::size_t count = 0;
  DType dtype = DType::f32;
  Op op = Op::sum;
  Memory memory = Memory::automatic;
  std::size_t width = 1;
  //! Segmented: one result per segment (width 1 only). Empty segments give sum 0, prod 1, the
  //! op's identity for min and max (+inf / -inf for floats, the type's max / lowest for
  //! integers), and for argmin/argmax that identity with index `no_index`.
  Segments segments = {};
  //! Segmented only, optional: where the results go, `segments.count` packed values of
  //! result_dtype(dtype, op) in `out`, and for argmin/argmax as many indices, each relative to
  //! its segment's start, in `out_index`; host memory, or device memory like the data (GPU
  //! backends). Null: the results come back in Result::values and Result::indices.
  void* out = nullptr;
  std::uint64_t* out_index = nullptr;
  //! Several ops in one read of the data (any of sum, min, max, argmin, argmax and sumsq): when
  //! not empty, `op` is not used and Result::ops has one entry per op. Single values (width 1),
  //! flat or segmented; empty segments give each op what it gives alone. Standard accuracy
  //! only: an exact sum is one op at a time.
  OpSet ops = {};
  //! Segmented requests with `ops` only, optional: where each op's per-segment results go (as
  //! `out` for one op). Null: they come back in Result::ops.
  const OpsOut* ops_out = nullptr;
};

//! One op's results, of a request with several ops.
struct OpResult {
  Op op = Op::sum;
  Scalar value;                         //!< of type result_dtype(dtype, op); the first segment's
  std::optional<std::uint64_t> index;  //!< argmin/argmax only
  std::vector<Scalar> values = {};      //!< segmented without Request::ops_out: one per segment
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
  //! anyway, except products of floats, which refuse it). Unset: the config's `accuracy`, else
  //! standard.
  std::optional<Accuracy> accuracy = std::nullopt;
  //! The running backend's own settings for this call, over its config table (`xreduce list
  //! --settings` shows each backend's keys): a named backend refuses keys it does not declare;
  //! with "auto", keys the chosen backend does not declare are left out.
  Settings settings = {};
};

struct Result {
  Scalar value;                         //!< of type result_dtype(request.dtype, request.op)
  std::optional<std::uint64_t> index;  //!< argmin/argmax only: lowest index of the extreme
  std::string backend;                  //!< the backend that ran (never "auto")
  //! width > 1: the k column results (`value` is the first). Segmented without Request::out: one
  //! per segment (`value` and `index` are then the first segment's, if any). Else empty.
  std::vector<Scalar> values = {};
  std::vector<std::uint64_t> indices = {};  //!< segmented argmin/argmax without Request::out_index
  //! Accuracy::exact sums of floats: the exact partial of each column (one for width 1), which
  //! `value`/`values` round. A backend returns these; Reducer::reduce rounds them. For combining
  //! with other parts of one sum (threads, GPUs, MPI ranks): add them, then ExactSum::round.
  std::vector<ExactSum> exact = {};
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
