#pragma once
// Exact sums on the GPU (Accuracy::exact), in three forms that end in the block's
// superaccumulator (below). Each but bf16's costs the same whatever the data: no branch depends
// on the values' exponents, only on whether a vector holds an infinity or NaN. bf16's also
// branches on its vectors' exponents (below): 1.03x a plain sum on uniform data, 1.60x on random
// bit patterns.
//
// f32 and bf16 (the f32 it widens to): bins by exponent. A float whose exponent field lies in
// [16c, 16c + 16) is a multiple of 2^(16c - 150) below 2^(16c - 111): 39 bits of that unit. Each
// lane keeps kFieldBins = 16 doubles in shared memory, bin c for those fields, and adds each
// element to the one its field picks (a load, a conversion, an addition and a store, the same
// for any data): 2^14 such additions stay exact below 2^53 units, and a lane moves its bins into
// the block's words every 2^10 elements and at the end (the block's lanes at once). A vector
// holding an infinity or NaN goes one by one. Measured against plain cub on an H200 (bench
// exact, by distribution): 1.06-1.09x from 2^28 on uniform, wide, random-bit, cancelling and
// subnormal data alike, where a window over the warp's largest element took 31-45x on data of
// random exponents. A bf16 vector (8 elements a 16-byte load) made the bins' shared memory and
// the instructions per element the bound: 1.39x a plain bf16 sum on uniform data on an H200. Its
// elements are first added in pairs in f32, exact whenever a pair's exponents lie within 15 of
// each other, and where every pair of the vector is exact, the four sums go to the bins instead
// of the eight elements; the pairs' sums also find the specials. 1.12x on uniform data, 1.60x on
// random bit patterns, whose neighbours' exponents lie far apart (each element to its bin, as
// before, after the pairs' test: 1.52x without it). A vector whose elements all lie in the lane's
// exponent group (ExponentGroup, below) adds its pairs' sums to one double in a register instead
// of the bins: 1.03x on uniform data.
//
// f64: digits. Each lane keeps its own copy of an ExactSum's 67 digits (32-bit digits in
// 64-bit words, Neal's small superaccumulator) in shared memory, and adds each element to the
// two digits its significand spans once shifted to its exponent's place: a shift, two loads, two
// additions and two stores, the same for any data (an f64's 53 bits do not fit the f32 form's
// bins with room to add). A digit takes less than 2^52 + 2^32 an element, so a lane propagates
// its carries every 2^10 elements and at the end; the block adds its lanes' digits column by
// column. 536 bytes a lane: a block is 128 lanes whatever was asked (67 KiB, three to an SM),
// and a lane loads its next tile while it adds the last. Measured against plain cub on an H200:
// 1.13-1.18x from 2^28 and 1.18-1.21x at 2^24 on every distribution, where a window over the
// warp's largest element took 5.7x on data whose exponents span 2^-600..2^600 (1.01x on uniform).
//
// f16 needs neither bins nor digits: every finite f16 is an integer multiple of 2^-24 below 2^16
// (40 bits), so a lane adds them as doubles, exactly for up to 2^13 of them, and moves each
// accumulator into an int64 of 2^-24 units every 2^10 rounds (8 elements a round). The doubles
// are made from the bits with integer instructions (no conversion instruction: those would bound
// the rate at 8 elements per 16-byte load); a vector holding an infinity or NaN goes one by one.
//
// The block's superaccumulator is an ExactSum's words in shared memory, added to with 64-bit
// atomics (three per value: the digits it spans), or by one warp a digit (the digit form).
// Blocks add their nonzero words to a device-wide accumulator with 64-bit atomics (integer sums:
// the same whatever the order); the last block to finish (single_pass) or a second launch
// (shuffle) copies it out and zeroes it for the next call. Launches take at most 2^30 elements,
// so that no digit can overflow.
//
// Columns of records (exact_columns_kernel, below) take the same bins and digits, a lane a column,
// one element a load. f16 records need neither, so they are read as the plain records kernel reads
// them, 16 bytes a load, each thread's slots adding to doubles (exact_f16_records_kernel).

#include "exact_f64_pairs.hpp"  // pow2
#include "exponent_bins.cuh"
#include "vector_loads.cuh"
#include "xreduce/exact.hpp"

namespace xreduce::cuda {
namespace exact {

constexpr int kUnroll = 4;                // 16-byte loads in flight per lane
constexpr std::size_t kMaxLaunch = std::size_t{1} << 30;

//! Adds m * 2^exponent to the block's words (ExactSum's digits): the three digits it spans.
__device__ inline void deposit_scaled(long long* words, long long m, int exponent) {
  const int p = exponent - ExactSum::kLowestExponent;
  const int k = p >> 5, r = p & 31;
  const __int128 v = static_cast<__int128>(m) * (1ll << r);
  atomicAdd(reinterpret_cast<unsigned long long*>(words + k), static_cast<unsigned long long>(v & 0xffffffff));
  atomicAdd(reinterpret_cast<unsigned long long*>(words + k + 1), static_cast<unsigned long long>((v >> 32) & 0xffffffff));
  atomicAdd(reinterpret_cast<unsigned long long*>(words + k + 2), static_cast<unsigned long long>(static_cast<long long>(v >> 64)));
}

//! The sum of m over the warp's lanes, in every lane.
__device__ inline long long warp_sum(long long m) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) m += __shfl_xor_sync(0xffffffffu, m, offset);
  return m;
}

//! Adds each lane's m * 2^exponent to `words` (every lane of the warp together): where the lanes
//! share the exponent (`shared`), the warp adds theirs first and deposits once.
__device__ inline void deposit_lanes_scaled(long long* words, long long m, int exponent, bool shared) {
  if (shared) m = warp_sum(m);
  if (m != 0 && (!shared || (threadIdx.x & 31) == 0)) deposit_scaled(words, m, exponent);
}

//! Counts an infinity or NaN in `words` (a block's or a column's): a NaN, else an infinity of its sign.
__device__ inline void count_special(long long* words, bool nan, bool negative) {
  const int which = nan ? ExactSum::kNaN : negative ? ExactSum::kNegInf : ExactSum::kPosInf;
  atomicAdd(reinterpret_cast<unsigned long long*>(words + which), 1ull);
}

//! The lanes of a block that sums f64 by digits (see the file's comment): their digits in shared
//! memory, digit d of lane t at d * kDigitBlock + t, so that a warp's lanes touch 32 consecutive
//! words whatever digits they pick (no bank conflicts).
constexpr int kDigitBlock = 128;

//! A finite double in ExactSum's digits: digit k takes `low` (unsigned, below 2^32), k + 1 the
//! signed `high` (below 2^52 in magnitude).
struct DigitPair {
  int k;
  long long low, high;
};

//! A finite double, given as its high and low words, as a DigitPair: its significand m (53 bits,
//! 52 for a subnormal), signed, times 2^r, r < 32, is a 96-bit two's complement top:mid:low; low
//! goes to digit k, top:mid to k + 1.
__device__ __forceinline__ DigitPair digit_pair(unsigned hi, unsigned lo) {
  const unsigned field = (hi >> 20) & 0x7ffu;
  const unsigned m_high = (hi & 0xfffffu) | (field != 0 ? 0x100000u : 0u);
  // The significand's lowest bit weighs 2^(max(field, 1) - 1075): place p above kLowestExponent.
  const int p = static_cast<int>(max(field, 1u)) - 1075 - ExactSum::kLowestExponent;
  const int k = p >> 5, r = p & 31;
  const long long sign = static_cast<int>(hi) >> 31;  // 0 or -1: x -> (x ^ sign) - sign negates
  const long long m = ((static_cast<long long>(m_high) << 32 | lo) ^ sign) - sign;
  const unsigned m_lo = static_cast<unsigned>(m), m_hi = static_cast<unsigned>(m >> 32);
  const unsigned low = m_lo << r;
  const unsigned mid = __funnelshift_l(m_lo, m_hi, r);
  const unsigned top = __funnelshift_l(m_hi, static_cast<unsigned>(static_cast<int>(m_hi) >> 31), r);
  return {k, static_cast<long long>(low), static_cast<long long>((static_cast<unsigned long long>(top) << 32) | mid)};
}

