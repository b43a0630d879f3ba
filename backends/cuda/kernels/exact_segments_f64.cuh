#pragma once
// Exact sums of f64 rows and segments (Accuracy::exact, layouts inner and ragged) of device data,
// in launches: the segments kernels of segmented.cuh with pairs of doubles a lane, then digits for
// each segment the pairs did not settle.
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
// rounding or puts it past the threshold of overflow; else (a tie or near-tie within the bound,
// which takes a sum that cancels to 0 or nearly; an infinity or a NaN among its elements; large
// elements that cancel to a small sum; a sum at the threshold of overflow) it is listed, and
// summed again in ExactSum's digits (those of the flat f64 sums, exact_sum.cuh), rounded on the
// GPU: a segment of up to kWarpRetryMost elements by a warp (exact_f64_warp_retry_kernel), a
// longer one by a block a chunk of kRetryChunk elements (exact_f64_chunk_retry_kernel), the last
// of its chunks' blocks rounding it. Each element costs the same whatever the data but for that
// branch between the pairs, and a listed segment costs a warp's or a block's fixed start and end.
// On an H100, power-law segments of 2^28 f64 over the plain segment sums: uniform and subnormal
// data 1.17x, random sign over 2^-600..2^600 1.19x, random bits 1.32x, pairs x, -x (segments that
// cancel to 0: each listed) 1.31x; with a block a listed segment, whole, and without the exact
// overflow threshold, random bits took 3.95x and pairs 9.96x.

#include "exact_f64_pairs.hpp"
#include "exact_segments.cuh"
#include "exact_sum.cuh"

namespace xreduce::cuda {

//! A listed segment of more than kWarpRetryMost elements is summed again in chunks of this many
//! elements (the last taking the rest), a block each: 512 KiB, long enough that a block's start
//! and end are small next to its reading, short enough that a segment of 2^24 spreads over 256
//! blocks (where one block read it whole before).
inline constexpr std::uint64_t kRetryChunk = std::uint64_t{1} << 16;
//! A listed segment of at most this many elements is summed again by a warp, whose shared digits
//! take less than 2^52 + 2^32 an element: 2^10 of them stay below 2^63 without a carry.
inline constexpr std::uint64_t kWarpRetryMost = std::uint64_t{1} << 10;

//! A chunk of a listed segment: its elements [chunk kRetryChunk, (chunk + 1) kRetryChunk) from
//! the segment's start, of `chunks`; a segment of several chunks adds them up in its `slot`.
struct RetryChunk {
  std::uint64_t segment;
  unsigned chunk, chunks, slot;
};

//! What the first launch lists for the second and third (device memory, the workspace's): the
//! counts, the short segments (`warp_segments`, room for every segment), the long ones' chunks
//! (room for `room_chunks`), and for each segment of several chunks (a slot, room for
//! `room_slots`) ExactSum's words of its chunks so far and how many of them are in. The room
//! holds every listing of segments that do not overlap; bad offsets (reported after the launch)
//! may overrun it, and what does not fit is marked as no segment.
struct F64RetryLists {
  enum Count : int { kWarpSegments, kChunks, kSlots, kCounts };
  unsigned long long* counts;  // kCounts of them, zero before the first launch
  std::uint64_t* warp_segments;
  RetryChunk* chunks;
  long long* totals;        // kWords a slot, zero before the first launch
  unsigned* chunks_summed;  // a slot each, zero before the first launch
  unsigned long long room_chunks, room_slots;

