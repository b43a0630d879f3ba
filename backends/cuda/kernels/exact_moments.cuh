#pragma once
// The exact partials of x and of x squared in one pass (Accuracy::exact var and std; the core
// rounds (n Q - S^2) / (n (n - c)) once from them, as it does the CPU's).
//
// A lane adds each element to S and its square to Q (a branch for a vector holding an infinity or
// NaN, and for the floats on whether a tile lies in the lane's exponent group):
// - f32, bf16 and f16 (each a float exactly): while a vector's elements lie in the lane's exponent
//   group (GroupSums, below), in registers: S, and each square split at a fixed place into two
//   doubles, added as doubles, exact because every element of a group is a multiple of one unit;
//   otherwise S in the binned form's exponent bins, and the square, a double exactly (48
//   significant bits, 2^-298 to 2^256), as two doubles of 24 bits into square bins of the same
//   kind (kSquareBins, below): three shared-memory bin additions an element, which made the
//   kernel 2.11x a plain sum on an H200 for uniform data when every element took them;
// - f64: S in digits, and the square as a double and its fma remainder into Q's digits, exact
//   while |x| is within [2^-480, 2^511] (the squares of larger or smaller values leave the exact
//   partial's range: the kernel counts them and the caller refuses the request, as the CPU does).
// Blocks are kDigitBlock lanes, the bins or digits of each in shared memory: 51 KiB a block for
// the floats, 137 KiB for f64. Each block adds its S and Q words to the two device-wide partials.

#include "exact_sum.cuh"

namespace xreduce::cuda {
namespace exact {

//! The floats' squares are binned as their elements are (add_to_bins), by a double's exponent
//! field: a square of f32 is a double of 48 significant bits (2^-298 to 2^256), split into p, its
//! top 24 bits, and e = square - p, at most 24 bits more; each a double of at most 24 significant
//! bits whose field F (725 to 1278 for nonzero ones) makes it a multiple of 2^(F - 1046). Bin c
//! takes fields 720 + 16c to 735 + 16c: 39 bits of its unit, 2^14 additions exact, as the f32 bins.
constexpr int kSquareBins = 35, kSquareFieldBase = 720;
constexpr int kSquareFirstUnit = kSquareFieldBase - 1046;  // bin 0's unit: 2^-326
//! The square bin of a double of at most 24 significant bits and no sign, from its high word (a
//! zero to bin 0, where it adds nothing).
__device__ inline int square_bin(unsigned hi) {
  return static_cast<int>((max(hi >> 20, static_cast<unsigned>(kSquareFieldBase)) - kSquareFieldBase) >> 4);
}

//! An element of an exact-moments type that is not f64 as the float it is exactly.
template <class T>
__device__ inline float moments_float(T v) {
  if constexpr (std::is_same_v<T, f16>) return static_cast<float>(v);
  else return binned_float(v);
}

//! A lane of exact_moments_kernel for f64: S by the digit form's lane, Q (each square as a double
//! and its fma remainder) in digits of its own. Its shared memory: Q's digits, then S's.
struct DigitMomentsLane {
  static constexpr std::size_t kSharedBytes = 2 * sizeof(long long) * ExactSum::kDigits * kDigitBlock;
  //! Carries every 2^9 elements: a square adds two values, so a digit takes less than 2^53 + 2^33
  //! an element; a lane adds at most a round and its two lone elements more before the last.
  static constexpr int kElementsPerCarry = 1 << 9;
  DigitSumLane sum;
  LaneDigits squares;
  long long* q_words;
  unsigned out_of_range = 0;  // elements whose squares the partial cannot hold