//! One lane's digits.
struct LaneDigits {
  long long* digit;  // the lane's digit 0; digit d at digit[d * kDigitBlock]

  //! Adds a finite double, given as its high and low words (digit_pair).
  __device__ void add(unsigned hi, unsigned lo) {
    const DigitPair d = digit_pair(hi, lo);
    digit[d.k * kDigitBlock] += d.low;
    digit[(d.k + 1) * kDigitBlock] += d.high;
  }
  //! Adds any double: a finite one to the digits, an infinity or NaN to the counts of `words`;
  //! `not_negative_zero` gains a bit unless it is -0.
  __device__ void add_any(double v, unsigned& not_negative_zero, long long* words) {
    const unsigned hi = static_cast<unsigned>(__double2hiint(v)), lo = static_cast<unsigned>(__double2loint(v));
    not_negative_zero |= (hi ^ 0x80000000u) | lo;
    if ((hi & 0x7ff00000u) == 0x7ff00000u) count_special(words, ((hi & 0xfffffu) | lo) != 0, hi >> 31);
    else add(hi, lo);
  }
  __device__ void clear() {
#pragma unroll
    for (int d = 0; d < ExactSum::kDigits; ++d) digit[d * kDigitBlock] = 0;
  }
  //! Propagates the carries (ExactSum::normalize on the lane's digits).
  __device__ void normalize() {
    long long carry = 0;
#pragma unroll
    for (int d = 0; d + 1 < ExactSum::kDigits; ++d) {
      const long long v = digit[d * kDigitBlock] + carry;
      digit[d * kDigitBlock] = v & 0xffffffff;
      carry = v >> 32;  // arithmetic: floor division by 2^32
    }
    digit[(ExactSum::kDigits - 1) * kDigitBlock] += carry;
  }
};

//! The end of a block of kDigitBlock lanes with digits at `lane_digits` (every thread calls it):
//! each lane's digits into [0, 2^32) (the last signed and small), then each warp adds columns of
//! them (below 2^39 over the block) into the block's `words`, which nothing else writes meanwhile.
__device__ inline void deposit_lane_digits(LaneDigits& lane, const long long* lane_digits, long long* words) {
  constexpr int kBlock = kDigitBlock, kWarps = kBlock / 32;
  lane.normalize();
  __syncthreads();
  for (int d = threadIdx.x / 32; d < ExactSum::kDigits; d += kWarps) {
    long long column = 0;
#pragma unroll
    for (int t = threadIdx.x & 31; t < kBlock; t += 32) column += lane_digits[d * kBlock + t];
    column = warp_sum(column);
    if ((threadIdx.x & 31) == 0) words[d] += column;
  }
}

//! Whether a lane takes a tile of kUnroll vectors at once (Lane::add_tile, where it decides for
//! the whole tile), not a vector at a time (Lane::add_vector).
template <class Lane, class = void>
inline constexpr bool kAddsTiles = false;
template <class Lane>
inline constexpr bool kAddsTiles<Lane, std::void_t<decltype(Lane::kAddsTiles)>> = Lane::kAddsTiles;

//! Walks this lane's share of x[0, n) (`head`: the elements before the first 16-byte vector) in
//! `parts` blocks of kBlock lanes, this lane's block being `part` (the grid's, by default): tiles
//! of kUnroll vectors a lane, with the next tile's loads in flight while the lane adds this one's
//! (lane.add_tile, or lane.add_vector for each), lane.carry() after every kRoundsPerCarry tiles
//! (every lane of the block together), then the vectors of the last, partial tile (one round at
//! most), then the at most kVec - 1 lone elements before and after the vectors (lane.add_one).
//! The additions wait on shared memory, one after another, long enough that loads issued only
//! after them leave the memory idle (the f64 digit form on an H200, 2^28 elements: 1.13x plain
//! cub, 1.24x without the loads ahead; 8 loads and 8 ahead 1.19x, 2 and 2 1.54x).
template <int kBlock, int kRoundsPerCarry, class T, class Lane>
__device__ __forceinline__ void walk_with_loads_ahead(const T* __restrict__ x, std::size_t n, std::size_t head, Lane& lane,
                                                      unsigned part, unsigned parts) {
  constexpr int kVec = vector_width<T>();
  constexpr std::size_t kTile = static_cast<std::size_t>(kBlock) * kUnroll;
  static_assert(kRoundsPerCarry >= 1);
  const std::size_t nvec = (n - head) / kVec;
  const Vec<T>* body = reinterpret_cast<const Vec<T>*>(x + head);
  const std::size_t full_tiles = nvec / kTile;
  int rounds = 0;
  Vec<T> r[kUnroll], next[kUnroll];
  if (part < full_tiles)
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) r[u] = body[part * kTile + threadIdx.x + u * kBlock];
  for (std::size_t t = part; t < full_tiles; t += parts) {
    const std::size_t t_next = t + parts;
    if (t_next < full_tiles)
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) next[u] = body[t_next * kTile + threadIdx.x + u * kBlock];
    if constexpr (kAddsTiles<Lane>) {
      lane.add_tile(r);
    } else {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) lane.add_vector(r[u]);
    }
    if (++rounds == kRoundsPerCarry) lane.carry(), rounds = 0;
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) r[u] = next[u];
  }
  const std::size_t g = part * static_cast<std::size_t>(kBlock) + threadIdx.x;
  const std::size_t stride = static_cast<std::size_t>(parts) * kBlock;
  for (std::size_t v = full_tiles * kTile + g; v < nvec; v += stride) lane.add_vector(body[v]);
  const std::size_t tail = head + nvec * kVec;
  if (g < head) lane.add_one(x[g]);
  if (tail + g < n) lane.add_one(x[tail + g]);
}
template <int kBlock, int kRoundsPerCarry, class T, class Lane>
__device__ __forceinline__ void walk_with_loads_ahead(const T* __restrict__ x, std::size_t n, std::size_t head, Lane& lane) {
  walk_with_loads_ahead<kBlock, kRoundsPerCarry>(x, n, head, lane, blockIdx.x, gridDim.x);
}

//! A lane of the digit form of exact_block_sum, for f64 (see the file's comment): its digits
//! (LaneDigits) and whether it has seen an element other than -0; infinities and NaNs go to the
//! counts of `words`, the block's.
struct DigitSumLane {
  LaneDigits digits;
  long long* words;
  unsigned not_negative_zero = 0;  // nonzero once an element other than -0 passed through this lane

  //! `lane_digits`: the block's (digit d of lane t at d * kDigitBlock + t).
  __device__ __forceinline__ DigitSumLane(long long* lane_digits, long long* block_words)
      : digits{lane_digits + threadIdx.x}, words(block_words) {
    digits.clear();
  }
  __device__ __forceinline__ void add_one(double v) { digits.add_any(v, not_negative_zero, words); }
  //! Adds a vector: one by one where it holds an infinity or NaN (then returns true).
  __device__ __forceinline__ bool add_vector(const Vec<double>& r) {
    constexpr int kVec = vector_width<double>();
    unsigned hi[kVec], lo[kVec], special = 0;
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      hi[j] = static_cast<unsigned>(__double2hiint(r.e[j]));
      lo[j] = static_cast<unsigned>(__double2loint(r.e[j]));
      special |= (hi[j] & 0x7ff00000u) == 0x7ff00000u;
    }
    if (special) {
#pragma unroll
      for (int j = 0; j < kVec; ++j) add_one(r.e[j]);
      return true;
    }
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      not_negative_zero |= (hi[j] ^ 0x80000000u) | lo[j];
      digits.add(hi[j], lo[j]);
    }
    return false;
  }
  __device__ __forceinline__ void carry() { digits.normalize(); }
  //! The block's end (every thread): the lanes' digits and zeros into `words`.
  __device__ __forceinline__ void deposit(const long long* lane_digits) {
    if (__any_sync(0xffffffffu, not_negative_zero != 0) && (threadIdx.x & 31) == 0)
      atomicAdd(reinterpret_cast<unsigned long long*>(words + ExactSum::kNotNegativeZero), 1ull);
    deposit_lane_digits(digits, lane_digits, words);
  }
};

