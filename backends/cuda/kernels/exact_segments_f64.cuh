#pragma once
// Exact sums of f64 rows and segments (Accuracy::exact, layouts inner and ragged) of device data,
// in two launches: the segments kernels of segmented.cuh with pairs of doubles a lane, then a
// block of digits for each segment the pairs did not settle.
//
// The f32 form (exact_segments.cuh) holds any segment in ten 32-bit digits; f64's 2098 bits of
// range would take 67 a lane. So each lane adds its elements by TwoSum to a pair of doubles, the
// sum and its rounding errors added in a second double, and adds the magnitudes of that second
// double's own rounding errors (each found exactly by TwoSum) in a third: a bound on the pair's
// distance from the exact sum, 0 where the second double was never rounded (TwoSumPair).
// Elements of 2^977 and more go to a second pair, times 2^-64 (exact there): the first pair's
// partial sums then stay below 2^1018 and the second's below 2^1000, so that neither leaves the
// doubles' range on data whose sum does not (random bit patterns, whose top binades would take a
// single pair past 2^1024 in most long segments). Pairs fold as pairs. As the CPU's f64 rows
// (core/src/backend/exact_in_double.hpp), a segment is written where the bound settles its
// rounding; else (a tie or near-tie within the bound, which takes a sum that cancels to 0 or
// nearly; an infinity or a NaN among its elements; large elements that cancel to a small sum;
// a sum within a binade of overflow) it is listed, and exact_f64_retry_kernel sums it again in
// ExactSum's digits (those of the flat f64 sums, exact_sum.cuh), a block a segment, and rounds it
// on the GPU. Each element costs the same whatever the data but for that branch between the
// pairs; a listed segment costs a block's fixed start and end (digits cleared, carried, summed
// across lanes, rounded by one thread), and a long one is read by that block alone: on an H100,
// power-law segments of random bit patterns took 3.95x a plain sum, and pairs x, -x (segments
// that cancel to 0) 9.96x, against 1.17-1.28x on uniform, wide and subnormal data.

#include "exact_f64_pairs.hpp"
#include "exact_segments.cuh"
#include "exact_sum.cuh"

namespace xreduce::cuda {

//! The segments kernels' policy for exact f64 sums: the partial is an F64Partial. Segments the
//! partials do not settle go to `retry` (`*retry_count` of them, in no order) for
//! exact_f64_retry_kernel; `bounds` gives write_segment each segment's length.
struct ExactSegmentSumF64 {
  using In = double;
  using acc_t = F64Partial;
  static constexpr Op op = Op::sum;
  struct Lifted {
    double x;
  };
  SegmentBounds bounds;
  unsigned long long* retry_count;
  std::uint64_t* retry;
  //! The small sum starts at -0, so that it is -0 exactly where every element added to it was -0
  //! (or none was).
  __host__ __device__ acc_t identity() const { return {{-0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}, 0u}; }
  __device__ Lifted lift(double x, index_t) const { return {x}; }
  __device__ acc_t operator()(acc_t a, const acc_t& b) const {
    a.add(b);
    return a;
  }
};

//! A lane's pairs (F64Partial::add). One a lane (one_accumulator): four, one for each load in
//! flight, spilled in the short-segment kernel under its cap of 64 registers (sm_90).
template <>
struct one_accumulator<ExactSegmentSumF64> : std::true_type {};
template <>
struct Accumulator<ExactSegmentSumF64> {
  F64Partial p;
  __device__ void init(const ExactSegmentSumF64& f) { p = f.identity(); }
  __device__ void add(const ExactSegmentSumF64&, ExactSegmentSumF64::Lifted e) { p.add(e.x); }
  __device__ F64Partial value(const ExactSegmentSumF64&) const { return p; }
};

__device__ inline void add_vector(Accumulator<ExactSegmentSumF64>& acc, const ExactSegmentSumF64& f, const Vec<double>& r,
                                  std::size_t) {
#pragma unroll
  for (int j = 0; j < vector_width<double>(); ++j) acc.add(f, {r.e[j]});
}

//! Segment s's exact sum, rounded once, into out[s], where its pairs settle it (an empty
//! segment's: +0); else s is listed for exact_f64_retry_kernel.
template <class Out>
__device__ inline void write_segment(const ExactSegmentSumF64& f, const F64Partial& a, std::uint64_t s, std::uint64_t, Out* out,
                                     std::uint64_t*) {
  static_assert(std::is_same_v<Out, double>, "exact f64 sums are written as f64");
  const std::uint64_t begin = f.bounds.begin(s), end = f.bounds.begin(s + 1);
  const std::uint64_t n = end > begin ? end - begin : 0;
  double r;
  if (n == 0) out[s] = 0.0;
  else if (rounded_by_error_bound(a, n, r)) out[s] = r;
  else f.retry[atomicAdd(f.retry_count, 1ull)] = s;
}

//! The lane digits a block of exact_f64_retry_kernel keeps in dynamic shared memory.
inline constexpr std::size_t kRetryLaneDigitBytes = sizeof(long long) * ExactSum::kDigits * exact::kDigitBlock;

//! The segments listed by the first launch (retry[0, *retry_count)), a block each, round the
//! grid: the block's lanes add the segment's elements to their digits (DigitSumLane, as the flat
//! f64 sums), infinities and NaNs to the block's counts, the lanes' digits are summed column by
//! column into the block's words, and its first thread rounds them into out[s]. Every element
//! costs the same, whatever the data.
__global__ __launch_bounds__(exact::kDigitBlock) void exact_f64_retry_kernel(const double* __restrict__ x, SegmentBounds b,
                                                                      const unsigned long long* retry_count,
                                                                      const std::uint64_t* retry, double* out) {
  extern __shared__ long long lane_digits[];  // digit d of lane t at d * exact::kDigitBlock + t
  __shared__ long long words[ExactSum::kWords];
  // A digit takes less than 2^52 + 2^32 an element: a lane carries every 2^10 of its elements.
  constexpr int kElementsPerCarry = 1 << 10;
  const unsigned long long count = *retry_count;
  for (unsigned long long i = blockIdx.x; i < count; i += gridDim.x) {
    const std::uint64_t s = retry[i], a = b.begin(s), end = b.begin(s + 1), e = end < a ? a : end;
    for (int w = threadIdx.x; w < ExactSum::kWords; w += exact::kDigitBlock) words[w] = 0;
    __syncthreads();  // words zeroed before any lane counts an infinity or a NaN in them
    exact::DigitSumLane lane(lane_digits, words);
    int since_carry = 0;
    for (std::uint64_t j = a + threadIdx.x; j < e; j += exact::kDigitBlock) {
      lane.add_one(x[j]);
      if (++since_carry == kElementsPerCarry) lane.carry(), since_carry = 0;
    }
    lane.deposit(lane_digits);
    __syncthreads();  // every column in words
    if (threadIdx.x == 0) {
      words[ExactSum::kCount] = static_cast<long long>(e - a);
      out[s] = round_exact_words(words);
    }
    __syncthreads();  // words read, and every lane's digits, before the next segment clears them
  }
}

}  // namespace xreduce::cuda