  __device__ __forceinline__ DigitMomentsLane(long long* lane_shared, long long* s_words, long long* q)
      : sum(lane_shared + ExactSum::kDigits * kDigitBlock, s_words), squares{lane_shared + threadIdx.x}, q_words(q) {
    squares.clear();
  }
  //! A finite element's square, exact while |v| is within [2^-480, 2^511].
  __device__ __forceinline__ void add_square(double v) {
    const double a = fabs(v);
    if (a < 0x1p-480 || a > 0x1p511) {
      out_of_range += a != 0;
      return;
    }
    const double d = v * v, e = fma(v, v, -d);
    squares.add(static_cast<unsigned>(__double2hiint(e)), static_cast<unsigned>(__double2loint(e)));
    squares.add(static_cast<unsigned>(__double2hiint(d)), static_cast<unsigned>(__double2loint(d)));
  }
  //! Any element's square: an infinity's is +inf, a NaN's NaN (counted in Q's words).
  __device__ __forceinline__ void add_any_square(double v) {
    if (isfinite(v)) add_square(v);
    else count_special(q_words, isnan(v), false);
  }
  __device__ __forceinline__ void add_one(double v) {
    sum.add_one(v);
    add_any_square(v);
  }
  __device__ __forceinline__ void add_vector(const Vec<double>& r) {
    const bool special = sum.add_vector(r);
#pragma unroll
    for (int j = 0; j < vector_width<double>(); ++j) {
      if (special) add_any_square(r.e[j]);
      else add_square(r.e[j]);
    }
  }
  __device__ __forceinline__ void carry() {
    sum.carry();
    squares.normalize();
  }
  //! The block's end (every thread): the lanes' S and Q into the block's words; the out-of-range
  //! squares into Q's count word, which the caller sets to n after reading it.
  __device__ __forceinline__ void deposit(long long* lane_shared) {
    if (out_of_range != 0)
      atomicAdd(reinterpret_cast<unsigned long long*>(q_words + ExactSum::kCount), static_cast<unsigned long long>(out_of_range));
    deposit_lane_digits(squares, lane_shared, q_words);
    sum.deposit(lane_shared + ExactSum::kDigits * kDigitBlock);
  }
};

//! A lane's S and Q of the elements of one exponent group, in registers. Group g holds the floats
//! whose exponent field is 16g to 16g + 15 (bin g of the binned form): each is X units of
//! 2^u, u = 16g - 150, with X an integer below 2^39, so its square is X^2 units of 2^2u, below
//! 2^78. Adding `split` = 1.5 * 2^(52 + 2u + 39) to the square (a double exactly) rounds it to a
//! multiple h of 2^(2u + 39), below 2^39 of those, which the sum's significand holds as an integer
//! (its bits less split's); the rest, the square less h, is at most 2^38 units of 2^2u. So s and
//! low each add up to 2^14 values exactly as doubles, and `sum_bits` adds the sums' bits modulo
//! 2^64, which less `added` times split's are h's units: two fmas, three additions and a 64-bit
//! integer addition an element, and no memory; flush() moves them into the block's words between
//! (every 2^10 elements a lane, with the bins' carry). Group 15 (from 2^113, and the infinities
//! and NaN) is never a lane's: the test of a vector need not look for those.
struct GroupSums : ExponentGroup {
  double s = -0.0;  // -0 until an element other than -0 is added (as IEEE adds zeros)
  double low = 0, split = 0;
  unsigned long long sum_bits = 0;  // modulo 2^64
  unsigned added = 0;               // elements since the last flush