//! The digit form of exact_block_sum, for f64 (see the file's comment), in blocks of kDigitBlock
//! lanes whose digits are `lane_digits` (dynamic shared memory): this block's share (`part` of
//! `parts`; the grid's by default).
__device__ inline void exact_block_sum_digits(const double* __restrict__ x, std::size_t n, std::size_t head, long long* words,
                                              long long* lane_digits, unsigned part, unsigned parts) {
  // 2^10 elements a lane between carries: a digit takes less than 2^52 + 2^32 an element, and a
  // lane adds at most a round and its two lone elements more before the last.
  constexpr int kRoundsPerCarry = (1 << 10) / (kUnroll * vector_width<double>());
  DigitSumLane lane(lane_digits, words);
  walk_with_loads_ahead<kDigitBlock, kRoundsPerCarry>(x, n, head, lane, part, parts);
  lane.deposit(lane_digits);
}
__device__ inline void exact_block_sum_digits(const double* __restrict__ x, std::size_t n, std::size_t head, long long* words,
                                              long long* lane_digits) {
  exact_block_sum_digits(x, n, head, words, lane_digits, blockIdx.x, gridDim.x);
}

//! An element of any exact-sum type as a double (exact for each).
template <class T>
__device__ inline double exact_double(T v) {
  if constexpr (is_float16_v<T>) return static_cast<double>(static_cast<float>(v));
  else return static_cast<double>(v);
}

//! An f16's value times 2^-1008, as a double made from its bits (sign, then exponent and
//! significand shifted into a double's): exact for finite f16 (subnormals become double
//! subnormals, zeros zeros), meaningless for infinities and NaNs, which the caller sorts out first.
__device__ inline double f16_scaled(unsigned half_bits) {
  const unsigned high = ((half_bits & 0x8000u) << 16) | ((half_bits & 0x7fffu) << 10);
  return __hiloint2double(static_cast<int>(high), 0);
}
//! 2^1032: a scaled f16 times this is its count of 2^-24.
__device__ inline long long f16_units(double scaled) { return __double2ll_rn(scaled * pow2(1000) * pow2(32)); }
//! Whether an f16 (its bits) is an infinity or a NaN; if so, counted in `words` (count_special).
__device__ inline bool counted_f16_special(unsigned half_bits, long long* words) {
  if ((half_bits & 0x7c00u) != 0x7c00u) return false;
  count_special(words, (half_bits & 0x3ffu) != 0, (half_bits & 0x8000u) != 0);
  return true;
}

//! The largest magnitude of each half-word column of a 16-byte vector of f16 (its four words);
//! f16_holds_special says whether either is an infinity or a NaN (an exponent of all ones).
__device__ inline unsigned f16_vector_top(const unsigned (&w)[4]) {
  return __vmaxu2(__vmaxu2(w[0] & 0x7fff7fffu, w[1] & 0x7fff7fffu), __vmaxu2(w[2] & 0x7fff7fffu, w[3] & 0x7fff7fffu));
}
__device__ inline bool f16_holds_special(unsigned top) { return __vcmpgeu2(top, 0x7c007c00u) != 0; }

//! The f16 form of exact_block_sum (see the file's comment). Each of a lane's kUnroll
//! accumulators takes 8 elements a round: a flush every 2^10 rounds keeps it below 2^13 elements.
template <int kBlock>
__device__ inline void exact_block_sum_f16(const f16* __restrict__ x, std::size_t n, std::size_t head, long long* words) {
  constexpr int kVec = vector_width<f16>();
  constexpr std::size_t kTile = static_cast<std::size_t>(kBlock) * kUnroll;
  constexpr int kRoundsPerFlush = 1 << 10;
  const std::size_t nvec = (n - head) / kVec;
  const Vec<f16>* body = reinterpret_cast<const Vec<f16>*>(x + head);
  const std::size_t full_tiles = nvec / kTile;
  double acc[kUnroll] = {};
  long long fixed = 0;  // 2^-24 units: at most 2^22 elements a lane in a launch of 2^30, below 2^62
  bool seen = false;      // an element other than -0
  auto flush = [&] {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) fixed += f16_units(acc[u]), acc[u] = 0;
  };
  auto one_by_one = [&](unsigned h) {  // any element: the lone ones, and vectors with a special
    if (!counted_f16_special(h, words)) fixed += f16_units(f16_scaled(h));
    seen = seen || h != 0x8000u;
  };
  auto add_vector = [&](int u, const Vec<f16>& r) {
    unsigned w[4];
    memcpy(w, &r, sizeof w);
    const unsigned top = f16_vector_top(w);
    if (f16_holds_special(top)) {
#pragma unroll
      for (int k = 0; k < 4; ++k) one_by_one(w[k] & 0xffffu), one_by_one(w[k] >> 16);
      return;
    }
    if (top != 0) seen = true;
    else if (!seen) seen = (w[0] & w[1] & w[2] & w[3]) != 0x80008000u;  // zeros: all -0 or not
    double s = 0;
#pragma unroll
    for (int k = 0; k < 4; ++k) s += f16_scaled(w[k] & 0xffffu) + f16_scaled(w[k] >> 16);
    acc[u] += s;
  };
  int rounds = 0;
  for (std::size_t t = blockIdx.x; t < full_tiles; t += gridDim.x) {
    const std::size_t v = t * kTile + threadIdx.x;
    Vec<f16> r[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) r[u] = body[v + u * kBlock];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) add_vector(u, r[u]);
    if (++rounds == kRoundsPerFlush) flush(), rounds = 0;
  }
  flush();
  const std::size_t g = blockIdx.x * static_cast<std::size_t>(kBlock) + threadIdx.x;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * kBlock;
  // The vectors of the last, partial tile: fewer than kTile of them, at most one a lane.
  for (std::size_t v = full_tiles * kTile + g; v < nvec; v += stride) add_vector(0, body[v]);
  flush();
  // At most kVec - 1 elements before the vectors and after them.
  const std::size_t tail = head + nvec * kVec;
  if (g < head) one_by_one(x[g].bits);
  if (tail + g < n) one_by_one(x[tail + g].bits);
  if (fixed != 0) deposit_scaled(words, fixed, -24);
  if (__any_sync(0xffffffffu, seen) && (threadIdx.x & 31) == 0)
    atomicAdd(reinterpret_cast<unsigned long long*>(words + ExactSum::kNotNegativeZero), 1ull);
}

//! f32, or bf16 as the f32 it widens to: the float's bits as a float (bf16: its upper half).
template <class T>
__device__ inline float binned_float(T x) {
  if constexpr (std::is_same_v<T, bf16>) return __uint_as_float(static_cast<unsigned>(x.bits) << 16);
  else return x;
}

//! A lane's exponent group: group g holds the floats whose exponent field is 16g to 16g + 15 (bin
//! g of the binned form), each a multiple of 2^(16g - 150) below 2^(16g - 111), so that a double
//! adds 2^14 of them exactly. Where a lane's vectors lie wholly in its group, it adds them in
//! registers rather than in its shared-memory bins. Group 15 (from 2^113, with the infinities and
//! NaN) is never a lane's: a vector that lies in the group holds no special.
struct ExponentGroup {
  int group = -1;            // or -1: none
  unsigned group_bytes = 0;  // the group's bits (3 to 6 of a float's top byte) in each byte

