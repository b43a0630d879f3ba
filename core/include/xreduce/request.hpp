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
};

//! How to run it. Empty or zero fields mean "not set here": the environment, then the config
//! file, then the defaults decide (see Config).
struct Options {
  std::string backend = {};  //!< a registered name, or "auto"; empty: XREDUCE_BACKEND, config, "auto"
  int block_size = 0;   //!< GPU threads per block (128, 256, 512, 1024); 0: the backend's default
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
  std::vector<Scalar> values = {};      //!< width > 1: the k column results (`value` is the first); else empty
  //! Accuracy::exact sums of floats: the exact partial of each column (one for width 1), which
  //! `value`/`values` round. A backend returns these; Reducer::reduce rounds them. For combining
  //! with other parts of one sum (threads, GPUs, MPI ranks): add them, then ExactSum::round.
  std::vector<ExactSum> exact = {};
};

}  // namespace xreduce