  //! Starts group g, or none for group 15 (the sums are empty).
  __device__ __forceinline__ void start(int g) {
    take(g);
    split = 0x1.8p52 * pow2(2 * unit() + 39);
  }
  //! Finite elements of the group.
  template <int kCount>
  __device__ __forceinline__ void add(const float (&f)[kCount]) {
#pragma unroll
    for (int j = 0; j < kCount; ++j) {
      const double v = f[j];
      const double t = fma(v, v, split);  // split + h: the square, exact in a double, rounded once
      s += v;
      sum_bits += static_cast<unsigned long long>(__double_as_longlong(t));
      low += fma(v, v, -(t - split));  // exact: the square less h
    }
    added += kCount;
  }
  //! Moves the sums into S's words and Q's, as integers of their units, and zeroes them: every
  //! lane of the warp together. A warp whose lanes share a group adds its integers first (below
  //! 2^50 a lane, so 2^55 over the warp) and deposits once. Returns whether an element other than
  //! -0 was added since the last flush.
  __device__ __forceinline__ bool flush(long long* s_words, long long* q_words) {
    const bool seen = __double_as_longlong(s) != __double_as_longlong(-0.0);
    const bool one_group = warp_shares();
    const auto high = static_cast<long long>(sum_bits - added * static_cast<unsigned long long>(__double_as_longlong(split)));
    if (!__any_sync(0xffffffffu, s != 0 || high != 0 || low != 0)) {
      s = -0.0, sum_bits = 0, added = 0;
      return seen;
    }
    const int u = unit();
    deposit_lanes_scaled(s_words, __double2ll_rn(s * pow2(-u)), u, one_group);
    deposit_lanes_scaled(q_words, high, 2 * u + 39, one_group);
    deposit_lanes_scaled(q_words, __double2ll_rn(low * pow2(-2 * u)), 2 * u, one_group);
    s = -0.0, low = 0;
    sum_bits = 0, added = 0;
    return seen;
  }
};

//! A lane of exact_moments_kernel for f32, f16 and bf16: a vector whose elements all lie in the
//! lane's exponent group to its GroupSums, any other element to the bins: S in the binned form's
//! bins, its square split into p and e in the square bins (kSquareBins). Its shared memory: the
//! square bins, then S's bins (bin c of lane t at c * kDigitBlock + t in each). The lane's group
//! is that of the largest element of the last vector of its first tile, and moves at a carry to
//! that of the last vector outside it when more tiles lay outside it than in it since the last carry.
template <class T>
struct BinMomentsLane {
  static constexpr int kBlock = kDigitBlock, kVec = vector_width<T>();
  static constexpr std::size_t kSharedBytes = sizeof(double) * (kSquareBins + kFieldBins) * kBlock;
  //! Flushes every 2^10 elements: a bin stays exact for 2^14 additions, and an element adds one
  //! to S's bins and two to the square bins.
  static constexpr int kElementsPerCarry = 1 << 10;
  double* square_bins;  // this lane's square bin 0
  double* bins;         // this lane's bin 0 of S
  long long* s_words;
  long long* q_words;
  unsigned not_negative_zero = 0;  // nonzero once an element other than -0 passed through this lane
  GroupSums in_group;
  int outside = 0;             // tiles outside the group since the last carry, less those in it
  int last_outside_group = 0;  // the group of the last element outside it