  __device__ __forceinline__ static int group_of(float f) { return static_cast<int>(field_bin(__float_as_uint(f))); }
  //! The top bytes (the sign and the exponent field's high seven bits) of four floats, in one word.
  __device__ __forceinline__ static unsigned top_bytes(const float* f) {
    const unsigned a = __byte_perm(__float_as_uint(f[0]), __float_as_uint(f[1]), 0x7373);
    const unsigned b = __byte_perm(__float_as_uint(f[2]), __float_as_uint(f[3]), 0x7373);
    return __byte_perm(a, b, 0x5410);
  }
  //! The top bytes of a bf16 vector's elements 4k to 4k + 3 (a bf16's are its float's), from its words.
  __device__ __forceinline__ static unsigned bf16_top_bytes(const unsigned* w, int k) { return __byte_perm(w[2 * k], w[2 * k + 1], 0x7531); }
  //! Whether the four floats of `tops` (top_bytes) all lie in the group (some 5 instructions, where
  //! a test an element took 20 for four).
  __device__ __forceinline__ bool holds_all(unsigned tops) const { return group >= 0 && ((tops ^ group_bytes) & 0x78787878u) == 0; }
  //! Whether a finite float lies in the group, a zero lying in every group (it adds nothing).
  __device__ __forceinline__ bool holds(float f) const {
    return group >= 0 && ((group_of(f) == group) | ((__float_as_uint(f) & 0x7fffffffu) == 0));
  }
  __device__ __forceinline__ int unit() const { return field_bin_unit(group); }
  //! Takes group g, or none for group 15.
  __device__ __forceinline__ void take(int g) {
    group = g < kFieldBins - 1 ? g : -1;
    group_bytes = static_cast<unsigned>(g << 3) * 0x01010101u;
  }
  //! Whether every lane of the warp has the same group (every lane of the warp calls it).
  __device__ __forceinline__ bool warp_shares() const { return __all_sync(0xffffffffu, group == __shfl_sync(0xffffffffu, group, 0)); }
};

//! Adds any float to a lane's bins: a finite one as add_finite_to_bins (its magnitude's top bits
//! are the same bin), an infinity or NaN to the counts of `words`.
template <int kStride>
__device__ inline void add_to_bins(double* bins, float f, long long* words) {
  const unsigned u = __float_as_uint(f), magnitude = u & 0x7fffffffu;
  if (magnitude >= 0x7f800000u) count_special(words, magnitude != 0x7f800000u, u >> 31);
  else bins[(magnitude >> 27) * kStride] += static_cast<double>(f);
}

//! Moves a lane's kBins bins (`mine`: its bin 0, bin c kStride further; bin c's unit
//! 2^(first_unit + 16c)) into `words` as integers of their units and zeroes them: every lane of
//! the warp together.
template <int kStride, int kBins = kFieldBins>
__device__ inline void flush_lane_bins(double* mine, long long* words, int first_unit = field_bin_unit(0)) {
#pragma unroll
  for (int c = 0; c < kBins; ++c) {
    const int unit = first_unit + kFieldBinWidth * c;
    long long m = __double2ll_rn(mine[c * kStride] * pow2(-unit));  // below 2^50, 2^55 over the warp
    mine[c * kStride] = 0;
    if (!__any_sync(0xffffffffu, m != 0)) continue;
    m = warp_sum(m);
    if ((threadIdx.x & 31) == 0 && m != 0) deposit_scaled(words, m, unit);
  }
}

//! The end of a block of kBlock lanes with bins at `lane_bins` (bin c of lane t at c * kBlock + t;
//! every thread calls it): each lane's bins into the block's `words`, reusing the bins' memory.
template <int kBlock>
__device__ inline void deposit_block_bins(double* lane_bins, long long* words) {
  const double* mine = lane_bins + threadIdx.x;
  // The last flush, the block's at once: a warp's flush costs some 25 instructions a bin, which
  // every warp paying for every bin made 1.4-1.76x a plain sum at 2^24 on an H200 for data
  // that fill every bin. Each lane turns its nonzero bins into integers of their units in place
  // (below 2^50 each: at most (kRoundsPerFlush + 1) rounds since the last flush), noting which
  // are in use; kBlock / kFieldBins threads add each used bin's column (below 2^60 over a block
  // of 1024), and one thread a used bin adds those and deposits the sum. Most data use few bins.
  constexpr int kPerBin = kBlock / kFieldBins;
  static_assert(kPerBin >= 1 && kBlock % kFieldBins == 0);
  __shared__ unsigned block_bins;  // bit c: some lane of the block has bin c nonzero
  if (threadIdx.x == 0) block_bins = 0;
  auto* units = reinterpret_cast<long long*>(lane_bins);
  unsigned used = 0;
#pragma unroll
  for (int c = 0; c < kFieldBins; ++c) {
    const double v = mine[c * kBlock];
    if (v != 0) {
      // v is a multiple of 2^unit below 2^(unit + 51): added to 1.5 * 2^(unit + 52), its units
      // are the difference of the significands (one addition, no conversion instruction).
      const double magic = 0x1.8p52 * pow2(field_bin_unit(c));
      units[c * kBlock + threadIdx.x] = __double_as_longlong(v + magic) - __double_as_longlong(magic);
      used |= 1u << c;
    } else {
      units[c * kBlock + threadIdx.x] = 0;
    }
  }
  used = warp_or(used);
  __syncthreads();  // block_bins is zero before any warp adds to it
  if ((threadIdx.x & 31) == 0 && used != 0) atomicOr(&block_bins, used);
  __syncthreads();
  const unsigned in_use = block_bins;
  const int bin = threadIdx.x / kPerBin;
  long long column = 0;
  if (in_use >> bin & 1) {
    const long long* column_of = units + bin * kBlock + threadIdx.x % kPerBin;
#pragma unroll
    for (int k = 0; k < kFieldBins; ++k) column += column_of[k * kPerBin];
  }
  __syncthreads();  // every column read before bin 0's slots take the partial sums
  units[threadIdx.x] = column;
  __syncthreads();
  if (threadIdx.x < kFieldBins && (in_use >> threadIdx.x & 1)) {
    long long m = 0;
    for (int k = 0; k < kPerBin; ++k) m += units[threadIdx.x * kPerBin + k];
    if (m != 0) deposit_scaled(words, m, field_bin_unit(threadIdx.x));
  }
}

