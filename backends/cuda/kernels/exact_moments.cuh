#pragma once
// The exact partials of x and of x squared in one pass (Accuracy::exact var and std; the core
// rounds (n Q - S^2) / (n (n - c)) once from them, as it does the CPU's).
//
// A lane adds each element to S and its square to Q, the same way whatever the data (a branch
// only for a vector holding an infinity or NaN):
// - f32, bf16 and f16 (each a float exactly): S in the binned form's exponent bins, and the
//   square, a double exactly (48 significant bits, 2^-298 to 2^256), as two doubles of 24 bits
//   into square bins of the same kind (kSquareBins, below): three bin additions an element;
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

//! The dynamic shared memory of an exact_moments_kernel<T> block: Q's digits then S's (f64), or
//! Q's square bins then S's bins.
template <class T>
constexpr std::size_t moments_dynamic_bytes() {
  constexpr std::size_t digits = sizeof(long long) * ExactSum::kDigits * kDigitBlock;
  if constexpr (std::is_same_v<T, double>) return 2 * digits;
  else return sizeof(double) * (kSquareBins + kFieldBins) * kDigitBlock;
}

//! An element of an exact-moments type that is not f64 as the float it is exactly.
template <class T>
__device__ inline float moments_float(T v) {
  if constexpr (std::is_same_v<T, f16>) return static_cast<float>(v);
  else return binned_float(v);
}

//! One lane of exact_moments_kernel: its part of S (f64: digits; else the binned form's bins)
//! and of Q (f64: digits; else square bins) in shared memory, and what it has seen.
template <class T>
struct MomentsLane {
  static constexpr bool kF64 = std::is_same_v<T, double>;
  static constexpr int kBlock = kDigitBlock, kVec = vector_width<T>();
  static constexpr std::size_t kQSlots = kF64 ? ExactSum::kDigits : kSquareBins;  // Q's words a lane
  LaneDigits squares;          // f64's Q
  LaneDigits values;           // f64's S
  double* square_bins;         // the floats' Q: bin c at square_bins[c * kBlock]
  double* bins;                // the floats' S: bin c at bins[c * kBlock]
  long long* s_words;          // the block's S and Q words
  long long* q_words;
  unsigned not_negative_zero;  // nonzero once an element other than -0 passed through this lane
  unsigned out_of_range;       // f64 elements whose squares the partial cannot hold

  //! `lane_shared`: the block's moments_dynamic_bytes<T>() (Q's slots, then S's).
  __device__ __forceinline__ MomentsLane(long long* lane_shared, long long* s, long long* q)
      : squares{lane_shared + threadIdx.x},
        values{lane_shared + kQSlots * kBlock + threadIdx.x},
        square_bins(reinterpret_cast<double*>(lane_shared) + threadIdx.x),
        bins(reinterpret_cast<double*>(lane_shared + kQSlots * kBlock) + threadIdx.x),
        s_words(s),
        q_words(q),
        not_negative_zero(0),
        out_of_range(0) {
    if constexpr (kF64) {
      squares.clear();
      values.clear();
    } else {
#pragma unroll
      for (int c = 0; c < kSquareBins; ++c) square_bins[c * kBlock] = 0;
#pragma unroll
      for (int c = 0; c < kFieldBins; ++c) bins[c * kBlock] = 0;
    }
  }
  //! A finite element's square into Q: f64's as a double and its fma remainder into digits; a
  //! float's split into p and e (see kSquareBins), each into its square bin.
  __device__ __forceinline__ void add_square(double v) {
    const double d = v * v;
    if constexpr (kF64) {
      const double a = fabs(v);
      if (a < 0x1p-480 || a > 0x1p511) {
        out_of_range += a != 0;
        return;
      }
      const double e = fma(v, v, -d);
      squares.add(static_cast<unsigned>(__double2hiint(e)), static_cast<unsigned>(__double2loint(e)));
      squares.add(static_cast<unsigned>(__double2hiint(d)), static_cast<unsigned>(__double2loint(d)));
    } else {
      const int hi = __double2hiint(d);
      const double p = __hiloint2double(hi, __double2loint(d) & static_cast<int>(0xe0000000u)), e = d - p;
      square_bins[square_bin(static_cast<unsigned>(hi)) * kBlock] += p;
      square_bins[square_bin(static_cast<unsigned>(__double2hiint(e))) * kBlock] += e;
    }
  }
  //! Any element: the lone ones, and those of vectors with an infinity or NaN.
  __device__ __forceinline__ void add_one(T element) {
    if constexpr (kF64) {
      values.add_any(element, not_negative_zero, s_words);
      if (isfinite(element)) add_square(element);
      else count_special(q_words, isnan(element), false);
    } else {
      const float f = moments_float(element);
      not_negative_zero |= __float_as_uint(f) ^ 0x80000000u;
      add_to_bins<kBlock>(bins, f, s_words);
      if (isfinite(f)) add_square(f);
      else count_special(q_words, isnan(f), false);
    }
  }
  __device__ __forceinline__ void add_vector(const Vec<T>& r) {
    if constexpr (kF64) {
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
        return;
      }
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        not_negative_zero |= (hi[j] ^ 0x80000000u) | lo[j];
        values.add(hi[j], lo[j]);
        add_square(r.e[j]);
      }
    } else {
      float f[kVec];
      unsigned top = 0;
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        f[j] = moments_float(r.e[j]);
        top = max(top, __float_as_uint(f[j]) & 0x7fffffffu);
      }
      if (top >= 0x7f800000u) {
#pragma unroll
        for (int j = 0; j < kVec; ++j) add_one(r.e[j]);
        return;
      }
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        not_negative_zero |= __float_as_uint(f[j]) ^ 0x80000000u;
        bins[(__float_as_uint(f[j]) >> 27 & (kFieldBins - 1)) * kBlock] += static_cast<double>(f[j]);
        add_square(f[j]);
      }
    }
  }
  //! The carries of the digits, or the bins' flush into the block's words: every lane of the
  //! warp together.
  __device__ __forceinline__ void carry() {
    if constexpr (kF64) {
      squares.normalize();
      values.normalize();
    } else {
      flush_lane_bins<kBlock>(bins, s_words);
      flush_lane_bins<kBlock, kSquareBins>(square_bins, q_words, kSquareFirstUnit);
    }
  }
  //! The block's end (every thread): the lanes' S and Q into the block's words.
  __device__ __forceinline__ void deposit(long long* lane_shared) {
    if (__any_sync(0xffffffffu, not_negative_zero != 0) && (threadIdx.x & 31) == 0)
      atomicAdd(reinterpret_cast<unsigned long long*>(s_words + ExactSum::kNotNegativeZero), 1ull);
    if (out_of_range != 0)
      atomicAdd(reinterpret_cast<unsigned long long*>(q_words + ExactSum::kCount), static_cast<unsigned long long>(out_of_range));
    if constexpr (kF64) {
      deposit_lane_digits(squares, lane_shared, q_words);
      deposit_lane_digits(values, lane_shared + kQSlots * kBlock, s_words);
    } else {
      flush_lane_bins<kBlock, kSquareBins>(square_bins, q_words, kSquareFirstUnit);
      deposit_block_bins<kBlock>(reinterpret_cast<double*>(lane_shared + kQSlots * kBlock), s_words);
    }
  }
};