  __device__ __forceinline__ BinMomentsLane(long long* lane_shared, long long* s, long long* q)
      : square_bins(reinterpret_cast<double*>(lane_shared) + threadIdx.x),
        bins(reinterpret_cast<double*>(lane_shared) + kSquareBins * kBlock + threadIdx.x),
        s_words(s),
        q_words(q) {
#pragma unroll
    for (int c = 0; c < kSquareBins; ++c) square_bins[c * kBlock] = 0;
#pragma unroll
    for (int c = 0; c < kFieldBins; ++c) bins[c * kBlock] = 0;
  }
  //! A finite element's square (a double exactly) split into p and e, each into its square bin.
  __device__ __forceinline__ void add_square(double v) {
    const double d = v * v;
    const int hi = __double2hiint(d);
    const double p = __hiloint2double(hi, __double2loint(d) & static_cast<int>(0xe0000000u)), e = d - p;
    square_bins[square_bin(static_cast<unsigned>(hi)) * kBlock] += p;
    square_bins[square_bin(static_cast<unsigned>(__double2hiint(e))) * kBlock] += e;
  }
  __device__ __forceinline__ void add_one(T element) {
    const float f = moments_float(element);
    not_negative_zero |= __float_as_uint(f) ^ 0x80000000u;
    add_to_bins<kBlock>(bins, f, s_words);
    if (isfinite(f)) add_square(f);
    else count_special(q_words, isnan(f), false);
  }
  //! The top bytes (the sign and the exponent field's high seven bits) of elements 4k to 4k + 3 of
  //! a vector as floats, in one word: an f32's and a bf16's are their own, read from the loaded
  //! words without a conversion (the bf16 kernel held a tile's 32 floats at once and spilled); an
  //! f16's are its float's.
  __device__ __forceinline__ static unsigned vector_tops(const Vec<T>& r, int k) {
    if constexpr (std::is_same_v<T, bf16>) {
      unsigned w[4];
      memcpy(w, &r, sizeof w);
      return ExponentGroup::bf16_top_bytes(w, k);
    } else {
      float f[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) f[j] = moments_float(r.e[4 * k + j]);
      return ExponentGroup::top_bytes(f);
    }
  }
  //! kCount vectors: to the group's sums if every element is of the lane's group, else each to the
  //! bins. walk_with_loads_ahead hands a tile of kUnroll vectors at once (add_tile): deciding
  //! for a vector at a time, a warp whose lanes took the two ways for a tile's vectors made
  //! data whose exponents lie far apart 2.5-3.1x a plain sum on an H200, against 2.11x when every
  //! element went to the bins.
  template <int kCount>
  __device__ __forceinline__ void add_vectors(const Vec<T>* r) {
    // Whether the vectors are of the lane's group: their floats' top bytes, four to a word, against
    // the group's bits; where every element outside it may be a zero (a top byte of 0 or 0x80,
    // which a small nonzero has too), element by element. (Testing element by element wherever
    // some element may be a zero made a warp take that test for most tiles of random bit
    // patterns, 2.9x a plain sum on an H200.)
    bool all_in = true, outside_may_be_zeros = true;
#pragma unroll
    for (int u = 0; u < kCount; ++u)
#pragma unroll
      for (int k = 0; k < kVec / 4; ++k) {
        const unsigned tops = vector_tops(r[u], k), m = tops & 0x7f7f7f7fu;
        const unsigned outside_bytes = ((tops ^ in_group.group_bytes) & 0x78787878u) + 0x78787878u;  // bit 7: outside
        const unsigned zero_bytes = (m - 0x01010101u) & ~m;  // bit 7 where m's byte is 0 (and some above it)
        all_in &= in_group.holds_all(tops);
        outside_may_be_zeros &= (outside_bytes & ~zero_bytes & 0x80808080u) == 0;
      }
    if (!all_in && outside_may_be_zeros && in_group.group >= 0) {
      all_in = true;
#pragma unroll
      for (int u = 0; u < kCount; ++u)
#pragma unroll
        for (int j = 0; j < kVec; ++j) all_in &= in_group.holds(moments_float(r[u].e[j]));
    }
    if (all_in) {
      --outside;
#pragma unroll
      for (int u = 0; u < kCount; ++u) {
        float f[kVec];
#pragma unroll
        for (int j = 0; j < kVec; ++j) f[j] = moments_float(r[u].e[j]);
        in_group.add(f);
      }
      return;
    }
    ++outside;
#pragma unroll
    for (int u = 0; u < kCount; ++u) {
      float f[kVec];
      unsigned top = 0;
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        f[j] = moments_float(r[u].e[j]);
        top = max(top, __float_as_uint(f[j]) & 0x7fffffffu);
      }
      if (top >= 0x7f800000u) {
#pragma unroll
        for (int j = 0; j < kVec; ++j) add_one(r[u].e[j]);
        continue;
      }
      last_outside_group = static_cast<int>(top >> 27);
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        not_negative_zero |= __float_as_uint(f[j]) ^ 0x80000000u;
        add_finite_to_bins<kBlock>(bins, f[j]);
        add_square(f[j]);
      }
    }
    // A lane without a group starts one at once (its sums are empty); group 15 would be none.
    if (in_group.group < 0 && last_outside_group < kFieldBins - 1) in_group.start(last_outside_group);
  }
  static constexpr bool kAddsTiles = true;
  __device__ __forceinline__ void add_tile(const Vec<T> (&r)[kUnroll]) { add_vectors<kUnroll>(r); }
  __device__ __forceinline__ void add_vector(const Vec<T>& r) { add_vectors<1>(&r); }
  //! The bins' flush into the block's words, and the group's sums' (every lane of the warp together),
  //! then the group moves if most vectors since the last carry lay outside it.
  __device__ __forceinline__ void carry() {
    flush_lane_bins<kBlock>(bins, s_words);
    flush_lane_bins<kBlock, kSquareBins>(square_bins, q_words, kSquareFirstUnit);
    if (in_group.flush(s_words, q_words)) not_negative_zero = 1;
    if (outside > 0 && last_outside_group < kFieldBins - 1) in_group.start(last_outside_group);
    outside = 0;
  }
  //! The block's end (every thread): the lanes' S and Q into the block's words.
  __device__ __forceinline__ void deposit(long long* lane_shared) {
    if (in_group.flush(s_words, q_words)) not_negative_zero = 1;
    if (__any_sync(0xffffffffu, not_negative_zero != 0) && (threadIdx.x & 31) == 0)
      atomicAdd(reinterpret_cast<unsigned long long*>(s_words + ExactSum::kNotNegativeZero), 1ull);
    flush_lane_bins<kBlock, kSquareBins>(square_bins, q_words, kSquareFirstUnit);
    deposit_block_bins<kBlock>(reinterpret_cast<double*>(lane_shared) + kSquareBins * kBlock, s_words);
  }
};