//! The binned form of exact_block_sum, for f32 and bf16 (see the file's comment): each element is
//! added to the one double its exponent field picks, among the lane's kFieldBins in `lane_bins`
//! (shared memory, bin c of lane t at c * kBlock + t, no lane touching another's). A bin's
//! additions are multiples of its unit below 2^39 units, so 2^14 of them stay exact below 2^53
//! units: a flush every kRoundsPerFlush rounds moves the bins into the block's words.
template <int kBlock, class T>
__device__ inline void exact_block_sum_binned(const T* __restrict__ x, std::size_t n, std::size_t head, long long* words,
                                              double* lane_bins) {
  constexpr int kVec = vector_width<T>();
  constexpr std::size_t kTile = static_cast<std::size_t>(kBlock) * kUnroll;
  // 2^10 elements a lane between flushes (2^14 would do): the flush is cheap, and this way a
  // launch of 2^30 elements flushes inside its loop too, so the tests see it.
  constexpr int kRoundsPerFlush = (1 << 10) / (kUnroll * kVec);
  static_assert(kRoundsPerFlush >= 1 && (kRoundsPerFlush + 1) * kUnroll * kVec <= (1 << 14));
  const std::size_t nvec = (n - head) / kVec;
  const Vec<T>* body = reinterpret_cast<const Vec<T>*>(x + head);
  const std::size_t full_tiles = nvec / kTile;
  double* mine = lane_bins + threadIdx.x;
#pragma unroll
  for (int c = 0; c < kFieldBins; ++c) mine[c * kBlock] = 0;
  bool seen = false;  // an element other than -0
  auto one_by_one = [&](float f) {  // any element: the lone ones, and vectors with a special
    add_to_bins<kBlock>(mine, f, words);
    seen = seen || __float_as_uint(f) != 0x80000000u;
  };
  // bf16: a vector whose eight elements lie in the lane's exponent group adds its pairs' sums
  // (exact in an f32 as below) to one double in a register, not to the bins (a conversion and an
  // addition a pair instead of a bin's load, addition and store): on an H200 1.03x a plain bf16
  // sum of uniform data, against 1.12x with every pair to the bins. The group moves at a flush to
  // that of the last vector outside it when more vectors lay outside it than in it since the last.
  ExponentGroup lane_group;
  double in_group = 0;  // below 2^53 units of the group's unit: at most 2^10 + 8 elements of 2^39
  int outside = 0, last_outside_group = kFieldBins - 1;
  auto add_vector = [&](const Vec<T>& r) {
    float f[kVec];
#pragma unroll
    for (int j = 0; j < kVec; ++j) f[j] = binned_float(r.e[j]);
    if constexpr (std::is_same_v<T, bf16>) {
      float pair[kVec / 2];
#pragma unroll
      for (int j = 0; j < kVec / 2; ++j) pair[j] = __fadd_rn(f[2 * j], f[2 * j + 1]);
      unsigned w[4];
      memcpy(w, &r, sizeof w);
      if (lane_group.holds_all(ExponentGroup::bf16_top_bytes(w, 0)) & lane_group.holds_all(ExponentGroup::bf16_top_bytes(w, 1))) {
        --outside;
        double v = 0;  // the four pairs' sums, exact (below): below 2^42 units
#pragma unroll
        for (int j = 0; j < kVec / 2; ++j) v += static_cast<double>(pair[j]);
        in_group += v;
        if (lane_group.group > 0) seen = true;  // no zero lies above group 0
        else if (!seen)
#pragma unroll
          for (int j = 0; j < kVec; ++j) seen = seen || __float_as_uint(f[j]) != 0x80000000u;
        return;
      }
      ++outside;
      if (__float_as_uint(f[0]) & 0x7fffffffu) last_outside_group = ExponentGroup::group_of(f[0]);
      if (lane_group.group < 0) lane_group.take(last_outside_group);  // its sum is empty
      // Two bf16 (8-bit significands) whose exponents lie within 15 of each other add exactly
      // in an f32: such pairs take one bin addition instead of two (the bins' shared memory and
      // the instructions per element bound a bf16 sum, 8 elements a load, not the memory's
      // rate). A sum is exact when both differences give back the other addend: the one from
      // the larger addend is itself exact (Sterbenz), so it returns the other only if
      // s = a + b. If any pair of the vector is not exact (exponents far apart), each element
      // goes alone. The pairs' sums also find the specials: a NaN or an infinity makes its
      // pair's sum one, as does an overflow of two finite elements; such a vector goes one by
      // one (finite elements to the bins, the rest counted).
      bool finite = true, exact = true;
#pragma unroll
      for (int j = 0; j < kVec / 2; ++j) {
        finite &= fabsf(pair[j]) < __int_as_float(0x7f800000);
        exact &= (__fsub_rn(pair[j], f[2 * j]) == f[2 * j + 1]) & (__fsub_rn(pair[j], f[2 * j + 1]) == f[2 * j]);
      }
      if (!finite) {
#pragma unroll
        for (int j = 0; j < kVec; ++j) one_by_one(f[j]);
        return;
      }
      if (!seen)  // an element other than -0: once seen, no more to look at
#pragma unroll
        for (int j = 0; j < kVec; ++j) seen = seen || __float_as_uint(f[j]) != 0x80000000u;
      if (exact) {
#pragma unroll
        for (int j = 0; j < kVec / 2; ++j) add_finite_to_bins<kBlock>(mine, pair[j]);
        return;
      }
    } else {
      unsigned top = 0, all_bits = 0xffffffffu;
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        top = max(top, __float_as_uint(f[j]) & 0x7fffffffu);
        all_bits &= __float_as_uint(f[j]);
      }
      if (top >= 0x7f800000u) {
#pragma unroll
        for (int j = 0; j < kVec; ++j) one_by_one(f[j]);
        return;
      }
      if (top != 0) seen = true;
      else if (!seen) seen = all_bits != 0x80000000u;  // zeros: all -0 or not
    }
#pragma unroll
    for (int j = 0; j < kVec; ++j) add_finite_to_bins<kBlock>(mine, f[j]);
  };
  // The group's sum into `words` (every lane of the warp together: a warp whose lanes share a group
  // adds theirs first), then the group moves if most vectors since the last flush lay outside it.
  auto flush_group = [&] {
    if constexpr (std::is_same_v<T, bf16>) {
      const bool shared = lane_group.warp_shares();
      if (__any_sync(0xffffffffu, in_group != 0)) {
        const int unit = lane_group.unit();
        deposit_lanes_scaled(words, __double2ll_rn(in_group * pow2(-unit)), unit, shared);
        in_group = 0;
      }
      if (outside > 0) lane_group.take(last_outside_group);
      outside = 0;
    }
  };
  auto flush = [&] {
    flush_lane_bins<kBlock>(mine, words);
    flush_group();
  };
  int rounds = 0;
  for (std::size_t t = blockIdx.x; t < full_tiles; t += gridDim.x) {
    const std::size_t v = t * kTile + threadIdx.x;
    Vec<T> r[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) r[u] = body[v + u * kBlock];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) add_vector(r[u]);
    if (++rounds == kRoundsPerFlush) flush(), rounds = 0;
  }
  // The vectors of the last, partial tile: fewer than kTile, at most kUnroll a lane (one round).
  const std::size_t g = blockIdx.x * static_cast<std::size_t>(kBlock) + threadIdx.x;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * kBlock;
  for (std::size_t v = full_tiles * kTile + g; v < nvec; v += stride) add_vector(body[v]);
  // At most kVec - 1 elements before the vectors and after them.
  const std::size_t tail = head + nvec * kVec;
  if (g < head) one_by_one(binned_float(x[g]));
  if (tail + g < n) one_by_one(binned_float(x[tail + g]));
  flush_group();
  if (__any_sync(0xffffffffu, seen) && (threadIdx.x & 31) == 0)
    atomicAdd(reinterpret_cast<unsigned long long*>(words + ExactSum::kNotNegativeZero), 1ull);
  deposit_block_bins<kBlock>(lane_bins, words);
}

//! What exact_columns_kernel holds an element of T as between its load and its addition: the
//! float a bf16 widens to (widened as it arrives, so that a lane keeps one register an element in
//! flight rather than the element and its float), else T.
template <class T>
using ColumnLoaded = std::conditional_t<sizeof(T) == 2, float, T>;

//! A round's part in exact_columns_kernel's count of elements other than -0: any where its
//! largest magnitude `top` is not zero, else each element's sign word (`high(u)`: a float's bits,
//! a double's high word) tells, a zero's being its sign bit alone.
template <int kN, class High>
__device__ inline void note_round_zeros(unsigned top, High high, unsigned& not_negative_zero) {
  if (top != 0) {
    not_negative_zero = 1;
    return;
  }
#pragma unroll
  for (int u = 0; u < kN; ++u) not_negative_zero |= high(u) ^ 0x80000000u;
}

