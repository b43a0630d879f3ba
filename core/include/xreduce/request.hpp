#pragma once
//! What to reduce (Request), how (Options), and what came back (Result).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "xreduce/scalar.hpp"
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
  std::string backend;  //!< a registered name, or "auto"; empty: XREDUCE_BACKEND, config, "auto"
  int block_size = 0;   //!< GPU threads per block (128, 256, 512, 1024); 0: the backend's default
  int threads = 0;      //!< CPU threads for parallel backends; 0: all hardware threads
  Accuracy accuracy = Accuracy::standard;
  std::size_t chunk_bytes = 0;  //!< GPU backends, host input: bytes per streamed chunk; 0: the measured default
  int streams = 0;              //!< GPU backends, host input: chunks in flight; 0: the measured default
  double gpu_fraction = 0;      //!< hybrid: the GPU's expected share, which sizes its claims; 0: config [hybrid], else 0.25
  std::string cpu_backend = {}; //!< hybrid: the CPU-parallel backend of its CPU part; empty: config, else by priority
};

struct Result {
  Scalar value;                         //!< of type result_dtype(request.dtype, request.op)
  std::optional<std::uint64_t> index;  //!< argmin/argmax only: lowest index of the extreme
  std::string backend;                  //!< the backend that ran (never "auto")
  std::vector<Scalar> values = {};      //!< width > 1: the k column results (`value` is the first); else empty
};

}  // namespace xreduce