//! The lane of T: digits for f64, bins for the 32- and 16-bit floats.
template <class T>
using MomentsLane = std::conditional_t<std::is_same_v<T, double>, DigitMomentsLane, BinMomentsLane<T>>;

//! Adds the exact partials of n elements (at most kMaxLaunch) and of their squares to `totals`
//! (S's words, then Q's; zero on entry) with 64-bit atomics. An f64 whose square leaves the
//! exact partial's range adds 1 to Q's count word. Dynamic shared memory: MomentsLane<T>::kSharedBytes.
//! (Launch bounds: the blocks an SM that shared memory allows, four for the floats' bins and two
//! for f64's digits, so that ptxas allots as many registers as those leave room for: the bf16 kernel
//! took 134 with two, which would have left room for three blocks.)
template <class T>
__global__ __launch_bounds__(kDigitBlock, std::is_same_v<T, double> ? 2 : 4) void exact_moments_kernel(const T* __restrict__ x, std::size_t n, std::size_t head,
                                                                    long long* totals) {
  using Lane = MomentsLane<T>;
  __shared__ long long words[2 * ExactSum::kWords];  // the block's S, then Q
  extern __shared__ long long lane_shared[];
  for (int w = threadIdx.x; w < 2 * ExactSum::kWords; w += kDigitBlock) words[w] = 0;
  Lane lane(lane_shared, words, words + ExactSum::kWords);
  __syncthreads();  // the words are zero before any lane counts a special in them
  walk_with_loads_ahead<kDigitBlock, Lane::kElementsPerCarry / (kUnroll * vector_width<T>())>(x, n, head, lane);
  lane.deposit(lane_shared);
  __syncthreads();
  for (int w = threadIdx.x; w < 2 * ExactSum::kWords; w += kDigitBlock)
    if (words[w] != 0) atomicAdd(reinterpret_cast<unsigned long long*>(totals + w), static_cast<unsigned long long>(words[w]));
}

}  // namespace exact
}  // namespace xreduce::cuda