//! A lane of exact_columns_kernel that sums its column by digits (f64): LaneDigits.
struct DigitColumnLane {
  static constexpr int kSlots = ExactSum::kDigits;  // what the block adds across a column's lanes
  static constexpr std::size_t kSharedBytes = sizeof(long long) * kSlots * kDigitBlock;
  LaneDigits lane;
  __device__ explicit DigitColumnLane(void* shared) : lane{static_cast<long long*>(shared) + threadIdx.x} {}
  __device__ void clear() { lane.clear(); }
  //! Adds a round of elements (`words`: their column's, for infinities and NaNs). The round's
  //! largest magnitude decides once whether it holds an infinity or NaN, and whether any element
  //! is other than -0 (ncu, H200, f64 records of width 9: 45 instructions an element with a test,
  //! a branch and the zeros' bookkeeping each, and one load buffer copied into the other; 41
  //! with neither).
  template <class T, int kN>
  __device__ void add_round(const ColumnLoaded<T> (&v)[kN], unsigned& not_negative_zero, long long* words) {
    unsigned hi[kN], lo[kN], top = 0;  // top: the largest magnitude's high word
#pragma unroll
    for (int u = 0; u < kN; ++u) {
      const double d = exact_double(v[u]);
      hi[u] = static_cast<unsigned>(__double2hiint(d)), lo[u] = static_cast<unsigned>(__double2loint(d));
      top = max(top, (hi[u] & 0x7fffffffu) | (lo[u] != 0 ? 1u : 0u));
    }
    if (top >= 0x7ff00000u) {  // an infinity or NaN: each element as add_any
#pragma unroll
      for (int u = 0; u < kN; ++u) lane.add_any(__hiloint2double(static_cast<int>(hi[u]), static_cast<int>(lo[u])), not_negative_zero, words);
      return;
    }
    note_round_zeros<kN>(top, [&](int u) { return hi[u]; }, not_negative_zero);
#pragma unroll
    for (int u = 0; u < kN; ++u) lane.add(hi[u], lo[u]);
  }
  __device__ void carry() { lane.normalize(); }
  //! Makes the slots what slot() reads: digits in [0, 2^32) (the last signed and small).
  __device__ void finish() { lane.normalize(); }
  __device__ static long long slot(const void* shared, int slot, int t) {
    return static_cast<const long long*>(shared)[slot * kDigitBlock + t];
  }
  //! Adds the sum of a column's lanes' slot `slot` to its words.
  __device__ static void deposit(long long* words, int slot, long long sum) {
    atomicAdd(reinterpret_cast<unsigned long long*>(words + slot), static_cast<unsigned long long>(sum));
  }
};

//! A lane of exact_columns_kernel that sums its column by exponent bins (f32, and bf16 as the
//! float it converts to exactly): the binned form's kFieldBins doubles, each exact for 2^14
//! elements (the launch gives a lane at most that many), turned into integers of their units at
//! the end, in place. A round whose nonzero elements all lie in one bin (the top five bits of
//! their magnitudes agree, as most data's do: uniform [0, 1) lies in bin 7 but for values below
//! 2^-15) is added in a register first, each element a conversion and an addition (bf16: a pair
//! of them added in f32 first, exact within a bin's 16 exponents), and goes into its bin at once:
//! at most a round's 16 elements of below 2^39 units each, exact. Any other round (elements of
//! several bins, or an infinity or NaN) adds each element to its own bin, as the flat form does.
struct BinColumnLane {
  static constexpr int kSlots = kFieldBins;
  static constexpr std::size_t kSharedBytes = sizeof(double) * kSlots * kDigitBlock;
  static constexpr std::size_t kMostElements = std::size_t{1} << 14;  // a lane's, for the bins to stay exact
  double* bins;  // bin c at bins[c * kDigitBlock]
  __device__ explicit BinColumnLane(void* shared) : bins(static_cast<double*>(shared) + threadIdx.x) {}
  __device__ void clear() {
#pragma unroll
    for (int c = 0; c < kSlots; ++c) bins[c * kDigitBlock] = 0;
  }
  //! Adds a round of elements (`words`: their column's, for infinities and NaNs). Its largest
  //! and smallest nonzero magnitudes decide once for the round: one bin, an infinity or NaN, and
  //! whether any element is other than -0. Each element's own tests, with the copy of one load
  //! buffer into the other, cost f32 records of width 9 of random bits 22 instructions an
  //! element, 17.5 without (ncu, H200): 1.17x a plain column sum at 2^28 instead of 1.20x, bf16
  //! 1.81x instead of 2.42x.
  template <class T, int kN>
  __device__ void add_round(const ColumnLoaded<T> (&v)[kN], unsigned& not_negative_zero, long long* words) {
    float f[kN];
    unsigned top = 0, low = 0xffffffffu;  // the largest magnitude, and the smallest nonzero one minus 1
#pragma unroll
    for (int u = 0; u < kN; ++u) {
      f[u] = static_cast<float>(v[u]);
      const unsigned magnitude = __float_as_uint(f[u]) & 0x7fffffffu;
      top = max(top, magnitude);
      low = min(low, magnitude - 1);  // a zero wraps to the largest: it adds nothing to any bin
    }
    note_round_zeros<kN>(top, [&](int u) { return __float_as_uint(f[u]); }, not_negative_zero);
    // One bin for every nonzero element, and not bin 15, which holds the infinities and NaNs
    // (field 255). low + 1 is the smallest nonzero magnitude (0 where every element is zero).
    const unsigned bin = top >> 27;
    if (((low + 1) >> 27) == bin && bin < kFieldBins - 1) {
      double sum = 0;
      if constexpr (std::is_same_v<T, bf16> && kN % 2 == 0) {
#pragma unroll
        for (int u = 0; u < kN; u += 2) sum += static_cast<double>(__fadd_rn(f[u], f[u + 1]));
      } else {
#pragma unroll
        for (int u = 0; u < kN; ++u) sum += static_cast<double>(f[u]);
      }
      bins[bin * kDigitBlock] += sum;
    } else if (top < 0x7f800000u) {  // finite: each element to its bin
#pragma unroll
      for (int u = 0; u < kN; ++u) add_finite_to_bins<kDigitBlock>(bins, f[u]);
    } else {
#pragma unroll
      for (int u = 0; u < kN; ++u) add_to_bins<kDigitBlock>(bins, f[u], words);
    }
  }
  __device__ void carry() {}  // nothing to carry: a lane adds at most kMostElements
  //! Each bin as an integer of its units (below 2^53), in place.
  __device__ void finish() {
#pragma unroll
    for (int c = 0; c < kSlots; ++c) {
      double& bin = bins[c * kDigitBlock];
      reinterpret_cast<long long&>(bin) = __double2ll_rn(bin * pow2(-field_bin_unit(c)));
    }
  }
  __device__ static long long slot(const void* shared, int slot, int t) {
    return static_cast<const long long*>(shared)[slot * kDigitBlock + t];
  }
  __device__ static void deposit(long long* words, int slot, long long sum) { deposit_scaled(words, sum, field_bin_unit(slot)); }
};

//! The column lane of T: bins for f32 and bf16, digits for f64 (f16 records have a kernel of their
//! own: exact_f16_records_kernel, below).
template <class T>
using ColumnLane = std::conditional_t<std::is_same_v<T, double>, DigitColumnLane, BinColumnLane>;

//! The blocks to an SM that exact_columns_kernel<T>'s registers are set for (0: the compiler's
//! choice). f64's lanes get three blocks' registers, their shared memory's limit anyway: 158 a
//! lane and no stack (142 before the two load buffers), where the compiler's own choice was 72
//! and 104 bytes of stack (f64 records of width 9 on an H200: 1.16x a plain column sum at 2^24
//! and 1.36x at 2^28, from 1.25x and 1.40x). Asking eight blocks' for the bins' lanes spilled
//! bf16's registers.
template <class T>
constexpr int kColumnBlocksPerSM = std::is_same_v<T, double> ? 3 : 0;

