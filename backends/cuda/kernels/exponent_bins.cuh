#pragma once
// Exponent bins of floats, the exact sums' cheap form for f32 and bf16 (exact_sum.cuh: flat and
// column sums) and for f32, f16 and bf16 rows and segments (exact_segments.cuh). Bin c holds
// the floats whose exponent field is 16c to 16c + 15: each a multiple of 2^(16c - 150) (field 0,
// the subnormals, of 2^-149) below 2^(16c - 111), so 2^14 of them add exactly in a double, one
// addition an element whatever the data. Bin 15 also holds the infinities and NaNs (field 255).
// Also the tree of doubles that both files add a round's elements in.

namespace xreduce::cuda {

//! The sum of N doubles in a tree, halving them until one is left (`part` is spent).
template <int N>
__device__ inline double tree_sum(double (&part)[N]) {
  static_assert((N & (N - 1)) == 0, "the tree halves N until one part is left");
  if constexpr (N > 1) {
#pragma unroll
    for (int j = 0; j < N / 2; ++j) part[j] += part[j + N / 2];
    return tree_sum(reinterpret_cast<double(&)[N / 2]>(part));  // a halving a level: unrolled whole
  } else {
    return part[0];
  }
}

namespace exact {

constexpr int kFieldBins = 16, kFieldBinWidth = 16;  // the bins, of 16 exponent fields each

//! The bin of a float, from its bits (the sign's bit shifted out of the top five).
__device__ __forceinline__ unsigned field_bin(unsigned bits) { return bits >> 27 & (kFieldBins - 1); }

//! The weight of bin c's units (see above).
__device__ inline int field_bin_unit(int c) { return kFieldBinWidth * c - 150; }

//! Adds a finite float to the one of a lane's bins (`bins`: its bin 0, bin c kStride further)
//! that its exponent field picks (an infinity or a NaN: to bin 15, which then holds it).
template <int kStride>
__device__ inline void add_finite_to_bins(double* bins, float f) {
  bins[field_bin(__float_as_uint(f)) * kStride] += static_cast<double>(f);
}

}  // namespace exact
}  // namespace xreduce::cuda