  //! Segment s, of n > 0 elements, to be summed again.
  __device__ void list(std::uint64_t s, std::uint64_t n) const {
    if (n <= kWarpRetryMost) {
      warp_segments[atomicAdd(counts + kWarpSegments, 1ull)] = s;
      return;
    }
    const auto k = static_cast<unsigned>((n + kRetryChunk - 1) / kRetryChunk);
    const unsigned long long slot = k > 1 ? atomicAdd(counts + kSlots, 1ull) : 0;
    const unsigned long long first = atomicAdd(counts + kChunks, static_cast<unsigned long long>(k));
    const bool fits = slot < room_slots && first + k <= room_chunks;
    for (unsigned c = 0; c < k && first + c < room_chunks; ++c)
      chunks[first + c] = fits ? RetryChunk{s, c, k, static_cast<unsigned>(slot)} : RetryChunk{kNoSegment, 0, 0, 0};
  }
  //! The chunks listed (those that fit).
  __device__ unsigned long long chunks_listed() const {
    const unsigned long long c = counts[kChunks];
    return c < room_chunks ? c : room_chunks;
  }
  static constexpr std::uint64_t kNoSegment = ~std::uint64_t{0};
};

//! What the exact policies of pairs share (the f64 segments and views, the f32 and bf16 views): the
//! partial is an F64Partial, an element of T lifts to itself (a double exactly), partials fold
//! pair by pair.
template <class T>
struct ExactPairsPolicy {
  using In = T;
  using acc_t = F64Partial;
  static constexpr Op op = Op::sum;
  struct Lifted {
    T x;
  };
  //! The small sum starts at -0, so that it is -0 exactly where every element added to it was -0
  //! (or none was).
  __host__ __device__ acc_t identity() const { return {{-0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}, 0u}; }
  __device__ Lifted lift(T x, index_t) const { return {x}; }
  __device__ acc_t operator()(acc_t a, const acc_t& b) const {
    a.add(b);
    return a;
  }
};
using ExactF64Policy = ExactPairsPolicy<double>;

//! A thread's pairs under policy F (an ExactF64Policy): F64Partial::add, an element at a time.
template <class F>
struct F64PartialAccumulator {
  F64Partial p;
  __device__ void init(const F& f) { p = f.identity(); }
  __device__ void add(const F&, typename F::Lifted e) { p.add(e.x); }
  __device__ F64Partial value(const F&) const { return p; }
};

//! The segments kernels' policy for exact f64 sums. Segments the partials do not settle go to
//! `retry`; `bounds` gives write_segment each segment's length.
struct ExactSegmentSumF64 : ExactF64Policy {
  SegmentBounds bounds;
  F64RetryLists retry;
};

//! A lane's pairs. One a lane (one_accumulator): four, one for each load in flight, spilled in the
//! short-segment kernel under its cap of 64 registers (sm_90).
template <>
struct one_accumulator<ExactSegmentSumF64> : std::true_type {};
template <>
struct Accumulator<ExactSegmentSumF64> : F64PartialAccumulator<ExactSegmentSumF64> {};

__device__ inline void add_vector(Accumulator<ExactSegmentSumF64>& acc, const ExactSegmentSumF64& f, const Vec<double>& r,
                                  std::size_t) {
#pragma unroll
  for (int j = 0; j < vector_width<double>(); ++j) acc.add(f, {r.e[j]});
}

//! Segment s's exact sum, rounded once, into out[s], where its pairs settle it (an empty
//! segment's: +0); else s is listed to be summed again.
template <class Out>
__device__ inline void write_segment(const ExactSegmentSumF64& f, const F64Partial& a, std::uint64_t s, std::uint64_t, Out* out,
                                     std::uint64_t*) {
  static_assert(std::is_same_v<Out, double>, "exact f64 sums are written as f64");
  const std::uint64_t begin = f.bounds.begin(s), end = f.bounds.begin(s + 1);
  const std::uint64_t n = end > begin ? end - begin : 0;
  double r;
  if (n == 0) out[s] = 0.0;
  else if (rounded_by_error_bound(a, n, r)) out[s] = r;
  else f.retry.list(s, n);
}

//! The lane digits a block of exact_f64_chunk_retry_kernel keeps in dynamic shared memory.
inline constexpr std::size_t kRetryLaneDigitBytes = sizeof(long long) * ExactSum::kDigits * exact::kDigitBlock;

//! The chunks listed by the first launch, a block each, round the grid: the block's lanes add the
//! chunk's elements to their digits (exact_block_sum_digits, as the flat f64 sums: 16-byte loads,
//! the next tile's in flight), infinities and NaNs to the block's counts, and the lanes' digits go
//! column by column into the block's words. A segment of one chunk is rounded there by the
//! block's first thread; one of several adds the chunk's words to its slot's, with 64-bit atomics
//! (integer sums: the same in any order), and the block that adds its last chunk rounds them.
__global__ inline __launch_bounds__(exact::kDigitBlock) void exact_f64_chunk_retry_kernel(const double* __restrict__ x,
                                                                                          SegmentBounds b, F64RetryLists retry,
                                                                                          double* out) {
  extern __shared__ long long lane_digits[];  // digit d of lane t at d * exact::kDigitBlock + t
  __shared__ long long words[ExactSum::kWords];
  __shared__ bool last_chunk;
  const unsigned long long count = retry.chunks_listed();
  for (unsigned long long i = blockIdx.x; i < count; i += gridDim.x) {
    const RetryChunk c = retry.chunks[i];
    if (c.segment == F64RetryLists::kNoSegment) continue;  // only with bad offsets
    const std::uint64_t a = b.begin(c.segment), end = b.begin(c.segment + 1), e = end < a ? a : end;
    const std::uint64_t from = a + c.chunk * kRetryChunk, to = e - from < kRetryChunk ? e : from + kRetryChunk;
    for (int w = threadIdx.x; w < ExactSum::kWords; w += exact::kDigitBlock) words[w] = 0;
    __syncthreads();  // words zeroed before any lane counts an infinity or a NaN in them
    std::uint64_t head = (16 - reinterpret_cast<std::uintptr_t>(x + from) % 16) % 16 / sizeof(double);
    if (head > to - from) head = to - from;
    exact::exact_block_sum_digits(x + from, to - from, head, words, lane_digits, 0, 1);
    __syncthreads();  // every column in words
    if (c.chunks > 1) {
      long long* total = retry.totals + static_cast<std::size_t>(c.slot) * ExactSum::kWords;
      for (int w = threadIdx.x; w < ExactSum::kWords; w += exact::kDigitBlock)
        if (words[w] != 0) atomicAdd(reinterpret_cast<unsigned long long*>(total + w), static_cast<unsigned long long>(words[w]));
      __threadfence();  // this chunk's additions visible device-wide before its count
      __syncthreads();
      if (threadIdx.x == 0) last_chunk = atomicAdd(retry.chunks_summed + c.slot, 1u) == c.chunks - 1;
      __syncthreads();
      if (last_chunk) {
        __threadfence();
        exact::take_total(total, words);  // and zeroes it
        if (threadIdx.x == 0) retry.chunks_summed[c.slot] = 0;
      }
      __syncthreads();
    }
    if (threadIdx.x == 0 && (c.chunks == 1 || last_chunk)) {
      words[ExactSum::kCount] = static_cast<long long>(e - a);
      out[c.segment] = round_exact_words(words);
    }
    __syncthreads();  // words read, and every lane's digits, before the next chunk clears them
  }
}

//! Blocks of exact_f64_warp_retry_kernel: a warp a segment, each with its words in shared memory.
inline constexpr int kWarpRetryBlock = 256;

//! The short segments listed by the first launch, a warp each, round the grid: the warp's lanes
//! add the segment's elements to the warp's words in shared memory (the two digits each spans,
//! with 64-bit atomics; infinities and NaNs to the counts), and its first lane rounds them into
//! out[s]. A warp's start and end are its words cleared and that one lane's rounding, where a
//! block's were 67 digits a lane cleared and carried and the lanes' columns summed.
__global__ inline __launch_bounds__(kWarpRetryBlock) void exact_f64_warp_retry_kernel(const double* __restrict__ x,
                                                                                      SegmentBounds b, F64RetryLists retry,
                                                                                      double* out) {
  constexpr int kWarps = kWarpRetryBlock / 32;
  __shared__ long long warp_words[kWarps][ExactSum::kWords];
  const int lane = threadIdx.x & 31;
  long long* words = warp_words[threadIdx.x / 32];
  const unsigned long long count = retry.counts[F64RetryLists::kWarpSegments];
  const unsigned long long warps = static_cast<unsigned long long>(gridDim.x) * kWarps;
  for (unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * kWarps + threadIdx.x / 32; i < count; i += warps) {
    const std::uint64_t s = retry.warp_segments[i], a = b.begin(s), end = b.begin(s + 1), e = end < a ? a : end;
    for (int w = lane; w < ExactSum::kWords; w += 32) words[w] = 0;
    __syncwarp();
    unsigned not_negative_zero = 0;  // nonzero once an element other than -0 passed through this lane
    for (std::uint64_t j = a + lane; j < e; j += 32) {
      const double v = x[j];
      const unsigned hi = static_cast<unsigned>(__double2hiint(v)), lo = static_cast<unsigned>(__double2loint(v));
      not_negative_zero |= (hi ^ 0x80000000u) | lo;
      if ((hi & 0x7ff00000u) == 0x7ff00000u) {
        exact::count_special(words, ((hi & 0xfffffu) | lo) != 0, hi >> 31);
      } else {
        const exact::DigitPair d = exact::digit_pair(hi, lo);
        atomicAdd(reinterpret_cast<unsigned long long*>(words + d.k), static_cast<unsigned long long>(d.low));
        atomicAdd(reinterpret_cast<unsigned long long*>(words + d.k + 1), static_cast<unsigned long long>(d.high));
      }
    }
    const bool not_all_negative_zero = __any_sync(0xffffffffu, not_negative_zero != 0);
    __syncwarp();  // every lane's additions in words
    if (lane == 0) {
      words[ExactSum::kNotNegativeZero] = not_all_negative_zero;
      words[ExactSum::kCount] = static_cast<long long>(e - a);
      out[s] = round_exact_words(words);
    }
    __syncwarp();  // words read before the next segment clears them
  }
}

}  // namespace xreduce::cuda