//! Exact column sums of records: `rows` rows of `width` values, each column's partial added to
//! `totals` with 64-bit atomics: `copies` sets of width ExactSum word sets, zero on entry, block b
//! adding to set b % copies (fold_column_copies adds them into the first). Every block ends by
//! adding to the same few words of each column, all blocks at nearly the same time, and atomics
//! on one address queue at the L2: spread over copies, each address takes some 32 blocks' instead
//! of all of them. Each lane sums one column with its own ColumnLane<T>: a block of kDigitBlock
//! lanes takes min(width, kDigitBlock) neighbouring columns (blockIdx.y picks which) of a range of
//! rows (blockIdx.x picks which), in groups of lanes that take every groups-th row, so that a warp
//! reads neighbouring elements of a row or of consecutive rows. At the end each column's lanes'
//! slots are added together and into its words. At most 2^30 elements a launch, and at most
//! BinColumnLane::kMostElements a lane. bf16 records of random bits take 1.7-1.9x a plain
//! column sum on an H200 (18 instructions an element, DRAM 42% busy): integer bins from the
//! elements' bits (half the shared memory's traffic, 21 instructions) were slower, and rows staged
//! in shared memory with cp.async 2-9% faster at 2^28 but likely slower at 2^24
//! (bench/results/nvidia-h200/logs/exact-records-*-experiment.md).
template <class T>
__global__ __launch_bounds__(kDigitBlock, kColumnBlocksPerSM<T>) void exact_columns_kernel(const T* __restrict__ x,
                                                                                         std::size_t rows, int width,
                                                                                         long long* totals, int copies) {
  using Lane = ColumnLane<T>;
  // A lane reads one element a load: 16 of them in flight for the bins (64 registers a lane,
  // room for eight blocks to an SM; 32 of the 16-bit types took 96 registers, five blocks), 8 for
  // the digits (16, with 112 registers, took f64 records of width 9 from 1.37x a plain column sum
  // to 1.50x at 2^28 on an H200).
  constexpr int kBlock = kDigitBlock, kAhead = sizeof(T) == 8 ? 8 : 16;
  extern __shared__ long long shared_slots[];     // Lane::kSharedBytes
  const int per_tile = min(width, kBlock), groups = kBlock / per_tile;
  const int group = threadIdx.x / per_tile, column = blockIdx.y * per_tile + threadIdx.x % per_tile;
  const bool active = group < groups && column < width;
  Lane lane(shared_slots);
  lane.clear();
  totals += static_cast<std::size_t>(blockIdx.x % copies) * width * ExactSum::kWords;  // this block's copy
  long long* words = totals + static_cast<std::size_t>(active ? column : 0) * ExactSum::kWords;
  unsigned not_negative_zero = 0;
  if (active) {
    // The block's rows are one contiguous range, its groups taking every groups-th: the block
    // streams through it, the next kAhead rounds' rows beside this one's. Rows dealt to the blocks
    // in turn (a grid-wide stride) scattered each block's reads over the whole array in pieces of
    // a few hundred bytes: f32 records of width 9 at 2^28 took 1.62x a plain column sum on an
    // H200 that way, 1.46x in ranges.
    const std::size_t per_block = (rows + gridDim.x - 1) / gridDim.x, first = blockIdx.x * per_block;
    const std::size_t end = min(rows, first + per_block);
    const std::size_t step = groups, stride = step * width;
    std::size_t r = first + group;
    const T* at = x + r * width + column;
    int since_carry = 0;  // elements added since the lane's last carry: at most 2^10 + kAhead
    // As the flat digit form: the next kAhead elements load while the lane adds these, into the
    // other of two buffers (a copy from one into the other cost an instruction an element). The
    // loads' offsets are ints: a launch holds at most 2^30 elements, and only rows that exist load.
    const int stride32 = static_cast<int>(stride);
    using Loaded = ColumnLoaded<T>;
    Loaded a[kAhead], b[kAhead];
    auto load = [&](Loaded (&into)[kAhead], const T* from) {
#pragma unroll
      for (int u = 0; u < kAhead; ++u) into[u] = static_cast<Loaded>(from[u * stride32]);
    };
    // f64: each lane also asks the L2 for one row of the round kPrefetchRounds ahead (its column
    // picks which of the round's rows, so that the block's lanes cover them all). The next round
    // alone, in registers, kept too few bytes in flight for the three blocks an SM that the
    // digits' shared memory allows (DRAM 65% busy under ncu): f64 records of width 9 on an H200
    // took 1.34x a plain column sum at 2^28, 1.21x with the requests (three rounds ahead: the
    // same). The bins' lanes, with 16 loads in flight and more blocks, lost by them (bf16 random
    // bits 1.71x to 1.93x).
    constexpr int kPrefetchRounds = sizeof(T) == 8 ? 2 : 0;
    const std::size_t ahead_rows = (kPrefetchRounds * kAhead + column % kAhead) * step;
    // Adds the round in `v` (rows r, r + step, ...), loading the next round into `next` first
    // where it is whole; false when it is not (the rest go one by one).
    auto round = [&](Loaded (&v)[kAhead], Loaded (&next)[kAhead]) {
      const std::size_t r_next = r + kAhead * step;
      const bool more = r_next + (kAhead - 1) * step < end;
      if (more) load(next, at + kAhead * stride);
      if constexpr (kPrefetchRounds > 0)
        if (r + ahead_rows < end) asm volatile("prefetch.global.L2 [%0];" ::"l"(at + ahead_rows * width));
      lane.template add_round<T>(v, not_negative_zero, words);
      if ((since_carry += kAhead) >= (1 << 10)) lane.carry(), since_carry = 0;
      r = r_next, at += kAhead * stride;
      return more;
    };
    if (r + (kAhead - 1) * step < end) {
      load(a, at);
      while (round(a, b) && round(b, a)) {
      }
    }
    for (; r < end; r += step, at += stride) {
      const Loaded one[1] = {static_cast<Loaded>(*at)};
      lane.template add_round<T>(one, not_negative_zero, words);
    }
    if (not_negative_zero != 0) atomicAdd(reinterpret_cast<unsigned long long*>(words + ExactSum::kNotNegativeZero), 1ull);
  }
  lane.finish();  // idle lanes' slots are zero
  __syncthreads();
  // Each (column, slot) of the block's: its groups lanes added, then into the column's words.
  for (int p = threadIdx.x; p < per_tile * Lane::kSlots; p += kBlock) {
    const int local = p % per_tile, slot = p / per_tile, col = blockIdx.y * per_tile + local;
    if (col >= width) continue;
    long long sum = 0;
    for (int g = 0; g < groups; ++g) sum += Lane::slot(shared_slots, slot, g * per_tile + local);
    if (sum != 0) Lane::deposit(totals + static_cast<std::size_t>(col) * ExactSum::kWords, slot, sum);
  }
}

//! exact_f16_records_kernel's block, and the most elements it lets a slot add (below).
constexpr int kF16RecordsBlock = 256;
constexpr std::size_t kF16MostPerSlot = std::size_t{1} << 11;

