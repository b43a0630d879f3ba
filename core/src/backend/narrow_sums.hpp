#pragma once
// Sums of one leaf (at most a few thousand elements) of the 8- and 16-bit types, with the vector
// instructions that fit them, for SumPolicy's leaves (cpu_kernels.hpp). Written by hand because no
// compiler turned the generic lane loop into them: on an H100 host's core it read u8 at 1.9 GB/s
// and f16 at 3.2 GB/s, against 10.3 GB/s for f32.
//
// Integers: the exact sum (bytes by SSE2's sum of absolute differences against zero, 16-bit values
// by its multiply-add against ones, AVX2 where the processor has it; signed values biased to
// unsigned and the bias taken back).
// f16: widened by F16C where the processor has it (checked once, at run time), else by the
// portable conversion; bf16: widened by interleaving with zeros (AVX2 where the processor has it,
// else SSE2). Both summed in float lanes, as f32 leaves are, four vectors at a time. Each loop asks
// for its input ahead of its reads (prefetch.hpp): without, on the build machine's Xeon, the 16-bit
// types and i8 read 77-90% of the read probe; with it and AVX2's 16-bit sums, 101-117%.

#include <cstddef>
#include <cstdint>

#include "xreduce/float16.hpp"

namespace xreduce::detail {

//! The float lanes of an f16 or bf16 leaf: every form of leaf_sum below keeps 32 (four vectors
//! of eight, or eight of four), so that a leaf of 2 * kBlock of them adds 16 values to a lane, as
//! an f32 leaf of kBlock does to its 16 lanes: the bound of cpu_kernels.hpp holds, and a leaf's
//! fixed cost (its horizontal sum, a push onto the pairwise stack) is paid once per 1 KiB.
inline constexpr std::size_t kFloat16Lanes = 32;

std::uint64_t leaf_sum(const std::uint8_t* x, std::size_t n);
std::int64_t leaf_sum(const std::int8_t* x, std::size_t n);
std::uint64_t leaf_sum(const std::uint16_t* x, std::size_t n);
std::int64_t leaf_sum(const std::int16_t* x, std::size_t n);
float leaf_sum(const f16* x, std::size_t n);
float leaf_sum(const bf16* x, std::size_t n);
//! x[0..n) widened to float, exactly (f16 by F16C where the processor has it): for the exact sums
//! that add them in double (exact_in_double.hpp).
void widen(const f16* x, std::size_t n, float* out);
void widen(const bf16* x, std::size_t n, float* out);
//! Bools are bytes 0 or 1: their count is the bytes' sum.
inline std::uint64_t leaf_sum(const bool* x, std::size_t n) { return leaf_sum(reinterpret_cast<const std::uint8_t*>(x), n); }

//! Whether leaf_sum has a form for T.
template <class T>
inline constexpr bool has_leaf_sum =
    std::is_same_v<T, std::uint8_t> || std::is_same_v<T, std::int8_t> || std::is_same_v<T, std::uint16_t> ||
    std::is_same_v<T, std::int16_t> || std::is_same_v<T, bool> || is_float16_v<T>;

}  // namespace xreduce::detail