//! Adds the exact partials of n elements (at most kMaxLaunch) and of their squares to `totals`
//! (S's words, then Q's; zero on entry) with 64-bit atomics. An f64 whose square leaves the
//! exact partial's range adds 1 to Q's count word (which the caller sets to n after reading it).
//! (Two blocks an SM in the launch bounds, which lets ptxas allot more registers: without them the
//! f32 kernel took 60, not 64, and ran 1.4% slower on an H200, 2.17x a plain sum against 2.14x,
//! two runs each: logs/statistics-device-ca4c55d.md.)
template <class T>
__global__ __launch_bounds__(kDigitBlock, 2) void exact_moments_kernel(const T* __restrict__ x, std::size_t n, std::size_t head,
                                                                    long long* totals) {
  using Lane = MomentsLane<T>;
  constexpr int kBlock = Lane::kBlock, kVec = Lane::kVec;
  constexpr std::size_t kTile = static_cast<std::size_t>(kBlock) * kUnroll;
  // Carries and flushes every 2^10 elements a lane (2^9 for f64, whose squares add two values
  // an element: a digit takes less than 2^53 + 2^33 an element then). A lane adds at most a round
  // and its two lone elements more before the last.
  constexpr int kRoundsPerCarry = (Lane::kF64 ? 1 << 9 : 1 << 10) / (kUnroll * kVec);
  static_assert(kRoundsPerCarry >= 1);
  __shared__ long long words[2 * ExactSum::kWords];  // the block's S, then Q
  extern __shared__ long long lane_shared[];         // moments_dynamic_bytes<T>()
  for (int w = threadIdx.x; w < 2 * ExactSum::kWords; w += kBlock) words[w] = 0;
  Lane lane(lane_shared, words, words + ExactSum::kWords);
  __syncthreads();  // the words are zero before any lane counts a special in them

  const std::size_t nvec = (n - head) / kVec;
  const Vec<T>* body = reinterpret_cast<const Vec<T>*>(x + head);
  const std::size_t full_tiles = nvec / kTile;
  int rounds = 0;
  // As the f64 digit form: a lane's next tile loads while it adds this one's.
  Vec<T> r[kUnroll], next[kUnroll];
  if (blockIdx.x < full_tiles)
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) r[u] = body[blockIdx.x * kTile + threadIdx.x + u * kBlock];
  for (std::size_t t = blockIdx.x; t < full_tiles; t += gridDim.x) {
    const std::size_t t_next = t + gridDim.x;
    if (t_next < full_tiles)
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) next[u] = body[t_next * kTile + threadIdx.x + u * kBlock];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) lane.add_vector(r[u]);
    if (++rounds == kRoundsPerCarry) lane.carry(), rounds = 0;
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) r[u] = next[u];
  }
  // The vectors of the last, partial tile: fewer than kTile, at most kUnroll a lane (one round).
  const std::size_t g = blockIdx.x * static_cast<std::size_t>(kBlock) + threadIdx.x;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * kBlock;
  for (std::size_t v = full_tiles * kTile + g; v < nvec; v += stride) lane.add_vector(body[v]);
  // At most kVec - 1 elements before the vectors and after them.
  const std::size_t tail = head + nvec * kVec;
  if (g < head) lane.add_one(x[g]);
  if (tail + g < n) lane.add_one(x[tail + g]);
  lane.deposit(lane_shared);
  __syncthreads();
  for (int w = threadIdx.x; w < 2 * ExactSum::kWords; w += kBlock)
    if (words[w] != 0) atomicAdd(reinterpret_cast<unsigned long long*>(totals + w), static_cast<unsigned long long>(words[w]));
}

}  // namespace exact
}  // namespace xreduce::cuda