//! Exact column sums of f16 records, read as records_kernel (records.cuh) reads plain ones: thread
//! g reads the kVec-element vectors at kVec * g + i * stride of the flat array, the stride a
//! multiple of the width and of kVec, so that element j of each of its vectors is always of
//! column (kVec * g + j) mod width, and a warp reads 512 consecutive bytes a load. Each of a
//! thread's kVec slots adds its elements to one double as the flat f16 form does (f16_scaled: a
//! double adds 2^13 finite f16 exactly, in any order); the host makes the stride at least a
//! kF16MostPerSlot-th of the elements, so that a slot takes at most that many, and a column's
//! slots in a block, each at most 2^51 units of 2^-24, add below 2^62 as integers. At the end each
//! slot's double becomes its count of 2^-24 (f16_units), and a warp adds a column's slots and
//! deposits them in its words (`totals`: `copies` sets of width ExactSum word sets, block b adding
//! to set b % copies, as exact_columns_kernel's). A vector holding an infinity or NaN goes one by
//! one. kVec = 1 for records off a 16-byte boundary, one element a load. On an H200, f16 records
//! of width 9 take 0.92x a plain column sum at 2^28 and 0.75x at 2^24, on uniform and random-bit
//! data alike; an exact_columns_kernel lane a column, one element a load, took 1.35x and 0.96x.
template <int kVec>
__global__ __launch_bounds__(kF16RecordsBlock) void exact_f16_records_kernel(const f16* __restrict__ x, std::size_t elements,
                                                                            int width, std::size_t stride,
                                                                            long long* totals, int copies) {
  static_assert(kVec == 1 || kVec == vector_width<f16>(), "whole 16-byte vectors, or one element a load");
  constexpr int kBlock = kF16RecordsBlock, kSlots = kBlock * kVec, kHalfWords = (kVec + 1) / 2;
  __shared__ long long slot_units[kSlots];
  __shared__ unsigned slot_seen[kBlock];  // bit j: the thread's slot j added an element other than -0
  totals += static_cast<std::size_t>(blockIdx.x % copies) * width * ExactSum::kWords;  // this block's copy
  const std::size_t first = kVec * (blockIdx.x * static_cast<std::size_t>(kBlock) + threadIdx.x);
  double scaled[kVec] = {};           // each slot's sum times 2^-1008 (f16_scaled)
  unsigned not_negative_zero[kHalfWords] = {};  // slot j's elements' bits ^ -0 ORed, in half j % 2 of word j / 2
  if (first < stride) {  // threads past the stride have no slots (the grid is rounded up)
    const int first_column = static_cast<int>(first % width);
    auto add_one = [&](int j, unsigned h) {  // any element of slot j: the tail's, and a vector's with a special
      not_negative_zero[j / 2] |= (h ^ 0x8000u) << (16 * (j % 2));
      if (!counted_f16_special(h, totals + static_cast<std::size_t>((first_column + j) % width) * ExactSum::kWords))
        scaled[j] += f16_scaled(h);
    };
    using Loaded = std::conditional_t<kVec == 1, f16, Vec<f16>>;  // one load
    auto add_loaded = [&](const Loaded& r) {
      if constexpr (kVec == 1) {
        add_one(0, r.bits);
      } else {
        unsigned w[kHalfWords];
        memcpy(w, &r, sizeof w);
        if (f16_holds_special(f16_vector_top(w))) {
#pragma unroll
          for (int j = 0; j < kVec; ++j) add_one(j, (w[j / 2] >> (16 * (j % 2))) & 0xffffu);
          return;
        }
#pragma unroll
        for (int k = 0; k < kHalfWords; ++k) {
          not_negative_zero[k] |= w[k] ^ 0x80008000u;
          scaled[2 * k] += f16_scaled(w[k] & 0xffffu);
          scaled[2 * k + 1] += f16_scaled(w[k] >> 16);
        }
      }
    };
    auto load = [&](std::size_t at) { return *reinterpret_cast<const Loaded*>(x + at); };
    std::size_t pos = first;
    for (; pos + (kUnroll - 1) * stride + kVec <= elements; pos += kUnroll * stride) {
      Loaded r[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) r[u] = load(pos + u * stride);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) add_loaded(r[u]);
    }
    for (; pos < elements; pos += stride) {
      if (pos + kVec <= elements) {
        add_loaded(load(pos));
      } else {
#pragma unroll
        for (int j = 0; j < kVec; ++j)  // unrolled: a slot picked at run time would put them all in local memory
          if (pos + j < elements) add_one(j, x[pos + j].bits);
      }
    }
  }
  unsigned seen = 0;
#pragma unroll
  for (int j = 0; j < kVec; ++j) {
    slot_units[kVec * threadIdx.x + j] = f16_units(scaled[j]);  // zero for slots past the stride
    seen |= ((not_negative_zero[j / 2] >> (16 * (j % 2))) & 0xffffu) != 0 ? 1u << j : 0u;
  }
  slot_seen[threadIdx.x] = seen;
  __syncthreads();
  // A warp a column: slots s = r, r + width, ... of the block are of column (block's first + r) mod width.
  const std::size_t block_first = blockIdx.x * static_cast<std::size_t>(kSlots);
  const int lane = threadIdx.x & 31, residues = min(width, kSlots);
  for (int r = threadIdx.x / 32; r < residues; r += kBlock / 32) {
    long long sum = 0;
    bool any = false;
    for (long long s = r + static_cast<long long>(lane) * width; s < kSlots; s += 32ll * width) {
      sum += slot_units[s];
      any = any || ((slot_seen[s / kVec] >> (s % kVec)) & 1u) != 0;
    }
    sum = warp_sum(sum);
    if (__any_sync(0xffffffffu, any) && lane == 0) {  // no element of the column here, nothing to add
      long long* words = totals + (block_first + r) % width * ExactSum::kWords;
      if (sum != 0) deposit_scaled(words, sum, -24);
      atomicAdd(reinterpret_cast<unsigned long long*>(words + ExactSum::kNotNegativeZero), 1ull);
    }
  }
}

//! Adds copies 1 .. copies - 1 of exact_columns_kernel's `words` words each into copy 0 (integer
//! words: the same sums whatever block added to which copy).
__global__ inline void fold_column_copies(long long* totals, std::size_t words, int copies) {
  for (std::size_t w = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; w < words;
       w += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    long long sum = 0;
    for (int k = 1; k < copies; ++k) sum += totals[k * words + w];
    totals[w] += sum;
  }
}

//! Whether T's exact sums go through exponent bins (exact_block_sum_binned): f32 and bf16.
template <class T>
constexpr bool kBinnedSum = std::is_same_v<T, float> || std::is_same_v<T, bf16>;
//! Whether T's exact sums go through the digit form (exact_block_sum_digits): f64.
template <class T>
constexpr bool kDigitSum = std::is_same_v<T, double>;
//! The dynamic shared memory a block needs: kFieldBins doubles a lane (the binned form), the
//! digits of each of kDigitBlock lanes (the digit form), none (f16).
template <class T>
constexpr std::size_t dynamic_bytes(int block) {
  if constexpr (kBinnedSum<T>) return sizeof(double) * kFieldBins * static_cast<std::size_t>(block);
  else if constexpr (kDigitSum<T>) return sizeof(long long) * ExactSum::kDigits * kDigitBlock;
  else return 0;
}

//! Copies the device-wide accumulator to `out` and zeroes it for the next call.
__device__ inline void take_total(long long* total, long long* out) {
  for (int w = threadIdx.x; w < ExactSum::kWords; w += blockDim.x) {
    out[w] = load_cg(total + w);
    total[w] = 0;
  }
}

//! Each block sums its share into shared words and adds the nonzero ones to `total` (zero on
//! entry); with `counter`, the last block to finish copies `total` to `out` and zeroes it (single
//! pass); without, exact_finish_kernel does.
template <int kBlock, class T>
__global__ __launch_bounds__(kBlock) void exact_sum_kernel(const T* __restrict__ x, std::size_t n, std::size_t head,
                                                           long long* total, unsigned int* counter, long long* out) {
  __shared__ long long words[ExactSum::kWords];
  __shared__ bool last_block;
  extern __shared__ double dynamic[];  // dynamic_bytes<T>(kBlock)
  for (int w = threadIdx.x; w < ExactSum::kWords; w += kBlock) words[w] = 0;
  __syncthreads();
  static_assert(!kDigitSum<T> || kBlock == kDigitBlock);
  if constexpr (std::is_same_v<T, f16>) exact_block_sum_f16<kBlock>(x, n, head, words);
  else if constexpr (kBinnedSum<T>) exact_block_sum_binned<kBlock>(x, n, head, words, dynamic);
  else exact_block_sum_digits(x, n, head, words, reinterpret_cast<long long*>(dynamic));
  __syncthreads();
  for (int w = threadIdx.x; w < ExactSum::kWords; w += kBlock)
    if (words[w] != 0) atomicAdd(reinterpret_cast<unsigned long long*>(total + w), static_cast<unsigned long long>(words[w]));
  if (counter == nullptr) return;
  __threadfence();  // this block's additions are visible device-wide before its ticket
  __syncthreads();
  if (threadIdx.x == 0) last_block = atomicAdd(counter, 1u) == gridDim.x - 1;
  __syncthreads();
  if (!last_block) return;
  __threadfence();
  take_total(total, out);
  if (threadIdx.x == 0) *counter = 0;
}

//! The second launch of the two-launch form.
__global__ inline void exact_finish_kernel(long long* total, long long* out) { take_total(total, out); }

}  // namespace exact
}  // namespace xreduce::cuda
