#pragma once
// Exact sums of rows and segments (Accuracy::exact, layouts inner and ragged) of f32, f16 and
// bf16, in two passes of the segments kernels (segmented.cuh), so that both are balanced over
// any mix of lengths as the plain sums are, and read the offsets the same way. Each segment's
// sum is rounded once, on the GPU, by the lane that writes it.
//
// The first pass (SegmentWindowSum) finishes every segment whose exact sum a pair of doubles
// holds on the way: a lane adds its elements to one double, exact while their exponents span at
// most 20 binades (below), and past that keeps a pair by TwoSum; lanes and chunks combine as
// pairs (hi, lo), every addition checked exact. While in range, that costs a conversion, an
// addition and four integer instructions an element, and it covers ordinary data (uniform,
// subnormal-heavy: wherever the high double's errors add exactly in the low one). A segment
// that leaves it (an addition not exact, an infinity or a NaN) is marked, and the second pass
// (ExactSegmentSum) reads the marked segments alone, with the digits below; where none is
// marked, its kernels return at once.
//
// ExactSegmentSum: a partial (FloatDigits) is a double and digits whose values add to the exact
// sum. A lane adds its elements to the double alone while their exponents span at most 20
// binades, as above. Past that, each element goes to one of the lane's 16 exponent bins in shared
// memory (exponent_bins.cuh, as the column sums): a conversion, an addition and its load and
// store, whatever the data. When the lane's partial is taken, its touched bins go into the digits.
// Partials combine: their doubles by Knuth's TwoSum (s + x = t + e exactly, t the double sum and
// e its error, which goes to the digits where it is not zero), their digits word by word. A
// segment whose digits stayed empty is its double rounded once to T; the others go through the
// digits. The second pass's lanes take four times the plain sums' elements (ExactSegmentPolicy),
// so that fewer partials combine. On an H200, power-law segments of 2^28 f32 of wide exponents:
// 8.7x the plain sums, 9.5x on random bits, where each element by TwoSum with its error into
// three digits, in lanes of the plain sums' size, took 13.3-13.6x; uniform data 1.29x, as before
// (bench/results/nvidia-h200/logs/exact-segments-wide-ncu.md: ncu's view of both).
//
// The digits: every finite float is m * 2^(p - 149) with m < 2^24 and 0 <= p <= 253, so the sum
// of any floats, and every double above (sums, errors and bins of them), is a multiple of 2^-149.
// Ten 32-bit digits in 64-bit words hold it as ExactSum holds a double's sum (Neal's small
// superaccumulator): digit d weighs 2^(32 d - 149), carries stay in the words until normalize(),
// word 9 takes the top carries and the sign. A partial's digits travel in registers and cross
// lanes by shuffles, but only the words that some lane of the warp has nonzero, and none where no
// lane has digits.
//
// f64 has no such form here (its 2098 bits of range would take 67 words a lane): the CPU
// backends and the flat and column kernels of exact_sum.cuh sum it.

#include "exponent_bins.cuh"
#include "segmented.cuh"

