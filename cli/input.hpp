#pragma once
// Arrays for the command: read from .npy or raw files (memory-mapped), or generated.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "xreduce/request.hpp"
#include "xreduce/types.hpp"

namespace xreduce::cli {

//! An array in host memory and whatever keeps it alive (a mapping or a buffer).
struct Array {
  DType dtype = DType::f32;
  std::size_t count = 0;  //!< elements
  const void* data = nullptr;
  std::shared_ptr<const void> owner;
  std::string description;  //!< "file.npy (npy 1.0)" or "random f32, seed 1"
  //! Its dimensions (one, {count}, for a raw file or --n), in C order or, if `fortran`, in Fortran
  //! order (the first dimension varies fastest).
  std::vector<std::int64_t> shape;
  bool fortran = false;
  //! The array as a view (C or Fortran strides).
  View view() const;
};

//! Reads a NumPy .npy file: format 1.0, 2.0 or 3.0, of up to 16 dimensions in C or Fortran order
//! (0-d: one element), little-endian, of a DType: numpy's <f2 <f4 <f8 |i1 <i2 <i4 <i8 |u1 <u2 <u4 <u8
//! |b1, and <V2 (two opaque bytes: what ml_dtypes writes for bfloat16) when `dtype` names a 16-bit
//! type (`dtype` is not read otherwise: the caller compares it with the file's). Anything else (bad
//! magic, big-endian, truncated, trailing bytes) throws Error(io) saying what is wrong and where.
Array read_npy(const std::filesystem::path& file, std::optional<DType> dtype = std::nullopt);

//! Writes `values` (`count` packed elements of `dtype`) as a .npy file (format 1.0, C order) of
//! `shape` (empty: a 0-d array). Throws Error(io).
void write_npy(const std::filesystem::path& file, DType dtype, const std::vector<std::int64_t>& shape, const void* values);

//! A shape given as text, "100,200,3" (`option` names it in messages): 1 to 16 extents, each a
//! count as parse_count takes it, whose product is at most 2^62. Throws Error(invalid_argument).
std::vector<std::int64_t> parse_shape(const std::string& text, const std::string& option);
//! Axes given as text, "0,2" or "-1" (counted from the end, as numpy does), of a view of `rank`
//! dimensions: each once, each in [-rank, rank). Empty text: no axes (all). Throws
//! Error(invalid_argument) saying which is wrong.
Axes parse_axes(const std::string& text, std::size_t rank);
//! Reads a raw file of little-endian elements of `dtype`.
Array read_raw(const std::filesystem::path& file, DType dtype);
//! `.npy` by content (magic bytes), otherwise raw with `dtype` (required then).
Array read_input(const std::filesystem::path& file, std::optional<DType> dtype);

//! A count given as text (`option` names it in the message): decimal digits only, no sign and no
//! leading zero, at most 2^62. Throws Error(invalid_argument) otherwise.
std::size_t parse_count(const std::string& text, const std::string& option);

//! n pseudo-random elements, the same for the same seed on every machine: floats uniform in
//! [0, 1), signed integers in [-2^20, 2^20), unsigned ones in [0, 2^20). Element i is a function
//! of (seed, first + i) alone, so that a slice starting at `first` is the same slice of the whole.
//! Throws Error(invalid_argument) for a count the address space cannot hold, Error(out_of_memory)
//! when the memory cannot be had.
Array generate(DType dtype, std::size_t n, std::uint64_t seed, std::size_t first = 0);

}  // namespace xreduce::cli
