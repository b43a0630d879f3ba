#pragma once
// Arrays for the command: read from .npy or raw files (memory-mapped), or generated.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "xreduce/types.hpp"

namespace xreduce::cli {

//! A 1-D array in host memory and whatever keeps it alive (a mapping or a buffer).
struct Array {
  DType dtype = DType::f32;
  std::size_t count = 0;
  const void* data = nullptr;
  std::shared_ptr<const void> owner;
  std::string description;  //!< "file.npy (npy 1.0)" or "random f32, seed 1"
};

//! Reads a NumPy .npy file: format 1.0, 2.0 or 3.0, 1-D, little-endian, one of the six dtypes.
//! Anything else (bad magic, big-endian, 2-D, truncated, trailing bytes) throws Error(io) saying
//! what is wrong and where.
Array read_npy(const std::filesystem::path& file);
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