namespace xreduce::cuda {

//! The exact sum of floats: fast + the digits (see above). Aggregate, no initializers: it lives
//! in __shared__ arrays.
struct FloatDigits {
  static constexpr int kWords = 10, kLowestExponent = -149;
  enum Flag : unsigned { kNaN = 1, kPosInf = 2, kNegInf = 4, kAny = 8, kNotNegativeZero = 16, kDigits = 32 };
  double fast;          //!< a part of the sum, held exactly
  long long w[kWords];  //!< the digits: all zero unless flags has kDigits
  unsigned flags;       //!< Flag bits: what was added besides finite values, and whether there are digits
};

//! Propagates the carries: words 0..8 into [0, 2^32), the rest (and the sign) into word 9.
__device__ inline void normalize(FloatDigits& a) {
#pragma unroll
  for (int i = 0; i + 1 < FloatDigits::kWords; ++i) {
    const long long carry = a.w[i] >> 32;  // arithmetic: floor division by 2^32
    a.w[i] &= 0xffffffffll;
    a.w[i + 1] += carry;
  }
}

//! The error of t = s + x in double (Knuth's TwoSum, whatever the magnitudes): s + x = t + e
//! exactly. No multiplication, so nothing the compiler may contract.
__device__ inline double two_sum_error(double s, double x, double t) {
  const double moved = t - s;
  return (s - (t - moved)) + (x - moved);
}

//! A nonzero double d, a multiple of 2^-149, as digits: d = (c0 + c1 2^32 + c2 2^64) 2^(32 k - 149),
//! each part signed as d is, c0 and c1 below 2^32 and c2 below 2^21 in magnitude.
struct DigitSpan {
  int k;
  long long c0, c1, c2;
};
__device__ inline DigitSpan span_of(double d) {
  const unsigned long long bits = static_cast<unsigned long long>(__double_as_longlong(d));
  const int field = static_cast<int>((bits >> 52) & 0x7ff);
  unsigned long long m = (bits & ((1ull << 52) - 1)) | (field ? 1ull << 52 : 0);
  int p = max(field, 1) - 1075 - FloatDigits::kLowestExponent;  // the significand's lowest bit above 2^-149
  if (p < 0) m >>= -p, p = 0;  // bits below 2^-149, all zero (at most 52 of them: d >= 2^-149)
  const int r = p & 31;
  const unsigned long long low = m << r, high = r ? m >> (64 - r) : 0;
  const long long sign = static_cast<long long>(bits) >> 63;  // 0 or -1: v -> (v ^ sign) - sign negates
  return {p >> 5, (static_cast<long long>(low & 0xffffffffull) ^ sign) - sign, (static_cast<long long>(low >> 32) ^ sign) - sign,
          (static_cast<long long>(high) ^ sign) - sign};
}

//! Adds d (nonzero, a multiple of 2^-149, below 2^174) to a partial's digits, by selects (an
//! indexed register array would go to local memory); a part past word 9 goes into word 9. The
//! words take each less than 2^32 in magnitude: the caller normalizes before 2^31 of them.
__device__ inline void add_span(FloatDigits& a, double d) {
  const DigitSpan v = span_of(d);
#pragma unroll
  for (int i = 0; i < FloatDigits::kWords; ++i)
    a.w[i] += (i == v.k ? v.c0 : 0) + (i == v.k + 1 ? v.c1 : 0) + (i == v.k + 2 ? v.c2 : 0) +
              (i == FloatDigits::kWords - 1 && v.k + 2 == FloatDigits::kWords ? v.c2 * (1ll << 32) : 0);
  a.flags |= FloatDigits::kDigits;
}

//! add_span, normalized.
__device__ inline void deposit(FloatDigits& a, double d) {
  add_span(a, d);
  normalize(a);
}

//! The warp's shuffle of a partial (every lane of the warp calls it, as every shuffle of the
//! segments kernels): the digits only where some lane has them, and only their nonzero words.
__device__ inline FloatDigits shfl_down(const FloatDigits& v, int offset) {
  FloatDigits r;
  r.fast = __shfl_down_sync(0xffffffffu, v.fast, offset);
  r.flags = __shfl_down_sync(0xffffffffu, v.flags, offset);
  unsigned nonzero = 0;
  if (warp_or(v.flags & FloatDigits::kDigits)) {
#pragma unroll
    for (int i = 0; i < FloatDigits::kWords; ++i) nonzero |= (v.w[i] != 0 ? 1u : 0u) << i;
    nonzero = warp_or(nonzero);
  }
#pragma unroll
  for (int i = 0; i < FloatDigits::kWords; ++i) r.w[i] = (nonzero >> i) & 1 ? __shfl_down_sync(0xffffffffu, v.w[i], offset) : 0;
  return r;
}

//! The most elements a lane of ExactSegmentPolicy adds: a short segment's lane fewer than twice
//! group_loads vectors (group_for) and three lone elements at either end, a long segment's chunk
//! or a row less than twice chunk_bytes over the block's lanes (longer rows are chunked) and one
//! lone element at either end. ExponentSpan's double takes 512 (below); the bins
//! (exponent_bins.cuh) 2^14.
constexpr int kMostLaneElements = 512;

//! The second pass's policy: a lane adds more elements than the plain sums' (group_loads 16
//! instead of 4, chunks of 96 KB instead of 64 KB), so that fewer lanes combine their partials
//! (each step a shuffle of the digits, their normalization and a deposit by selects), and two
//! blocks an SM, as StatsSegmentPolicy, for the partials' registers.
struct ExactSegmentPolicy : StatsSegmentPolicy {
  static constexpr int group_loads = 16;
  static constexpr std::uint64_t chunk_bytes = 98304;
};
static_assert(2 * ExactSegmentPolicy::group_loads * 8 + 6 <= kMostLaneElements, "a short segment's lane (8 bf16 a load)");
static_assert(2 * ExactSegmentPolicy::chunk_bytes / 2 / ExactSegmentPolicy::block + 2 <= kMostLaneElements,
              "a long segment's chunk, or a row, over a block's lanes (2-byte elements)");

//! The segments kernels' policy for exact sums of T (f32, f16, bf16): the partial is FloatDigits,
//! an element lifts to the float it converts to exactly.
template <class T>
struct ExactSegmentSum {
  static constexpr int kBlock = 256;  //!< the threads of a block of the segments kernels it runs in
  using In = T;
  using acc_t = FloatDigits;
  static constexpr Op op = Op::sum;
  struct Lifted {
    float x;
  };
  //! The first pass's marks (SegmentWindowSum): a byte a segment, nonzero where it is left to
  //! this pass, and a word nonzero where any is. Null: every segment.
  const unsigned char* marks = nullptr;
  const unsigned* any_marked = nullptr;
  __device__ bool any_wanted() const { return !any_marked || *any_marked != 0; }
  __device__ bool wanted(std::uint64_t s) const { return !marks || marks[s] != 0; }
  __host__ __device__ acc_t identity() const { return acc_t{}; }
  __device__ Lifted lift(T x, index_t) const { return {static_cast<float>(x)}; }
  __device__ acc_t operator()(acc_t a, const acc_t& b) const {
    const double t = a.fast + b.fast, e = two_sum_error(a.fast, b.fast, t);
    a.fast = t;
    if (b.flags & FloatDigits::kDigits) {
#pragma unroll
      for (int i = 0; i < FloatDigits::kWords; ++i) a.w[i] += b.w[i];
      normalize(a);  // so that partials of any number of lanes and chunks add without overflow
    }
    a.flags |= b.flags;
    if (e != 0) deposit(a, e);
    return a;
  }
};

template <class T>
struct one_accumulator<ExactSegmentSum<T>> : std::true_type {};  // its bins are the lane's shared words
template <class T>
inline constexpr bool selects_segments<ExactSegmentSum<T>> = true;  // those the first pass marked

//! The block's lanes' exponent bins: bin c of lane t at c * kBlock + t, so that a warp's lanes
//! touch neighbouring words whatever bins they add to (no bank conflicts). 32 KB.
__device__ inline double* exact_segment_lane_bins() {
  __shared__ double bins[exact::kFieldBins * ExactSegmentSum<float>::kBlock];
  return bins;
}

//! The exponent fields a lane's elements span, as floats: the largest (255 for an infinity or a
//! NaN) and the smallest of a nonzero element (zeros, multiples of anything, do not count). While
//! they differ by kSpread at most, the elements are all multiples of 2^(lo - 150) below 2^(hi -
//! 126), and at most 512 of them (kMostLaneElements; the first pass's lanes add 256 at most) sum
//! below 2^(kSpread + 33) such units: every partial sum is a double exactly, in any order. Kept as
//! the bits doubled (the sign shifted out), whose order is the magnitudes': the largest, and the
//! smallest nonzero less one (a zero's wraps to the top), as the compiler has it, an addition and a
//! minimum or maximum each (VIADDMNMX, VIMNMX3). within() compares the two whole, not their fields:
//! a difference below spread << 24 says that the fields differ by `spread` at most (by less where
//! the top's significand is the larger), a subnormal's field counting as 0; four instructions,
//! where the fields apart took eight.
struct ExponentSpan {
  static constexpr unsigned kSpread = 20;  // 20 + 33 = 53 bits
  unsigned top, bottom;
  __device__ void init() { top = 0, bottom = 0xffffffffu; }
  //! Takes elements whose bits (as floats) are `u`.
  template <int N>
  __device__ void take(const unsigned (&u)[N]) {
#pragma unroll
    for (int j = 0; j < N; ++j) top = max(top, u[j] + u[j]), bottom = min(bottom, u[j] + u[j] - 1);
  }
  //! Whether the exponent fields of elements from `top` down to `bottom` (their bits doubled, as
  //! kept) differ by `spread` at most, none an infinity or a NaN. Only zeros, or none: true.
  __device__ static bool within(unsigned top, unsigned bottom, unsigned spread) {
    return top - (bottom + 1) < (spread << 24) && top < 0xff000000u;
  }
  __device__ bool exact_in_double() const { return within(top, bottom, kSpread); }
};

//! The sum of N floats in a tree of doubles: exact where they span ExponentSpan::kSpread
//! binades at most (any order is, there), with one dependent addition left for the caller.
template <int N>
__device__ inline double tree_sum(const float (&x)[N]) {
  static_assert((N & (N - 1)) == 0, "the tree halves N until one part is left");
  double part[N];
#pragma unroll
  for (int j = 0; j < N; ++j) part[j] = x[j];
#pragma unroll
  for (int width = N / 2; width > 0; width /= 2)
#pragma unroll
    for (int j = 0; j < width; ++j) part[j] += part[j + width];
  return part[0];
}

//! A lane's running exact sum. While its elements' exponents span at most ExponentSpan::kSpread
//! binades, it adds them to a double and nothing else, exactly: a vector's elements in a tree,
//! then to the lane's sum. From the first vector past that range on, each element goes to the
//! lane's exponent bin for its field (one shared-memory addition, exact for the at most
//! kMostLaneElements a lane adds), and the bins go into the partial's digits
//! when the lane's partial is taken. A bin is zeroed when first touched (`touched`): a lane of a
//! short segment touches few.
template <class T>
struct Accumulator<ExactSegmentSum<T>> {
  static constexpr int kBlock = ExactSegmentSum<T>::kBlock;
  double* bins;  // bin c at bins[c * kBlock]
  double sum;
  ExponentSpan span;
  unsigned touched;            // bit c: bin c holds this lane's elements
  unsigned not_negative_zero;  // nonzero once an element other than -0 was added
  unsigned flags;              // specials, and kAny once an element was added
  bool binned;                 // past the range: bins for the rest
  __device__ void init(const ExactSegmentSum<T>&) {
    bins = exact_segment_lane_bins() + threadIdx.x;
    sum = 0, touched = 0, not_negative_zero = 0, flags = 0, binned = false;
    span.init();
  }
  //! Takes the exponent fields of elements whose bits are `u` (N of them) into the range; true
  //! while the lane may still add them to its double alone.
  template <int N>
  __device__ bool in_range(const unsigned (&u)[N]) {
#pragma unroll
    for (int j = 0; j < N; ++j) not_negative_zero |= u[j] ^ 0x80000000u;
    flags |= FloatDigits::kAny;
    span.take(u);
    if (binned) return false;
    if (span.exact_in_double()) return true;
    binned = true;
    return false;
  }
  //! Past the range: x into its bin (an infinity or a NaN to the flags).
  __device__ void add_to_bin(float x) {
    const unsigned u = __float_as_uint(x);
    if ((u & 0x7f800000u) == 0x7f800000u) {
      flags |= (u & 0x7fffffu) ? FloatDigits::kNaN : u >> 31 ? FloatDigits::kNegInf : FloatDigits::kPosInf;
      return;
    }
    const unsigned c = exact::field_bin(u), bit = 1u << c;
    double& bin = bins[c * kBlock];
    bin = ((touched & bit) ? bin : 0.0) + static_cast<double>(x);
    touched |= bit;
  }
  //! Adds N elements (converted exactly to float): in range, their sum in a tree of doubles (exact,
  //! as any order is there) added to the lane's at once, one dependent addition a vector.
  template <int N>
  __device__ void add(const float (&x)[N]) {
    unsigned u[N];
#pragma unroll
    for (int j = 0; j < N; ++j) u[j] = __float_as_uint(x[j]);
    if (in_range(u)) {
      sum += tree_sum(x);
      return;
    }
#pragma unroll
    for (int j = 0; j < N; ++j) add_to_bin(x[j]);
  }
  __device__ void add(const ExactSegmentSum<T>&, typename ExactSegmentSum<T>::Lifted e) {
    const float one[1] = {e.x};
    add(one);
  }
  //! The lane's partial: its double, and its touched bins in the digits (each a multiple of
  //! 2^-149 below 2^137, as any sum of at most kMostLaneElements floats is).
  __device__ FloatDigits value(const ExactSegmentSum<T>&) {
    FloatDigits d;
    d.fast = sum;
    d.flags = flags | (not_negative_zero ? FloatDigits::kNotNegativeZero : 0u);
#pragma unroll
    for (int i = 0; i < FloatDigits::kWords; ++i) d.w[i] = 0;
    for (unsigned left = touched; left != 0; left &= left - 1) {
      const double bin = bins[(__ffs(left) - 1) * kBlock];
      if (bin != 0) add_span(d, bin);
    }
    if (d.flags & FloatDigits::kDigits) normalize(d);
    return d;
  }
};

template <class T>
__device__ inline void add_vector(Accumulator<ExactSegmentSum<T>>& acc, const ExactSegmentSum<T>&, const Vec<T>& r,
                                  std::size_t) {
  float x[vector_width<T>()];
#pragma unroll
  for (int j = 0; j < vector_width<T>(); ++j) x[j] = static_cast<float>(r.e[j]);
  acc.add(x);
}

//! The bits of T's format: its significand's (the implicit one included) and its smallest
//! normal exponent, as std::numeric_limits says them.
template <class T>
struct FloatFormat;
template <>
struct FloatFormat<float> {
  static constexpr int digits = 24, min_exponent = -125;
};
template <>
struct FloatFormat<f16> {
  static constexpr int digits = 11, min_exponent = -13;
};
template <>
struct FloatFormat<bf16> {
  static constexpr int digits = 8, min_exponent = -125;
};

//! The sum `a` rounded once to the nearest T, ties to even, as ExactSum::round rounds: NaN for a
//! NaN or both infinities, else +-inf for one, else the exact sum (+-inf past T's largest); a zero
//! sum is -0 only if every element was -0.
template <class T>
__device__ inline T round_digits(const FloatDigits& digits) {
  FloatDigits a = digits;  // indexed below: a copy in local memory, which only this path pays for
  constexpr int kDigits = FloatFormat<T>::digits, kWords = FloatDigits::kWords;
  auto of = [](double v) {  // v rounded once to T (exact where v is a T; +-inf past T's range)
    if constexpr (std::is_same_v<T, float>) return static_cast<float>(v);
    else return T(v);
  };
  if ((a.flags & FloatDigits::kNaN) || ((a.flags & FloatDigits::kPosInf) && (a.flags & FloatDigits::kNegInf)))
    return of(__longlong_as_double(0x7ff8000000000000ll));
  if (a.flags & FloatDigits::kPosInf) return of(__longlong_as_double(0x7ff0000000000000ll));
  if (a.flags & FloatDigits::kNegInf) return of(__longlong_as_double(static_cast<long long>(0xfff0000000000000ull)));
  if (a.fast != 0) deposit(a, a.fast);
  normalize(a);
  const bool negative = a.w[kWords - 1] < 0;
  if (negative) {
#pragma unroll
    for (int i = 0; i < kWords; ++i) a.w[i] = -a.w[i];
    normalize(a);
  }
  int top = kWords - 1;
  while (top >= 0 && a.w[top] == 0) --top;
  if (top < 0) {
    const bool all_negative_zero = (a.flags & FloatDigits::kAny) && !(a.flags & FloatDigits::kNotNegativeZero);
    return of(all_negative_zero ? -0.0 : 0.0);
  }
  // Bit positions count from 2^-149. Keep kDigits bits from the top one, or fewer where they
  // would fall below T's smallest subnormal, and round on the rest.
  const int msb = top * 32 + 63 - __clzll(a.w[top]);
  const int lowest = (FloatFormat<T>::min_exponent - kDigits) - FloatDigits::kLowestExponent;  // >= 0 for each T
  const int lsb = max(msb - (kDigits - 1), lowest);
  auto window = [&](int pos) {  // the magnitude's bits from `pos` up (at most 26 are set)
    const int k = pos >> 5, r = pos & 31;
    unsigned long long bits = static_cast<unsigned long long>(a.w[k]) >> r;
    if (k + 1 < kWords) bits += static_cast<unsigned long long>(a.w[k + 1]) << (32 - r);
    if (k + 2 < kWords && r > 0) bits += static_cast<unsigned long long>(a.w[k + 2]) << (64 - r);
    return bits;
  };
  unsigned long long q = window(lsb);
  if (lsb > 0) {  // bits below lsb: the rounding bit, and every one under it sticky
    const int below = lsb - 1;
    const bool round_bit = (window(below) & 1) != 0;
    bool sticky = (a.w[below >> 5] & ((1ll << (below & 31)) - 1)) != 0;
    for (int i = 0; i < (below >> 5) && !sticky; ++i) sticky = a.w[i] != 0;
    if (round_bit && (sticky || (q & 1) != 0)) ++q;  // may carry to 2^kDigits: still exact in T
  }
  const double v = ldexp(static_cast<double>(q), lsb + FloatDigits::kLowestExponent);  // exact: q < 2^25
  return of(negative ? -v : v);
}

//! Segment s's exact sum, rounded, into out[s].
template <class T, class Out>
__device__ inline void write_segment(const ExactSegmentSum<T>&, const FloatDigits& a, std::uint64_t s, std::uint64_t, Out* out,
                                     std::uint64_t*) {
  constexpr unsigned kSlow = FloatDigits::kNaN | FloatDigits::kPosInf | FloatDigits::kNegInf | FloatDigits::kDigits;
  if (!(a.flags & kSlow) && a.fast != 0) {  // the exact sum is a double: rounded once
    if constexpr (std::is_same_v<T, float>) out[s] = static_cast<float>(a.fast);
    else out[s] = T(a.fast);
  } else {
    out[s] = round_digits<T>(a);
  }
}

//! The first pass's partial: the exact sum as hi + lo, doubles, |lo| at most half hi's ulp,
//! unless kOutside.
struct WindowSum {
  enum Flag : unsigned { kAny = 1, kNotNegativeZero = 2, kOutside = 4 };
  double hi, lo;
  //! kAny: a partial of elements (a lane's or a fold's, with or without elements of its own;
  //! only the identity lacks it); kNotNegativeZero: an element other than -0; kOutside: not exact here
  unsigned flags;
  //! A lane's own partial: the ExponentSpan of its elements (for fold_groups); 0 and ~0 (none)
  //! in a combined one.
  unsigned top, bottom;
};

//! The warp's shuffle of a WindowSum (every lane of the warp calls it): lo only where some lane
//! has one (a lane's own partial has none; only combined ones may). The span is not shuffled.
__device__ inline WindowSum shfl_down(const WindowSum& v, int offset) {
  WindowSum r;
  r.hi = __shfl_down_sync(0xffffffffu, v.hi, offset);
  r.flags = __shfl_down_sync(0xffffffffu, v.flags, offset);
  r.lo = warp_or(v.lo != 0) ? __shfl_down_sync(0xffffffffu, v.lo, offset) : 0.0;
  r.top = 0, r.bottom = 0xffffffffu;
  return r;
}

//! The first pass of the exact segment sums of T (f32, f16, bf16): see the top of this file.
template <class T>
struct SegmentWindowSum {
  using In = T;
  using acc_t = WindowSum;
  static constexpr Op op = Op::sum;
  struct Lifted {
    float x;
  };
  unsigned char* marks;  //!< a byte a segment: 1 where the second pass is to sum it, else 0
  unsigned* any_marked;  //!< set to 1 where any segment is marked (zeroed before the pass)
  __host__ __device__ acc_t identity() const { return {0.0, 0.0, 0u, 0u, 0xffffffffu}; }
  __device__ Lifted lift(T x, index_t) const { return {static_cast<float>(x)}; }
  //! a + b, exactly: the his' sum and its error, the los' sum, and the error added to it, each
  //! checked exact (TwoSum); then the pair renormalised, also exactly.
  __device__ acc_t operator()(const acc_t& a, const acc_t& b) const {
    const double t = a.hi + b.hi, e = two_sum_error(a.hi, b.hi, t);
    if (a.lo == 0 && b.lo == 0) return {t, e, a.flags | b.flags, 0u, 0xffffffffu};  // two lanes' sums, mostly: (t, e) is the pair
    const double l = a.lo + b.lo, el = two_sum_error(a.lo, b.lo, l);
    const double m = l + e, em = two_sum_error(l, e, m);
    const double hi = t + m, lo = two_sum_error(t, m, hi);
    // a NaN compares unequal: outside
    return {hi, lo, a.flags | b.flags | (el != 0 || em != 0 ? WindowSum::kOutside : 0u), 0u, 0xffffffffu};
  }
};

//! The first pass's fold of a warp's lanes. Where the elements of the whole warp's lanes span
//! kWarpSpread binades at most, every lane holds its sum in one double (a lane past
//! ExponentSpan::kSpread, in pair mode or outside, spans more), and every sum of those is exact
//! in a double too: at most 32 x 256 elements, multiples of 2^(lo - 150) below 2^(hi - 126),
//! sum below 2^(kWarpSpread + 37) such units. So they fold as plain doubles, a shuffle and an
//! addition a step, where the pairs' exact combine takes a shuffle of three words, a vote and six
//! additions. The sign of a zero comes out of the doubles themselves: each lane starts at -0,
//! and a sum of doubles is -0 only where every term is. Elsewhere, the pairs' fold.
inline constexpr unsigned kWarpSpread = 16;
template <class T>
__device__ inline WindowSum fold_groups(const SegmentWindowSum<T>& f, WindowSum r, int group, int from) {
  if (!ExponentSpan::within(warp_max(r.top), warp_min(r.bottom), kWarpSpread))  // the same on every lane
    return shuffle_fold(f, r, group, from);
  const double sum = shuffle_fold([](double a, double b) { return a + b; }, r.hi, group, from);
  // Only a segment with elements is written: -0 says that every one was -0.
  const unsigned sign = sum == 0 && signbit(sum) ? 0u : WindowSum::kNotNegativeZero;
  return {sum, 0.0, WindowSum::kAny | sign, 0u, 0xffffffffu};
}

//! A lane's sum in the first pass: its elements in one double while they span at most
//! ExponentSpan::kSpread binades (exact so). From the first vector past that on, the lane keeps
//! a pair: each element added to the double by TwoSum, the error to a second double, each of
//! those additions checked exact (a lane of [0, 1) floats that meets one below 2^-21 stays
//! here); past that, or at an infinity or a NaN (whose errors are NaN), it is outside and adds
//! nothing more. A lane starts at -0, so that its sum is -0 exactly where every element was -0
//! (or it had none). Its partial says kAny whether or not it had elements: only a segment with
//! elements is folded from lanes' partials (an empty one is written as the identity), and a
//! lane without any adds -0 and no kNotNegativeZero, which change nothing.
template <class T>
struct Accumulator<SegmentWindowSum<T>> {
  //! In pair mode the span's top is this, above every element's bits doubled: the span check
  //! fails from then on, with no flag of its own to test a vector (and fold_groups sees a lane
  //! past the warp's span).
  static constexpr unsigned kPairMode = 0xffffffffu;
  double sum, low;  // low: the errors' sum, in pair mode
  ExponentSpan span;
  bool outside;  // an addition to low was not exact
  __device__ void init(const SegmentWindowSum<T>&) {
    sum = -0.0, low = 0.0, outside = false;
    span.init();
  }
  template <int N>
  __device__ void add(const float (&x)[N]) {
    unsigned u[N];
#pragma unroll
    for (int j = 0; j < N; ++j) u[j] = __float_as_uint(x[j]);
    span.take(u);
    if (span.exact_in_double()) {
      sum += tree_sum(x);
      return;
    }
    span.top = kPairMode;
    if (outside) return;
#pragma unroll
    for (int j = 0; j < N; ++j) {
      const double v = x[j], t = sum + v, e = two_sum_error(sum, v, t);
      const double l = low + e, el = two_sum_error(low, e, l);
      sum = t, low = l;
      outside |= el != 0;  // a NaN compares unequal too
    }
  }
  __device__ void add(const SegmentWindowSum<T>&, typename SegmentWindowSum<T>::Lifted e) {
    const float one[1] = {e.x};
    add(one);
  }
  __device__ WindowSum value(const SegmentWindowSum<T>&) const {
    const bool negative_zero = sum == 0 && signbit(sum);
    const unsigned flags = WindowSum::kAny | (negative_zero ? 0u : WindowSum::kNotNegativeZero);
    if (span.top != kPairMode) return {sum, 0.0, flags, span.top, span.bottom};  // every vector was checked in the span
    const double hi = sum + low;  // the pair renormalised, exactly
    return {hi, two_sum_error(sum, low, hi), flags | (outside || !isfinite(hi) ? WindowSum::kOutside : 0u), span.top,
            span.bottom};
  }
};

//! One a lane: a vector's elements go to it in a tree, one dependent addition a vector, so four
//! would add little but their registers (bf16's short-segment kernel spilled 76 bytes with four).
template <class T>
struct one_accumulator<SegmentWindowSum<T>> : std::true_type {};

template <class T>
__device__ inline void add_vector(Accumulator<SegmentWindowSum<T>>& acc, const SegmentWindowSum<T>&, const Vec<T>& r,
                                  std::size_t) {
  float x[vector_width<T>()];
#pragma unroll
  for (int j = 0; j < vector_width<T>(); ++j) x[j] = static_cast<float>(r.e[j]);
  acc.add(x);
}

//! Segment s's sum, or its mark for the second pass. hi + lo is rounded once to T by rounding it
//! to odd in a double first (the neighbour of hi towards lo where hi's last bit is even and lo
//! is not zero), which a later rounding to any format of at most 51 bits leaves correct (Boldo
//! and Melquiond, "Emulation of FMA and correctly rounded sums: proved algorithms using rounding
//! to odd", 2008).
template <class T, class Out>
__device__ inline void write_segment(const SegmentWindowSum<T>& f, const WindowSum& a, std::uint64_t s, std::uint64_t, Out* out,
                                     std::uint64_t*) {
  const bool outside = (a.flags & WindowSum::kOutside) != 0;
  f.marks[s] = outside;
  if (outside) {
    *f.any_marked = 1;  // every writer writes the same word
    return;
  }
  double v = a.hi;
  if (v == 0) {  // then lo is 0 too: -0 only where every element was -0 (and there was one)
    v = (a.flags & WindowSum::kAny) && !(a.flags & WindowSum::kNotNegativeZero) ? -0.0 : 0.0;
  } else if (a.lo != 0) {
    const long long bits = __double_as_longlong(v);
    if (!(bits & 1)) v = __longlong_as_double(bits + ((a.lo < 0) == (v < 0) ? 1 : -1));  // away from zero where lo has hi's sign
  }
  if constexpr (std::is_same_v<T, float>) out[s] = static_cast<float>(v);
  else out[s] = T(v);
}

}  // namespace xreduce::cuda
