#pragma once
// Exact sums of rows and segments (Accuracy::exact, layouts inner and ragged) of f32, f16 and
// bf16, in one launch of the segments kernels (segmented.cuh), balanced over any mix of lengths as
// the plain sums are and reading the offsets the same way. Each segment's sum is rounded once, on
// the GPU, by the lane that writes it.
//
// A lane adds its elements to one double, a vector's elements in a tree, and keeps the span of
// their exponents (ExponentSpan; a bf16 lane on its loaded words, two elements an instruction,
// Bf16PackedSpan): a conversion, an addition and two integer instructions an element, no branch.
// Where they span at most 20 binades, as ordinary data (uniform, subnormal-heavy) do, every
// partial sum was exact, in any order, and that is all; f16's always are (a finite f16 is a
// multiple of 2^-24 below 2^16; with an infinity or a NaN among them the double is NaN or an
// infinity, as the segment's sum is whatever else it holds), so an f16 lane keeps no span. Else
// the lane reads its elements again (group_partial's second pass, from the caches), each into one
// of its 16 exponent bins in shared memory (exponent_bins.cuh, as the flat and column sums): a
// conversion, and an addition with its load and store, whatever the data.
//
// A warp folds its lanes' partials (fold_groups) one of two ways. Where the elements of all its
// lanes span at most 16 binades, the lanes' doubles fold as doubles, exactly. Else each lane's
// double goes into its own bins as the three floats it splits into, each group's bins are summed
// across its lanes in shared memory (each lane summing 16 of them, exact over a warp's
// elements), and each group's first lane turns its 16 sums into digits: a bin's sum is an integer
// count of its unit, below 2^53, and its counts carried to 16 bits each are the digits' halves,
// with no indexing. (An f16 warp adds its lanes' doubles as integer counts of 2^-24 instead,
// whatever the data: no span, no bins.) Beyond a warp (a block's warps, a long segment's chunks) partials combine as
// a pair of doubles, each addition checked exact by TwoSum, and as digits where one is not.
// (Two passes over the whole data did this before: the first held each segment as a pair of
// doubles and marked those that left it, which the second read again into bins and digits: 8.7x
// the plain sums on wide data on an H200, where the second pass turned each lane's bins into
// digits and shuffled the digits.)
//
// The digits: every finite float is a multiple of 2^-149, so of 2^-150 (bin 0's unit), and ten
// 32-bit words, a 320-bit two's complement integer of such units (word k weighing 2^(32k -
// 150)), hold any sum of them below 2^169: partials add in one carry chain (add.cc, addc), a
// double goes in as three words. (Words of 64 bits that kept their carries, as ExactSum's, took
// twice the registers, and rows_kernel spilled for them.) A segment is rounded from its top two
// nonzero words and whether any below them is nonzero, rounded to odd in a double (Boldo and
// Melquiond, "Emulation of FMA and correctly rounded sums: proved algorithms using rounding to
// odd", 2008), which the rounding to T then leaves correct.
//
// f64 has no such form here (its 2098 bits of range would take 67 words a lane): its rows and
// segments take pairs of doubles and a bound, and digits where the bound does not settle them
// (exact_segments_f64.cuh).

#include "exact_f64_pairs.hpp"  // two_sum_error
#include "exponent_bins.cuh"
#include "segmented.cuh"

namespace xreduce::cuda {

//! A segment's partial exact sum: fast + the digits (see above). Aggregate, no initializers: it
//! lives in __shared__ arrays.
struct FloatDigits {
  static constexpr int kWords = 10, kLowestExponent = -150;
  enum Flag : unsigned { kNaN = 1, kPosInf = 2, kNegInf = 4, kAny = 8, kNotNegativeZero = 16, kDigits = 32 };
  double fast, low;  //!< a part of the sum, held exactly as the pair fast + low (low 0 in a lane's or a warp's)
  //! The digits, a 320-bit two's complement integer (word 9 the top): all zero unless flags has kDigits
  unsigned w[kWords];
  unsigned flags;  //!< Flag bits: what was added besides finite values, and whether there are digits
  //! A lane's own partial (for fold_groups): the ExponentSpan of its elements, whose bins (in
  //! shared memory) hold them where that is past ExponentSpan's range. 0 and ~0 in a folded one.
  unsigned top, bottom;
};

//! a += b, or a -= b where kSubtract, on 320-bit two's complement integers: one carry chain.
template <bool kSubtract>
__device__ inline void add_words(unsigned (&a)[FloatDigits::kWords], const unsigned (&b)[FloatDigits::kWords]) {
  static_assert(FloatDigits::kWords == 10, "the chain below has ten words");
#define XREDUCE_CHAIN(op, opc, last)                                                                                        \
  asm(op " %0, %0, %10;\n\t" opc " %1, %1, %11;\n\t" opc " %2, %2, %12;\n\t" opc " %3, %3, %13;\n\t" opc " %4, %4, %14;\n\t" \
      opc " %5, %5, %15;\n\t" opc " %6, %6, %16;\n\t" opc " %7, %7, %17;\n\t" opc " %8, %8, %18;\n\t" last " %9, %9, %19;"   \
      : "+r"(a[0]), "+r"(a[1]), "+r"(a[2]), "+r"(a[3]), "+r"(a[4]), "+r"(a[5]), "+r"(a[6]), "+r"(a[7]), "+r"(a[8]), "+r"(a[9]) \
      : "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]), "r"(b[4]), "r"(b[5]), "r"(b[6]), "r"(b[7]), "r"(b[8]), "r"(b[9]))
  if constexpr (kSubtract) XREDUCE_CHAIN("sub.cc.u32", "subc.cc.u32", "subc.u32");
  else XREDUCE_CHAIN("add.cc.u32", "addc.cc.u32", "addc.u32");
#undef XREDUCE_CHAIN
}

//! Adds d (nonzero, a multiple of 2^-150, below 2^169) to a partial's digits: its magnitude's
//! 53 bits as three words placed by selects (an indexed register array would go to local
//! memory), added or subtracted in one carry chain.
__device__ inline void add_span(FloatDigits& a, double d) {
  const unsigned long long bits = static_cast<unsigned long long>(__double_as_longlong(d));
  const int field = static_cast<int>((bits >> 52) & 0x7ff);
  unsigned long long m = (bits & ((1ull << 52) - 1)) | (field ? 1ull << 52 : 0);
  int p = max(field, 1) - 1075 - FloatDigits::kLowestExponent;  // the significand's lowest bit above 2^-150
  if (p < 0) m >>= -p, p = 0;  // bits below 2^-150, all zero (at most 52 of them: d >= 2^-150)
  const int k = p >> 5, r = p & 31;
  const unsigned long long low = m << r;
  const unsigned c0 = static_cast<unsigned>(low), c1 = static_cast<unsigned>(low >> 32),
                 c2 = r ? static_cast<unsigned>(m >> (64 - r)) : 0u;  // zero where k + 2 is past word 9
  unsigned v[FloatDigits::kWords];
#pragma unroll
  for (int i = 0; i < FloatDigits::kWords; ++i) v[i] = i == k ? c0 : i == k + 1 ? c1 : i == k + 2 ? c2 : 0u;
  if (bits >> 63) add_words<true>(a.w, v);
  else add_words<false>(a.w, v);
  a.flags |= FloatDigits::kDigits;
}

//! The warp's shuffle of a partial (every lane of the warp calls it, as every shuffle of the
//! segments kernels): the low double and the digits only where some lane has them, and only
//! the digits' nonzero words. A lane's span and bins are its own: not shuffled.
__device__ inline FloatDigits shfl_down(const FloatDigits& v, int offset) {
  FloatDigits r;
  r.fast = __shfl_down_sync(0xffffffffu, v.fast, offset);
  r.low = warp_or(v.low != 0) ? __shfl_down_sync(0xffffffffu, v.low, offset) : 0.0;
  r.flags = __shfl_down_sync(0xffffffffu, v.flags, offset);
  unsigned nonzero = 0;
  if (warp_or(v.flags & FloatDigits::kDigits)) {
#pragma unroll
    for (int i = 0; i < FloatDigits::kWords; ++i) nonzero |= (v.w[i] != 0 ? 1u : 0u) << i;
    nonzero = warp_or(nonzero);
  }
#pragma unroll
  for (int i = 0; i < FloatDigits::kWords; ++i) r.w[i] = (nonzero >> i) & 1 ? __shfl_down_sync(0xffffffffu, v.w[i], offset) : 0u;
  r.top = 0, r.bottom = 0xffffffffu;
  return r;
}

//! The most elements a lane adds under SegmentPolicy (the plain sums'): a short segment's lane
//! fewer than twice group_loads vectors (group_for) and three lone elements at either end, a long
//! segment's chunk or a row less than twice chunk_bytes over the block's lanes (longer rows are
//! chunked) and one lone element at either end. ExponentSpan's double takes 512 (below). A
//! warp's bins take its lanes' elements and three parts of each lane's double (bin_double): 2^14
//! of them add exactly in a bin (exponent_bins.cuh).
constexpr int kMostLaneElements = 2 * SegmentPolicy::chunk_bytes / 2 / SegmentPolicy::block + 2;
static_assert(2 * SegmentPolicy::group_loads * 8 + 6 <= kMostLaneElements, "a short segment's lane (8 bf16 a load)");
//! The most elements ExponentSpan's double holds exactly (below).
inline constexpr int kSpanMostElements = 512;
static_assert(kMostLaneElements <= kSpanMostElements, "ExponentSpan's double");
//! Whether a lane's double holds its elements of T whatever their exponents, so that it never
//! reads them again (ExponentSpan::read_once): f16's, every finite one a multiple of 2^-24 below
//! 2^16, a lane's kMostLaneElements summing below 2^49 such units.
template <class T>
inline constexpr bool kAlwaysReadOnce = std::is_same_v<T, f16>;
static_assert(32 * (kMostLaneElements + 3) <= (1 << 14), "a warp's bins");

//! The segments kernels' policy for exact sums of T (f32, f16, bf16): the partial is FloatDigits,
//! an element lifts to the float it converts to exactly.
template <class T>
struct ExactSegmentSum {
  static constexpr int kBlock = SegmentPolicy::block;  //!< the threads of a block of the segments kernels it runs in
  using In = T;
  using acc_t = FloatDigits;
  static constexpr Op op = Op::sum;
  struct Lifted {
    float x;
  };
  __host__ __device__ acc_t identity() const { return {0.0, 0.0, {}, 0u, 0u, 0xffffffffu}; }
  __device__ Lifted lift(T x, index_t) const { return {static_cast<float>(x)}; }
  //! Two folded partials (a block's warps, a long segment's chunks): their pairs as the pair of
  //! the fast parts' sum and the low parts' sum plus its error, each addition by TwoSum (s + x = t
  //! + e exactly); an error of the low parts' additions, nearly always 0, goes to the digits. The
  //! digits add in one carry chain.
  __device__ acc_t operator()(acc_t a, const acc_t& b) const {
    const double t = a.fast + b.fast, e = two_sum_error(a.fast, b.fast, t);
    const double l = a.low + b.low, el = two_sum_error(a.low, b.low, l);
    const double m = l + e, em = two_sum_error(l, e, m);
    a.fast = t, a.low = m;
    a.flags |= b.flags;
    if (b.flags & FloatDigits::kDigits) add_words<false>(a.w, b.w);
    if (el != 0) add_span(a, el);
    if (em != 0) add_span(a, em);
    return a;
  }
};

template <class T>
struct one_accumulator<ExactSegmentSum<T>> : std::true_type {};  // its bins are the lane's shared words
template <class T>  // a double, else bins (Accumulator below); f16's double always holds its elements
struct reads_again_past_range<ExactSegmentSum<T>> : std::bool_constant<!kAlwaysReadOnce<T>> {};

//! The block's lanes' exponent bins: bin c of lane t at c * kBlock + t, so that a warp's lanes
//! touch neighbouring words whatever bins they add to (no bank conflicts). 32 KB. (The views
//! kernels keep theirs the same way, in their dynamic shared memory: views_lane_bins.)
__device__ inline double* exact_segment_lane_bins() {
  __shared__ double bins[exact::kFieldBins * ExactSegmentSum<float>::kBlock];
  return bins;
}

//! A lane's double d (the exact sum of some of its floats: a multiple of 2^-149 below 2^137) into
//! its bins, as three parts that each count there as an element: its top 24 bits, a float times
//! 2^32 (so that a d past the floats' range has one), in the bin two above the float's; the next
//! 24 bits and the rest, floats. Each cut is exact: rounding toward zero keeps d's top bits, and
//! what is left is d's bits below them. A part above bin 15 (d at 2^129 or more) goes to bin 15,
//! a multiple of its unit, whose sum stays below 2^143 by the elements' own magnitudes.
__device__ inline void bin_double(double* bins, double d) {
  constexpr int kStride = ExactSegmentSum<float>::kBlock;
  const float top = __double2float_rz(d * 0x1p-32);
  const double rest = d - static_cast<double>(top) * 0x1p32;
  const float middle = __double2float_rz(rest);
  const float low = static_cast<float>(rest - static_cast<double>(middle));
  if (top != 0)
    bins[min(exact::field_bin(__float_as_uint(top)) + 2, exact::kFieldBins - 1u) * kStride] += static_cast<double>(top) * 0x1p32;
  if (middle != 0) exact::add_finite_to_bins<kStride>(bins, middle);
  if (low != 0) exact::add_finite_to_bins<kStride>(bins, low);
}

//! The exponent fields a lane's elements span, as floats: the largest (255 for an infinity or a
//! NaN) and the smallest of a nonzero element (zeros, multiples of anything, do not count). While
//! they differ by kSpread at most, the elements are all multiples of 2^(lo - 150) below 2^(hi -
//! 126), and at most 512 of them (a lane adds kMostLaneElements at most, above) sum
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
  //! Takes elements (their bits).
  template <int N>
  __device__ void take(const float (&x)[N]) {
    unsigned u[N];
#pragma unroll
    for (int j = 0; j < N; ++j) u[j] = __float_as_uint(x[j]);
#pragma unroll
    for (int j = 0; j < N; ++j) top = max(top, u[j] + u[j]), bottom = min(bottom, u[j] + u[j] - 1);
  }
  //! Whether the exponent fields of elements from `top` down to `bottom` (their bits doubled, as
  //! kept) differ by `spread` at most, none an infinity or a NaN. Only zeros, or none: true.
  __device__ static bool within(unsigned top, unsigned bottom, unsigned spread) {
    return top - (bottom + 1) < (spread << 24) && top < 0xff000000u;
  }
  //! Whether a lane's double holds all that its segment needs of the elements it spans, read
  //! once: their exact sum where they lie within kSpread binades, none an infinity or a NaN;
  //! always where kAlwaysReadOnce (with an infinity or a NaN among them the double is NaN or an
  //! infinity, as the segment's sum is whatever its finite elements are).
  template <class T>
  __device__ static bool read_once(unsigned top, unsigned bottom) {
    return kAlwaysReadOnce<T> || within(top, bottom, kSpread);
  }
  __device__ ExponentSpan bounds() const { return *this; }  // as Bf16PackedSpan's
};

//! ExponentSpan's top and bottom for bf16, kept on the elements' own bits two to a word: a word
//! of two bf16 loses its signs (one AND), its halves' maxima go to `top2` and their minima less
//! one to `bottom2`, each half apart (max.u16x2, two words at a time, and add.u16x2 with
//! min.u16x2: SIMD instructions of sm_90), where ExponentSpan takes each element widened to a
//! float: an addition and a minimum, and half a three-way maximum, an element. bounds() gives
//! ExponentSpan's form (a bf16's float is its bits shifted 16, doubled 17), the same values, once
//! a step of loads. (On an H100, bf16 power-law segments: 1.34x the plain sums on uniform
//! data where the floats' span took 1.37x.)
struct Bf16PackedSpan {
  unsigned top2, bottom2;  // per half: the largest magnitude; the smallest less one (0 wraps to 0xffff)
  __device__ void init() { top2 = 0, bottom2 = 0xffffffffu; }
  //! Takes K words of two bf16 each.
  template <int K>
  __device__ void take_words(const unsigned (&w)[K]) {
    unsigned m[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
      m[k] = w[k] & 0x7fff7fffu;
      bottom2 = __viaddmin_u16x2(m[k], 0xffffffffu, bottom2);
    }
#pragma unroll
    for (int k = 0; k + 1 < K; k += 2) top2 = __vimax3_u16x2(top2, m[k], m[k + 1]);
    if constexpr (K % 2 == 1) top2 = __vmaxu2(top2, m[K - 1]);
  }
  //! Takes floats widened from bf16 (the lone elements at a segment's ends), one to a word.
  template <int N>
  __device__ void take(const float (&x)[N]) {
    unsigned w[N];
#pragma unroll
    for (int j = 0; j < N; ++j) w[j] = __float_as_uint(x[j]) >> 16;  // the other half 0: no bound moves
    take_words(w);
  }
  __device__ ExponentSpan bounds() const {
    return {max(top2 >> 16, top2 & 0xffffu) << 17, ((min(bottom2 >> 16, bottom2 & 0xffffu) + 1) << 17) - 1};
  }
};

//! The sum of N floats in a tree of doubles: exact where they span ExponentSpan::kSpread
//! binades at most (any order is, there), with one dependent addition left for the caller.
template <int N>
__device__ inline double tree_sum(const float (&x)[N]) {
  double part[N];
#pragma unroll
  for (int j = 0; j < N; ++j) part[j] = x[j];
  return tree_sum(part);
}

//! Zeroes a lane's 16 bins (`own` its bin 0).
__device__ inline void clear_lane_bins(double* own) {
#pragma unroll
  for (int c = 0; c < exact::kFieldBins; ++c) own[c * ExactSegmentSum<float>::kBlock] = 0.0;
}

//! A lane's elements past ExponentSpan's range, read again (group_partial's second pass): each
//! to the one of the lane's 16 exponent bins in shared memory that its field picks, one
//! shared-memory addition, exact for what a warp adds; an infinity or a NaN too, to bin 15,
//! which then holds NaN or an infinity, as the sum is (fold_groups reads it so).
template <class T>
struct LaneBins {
  double* own;  //!< the lane's bin 0
  __device__ void add(const ExactSegmentSum<T>&, typename ExactSegmentSum<T>::Lifted e) {
    exact::add_finite_to_bins<ExactSegmentSum<T>::kBlock>(own, e.x);  // a special too (see above)
  }
};

template <class T>
__device__ inline void add_vector(LaneBins<T>& bins, const ExactSegmentSum<T>& f, const Vec<T>& r, std::size_t) {
#pragma unroll
  for (int j = 0; j < vector_width<T>(); ++j) bins.add(f, {static_cast<float>(r.e[j])});
}

//! A lane's exact sum, read once where its elements' exponents span at most ExponentSpan::kSpread
//! binades (as ordinary data do: uniform, subnormal-heavy; f16 any elements,
//! ExponentSpan::read_once): added to a double and nothing else,
//! exactly, a vector's elements in a tree and then to the lane's sum, with no test (group_partial
//! asks in_range() once a step of loads). Past that range, group_partial reads the lane's
//! elements again into its bins (LaneBins): the data are in the caches then, and the lanes in
//! range have no branch an element to pay for the others. (With a test of the range a vector and
//! its branch, the short-segment kernel took 75 million warp instructions on uniform power-law
//! data; 66 million now, the plain sum's 48, ncu on an H200. Lanes that turned to their bins at
//! the load leaving the range, reading each element once, were slower on every distribution on
//! an H100: f32 uniform 1.18x the plain time against 1.11x, wide 1.61x against 1.48x, bf16
//! uniform 1.65x against 1.37x; bench/results/nvidia-h100/logs/exact-segments-read-once-dd8ccc0.md.)
//! The lane's sum starts at -0, so that it is -0 exactly where every element it added was -0 (or it
//! added none).
template <class T>
struct Accumulator<ExactSegmentSum<T>> {
  static constexpr bool kPackedSpan = std::is_same_v<T, bf16>;
  double sum;
  // Past its range: the elements were read again into the bins, and `sum` is void.
  std::conditional_t<kPackedSpan, Bf16PackedSpan, ExponentSpan> span;
  __device__ void init(const ExactSegmentSum<T>&) {
    sum = -0.0;
    span.init();
  }
  //! Adds N elements (converted exactly to float): their sum in a tree of doubles (exact where
  //! they are in range, as any order is there) to the lane's, one dependent addition a vector.
  template <int N>
  __device__ void add(const float (&x)[N]) {
    if constexpr (!kAlwaysReadOnce<T>) span.take(x);  // f16's: always in range, and folded whatever it is
    sum += tree_sum(x);
  }
  //! A bf16 load's elements, the span taken on their words (Bf16PackedSpan).
  template <int N, int K>
  __device__ void add_bf16(const float (&x)[N], const unsigned (&words)[K]) {
    span.take_words(words);
    sum += tree_sum(x);
  }
  __device__ void add(const ExactSegmentSum<T>&, typename ExactSegmentSum<T>::Lifted e) {
    const float one[1] = {e.x};
    add(one);
  }
  __device__ bool in_range() const {
    const ExponentSpan b = span.bounds();
    return ExponentSpan::read_once<T>(b.top, b.bottom);
  }
  //! Past the range: every bin zeroed, for all the lane's elements again. The span stays past the
  //! range: value() and fold_groups see it.
  __device__ LaneBins<T> start_second_pass() {
    double* own = exact_segment_lane_bins() + threadIdx.x;
    clear_lane_bins(own);
    return {own};
  }
  //! The lane's partial: its double (none past the range; f16's NaN or infinity as its flag) and
  //! its span, for fold_groups (which reads the bins past the range, and the specials out of bin
  //! 15). A lane past the range, or with a special, added an element other than -0.
  __device__ FloatDigits value(const ExactSegmentSum<T>&) const {
    FloatDigits d;
    d.fast = 0.0, d.low = 0.0;
#pragma unroll
    for (int i = 0; i < FloatDigits::kWords; ++i) d.w[i] = 0;
    const ExponentSpan b = span.bounds();
    d.top = b.top, d.bottom = b.bottom;
    d.flags = FloatDigits::kAny | FloatDigits::kNotNegativeZero;
    if (!in_range()) return d;
    if constexpr (kAlwaysReadOnce<T>) {  // the others' range holds no special
      if (!isfinite(sum)) {
        d.flags |= isnan(sum) ? FloatDigits::kNaN : sum > 0 ? FloatDigits::kPosInf : FloatDigits::kNegInf;
        return d;
      }
    }
    d.fast = sum;
    if (sum == 0 && signbit(sum)) d.flags = FloatDigits::kAny;  // -0: every element was -0 (or none)
    return d;
  }
};

template <class T>
__device__ inline void add_vector(Accumulator<ExactSegmentSum<T>>& acc, const ExactSegmentSum<T>&, const Vec<T>& r,
                                  std::size_t) {
  float x[vector_width<T>()];
#pragma unroll
  for (int j = 0; j < vector_width<T>(); ++j) x[j] = static_cast<float>(r.e[j]);
  if constexpr (Accumulator<ExactSegmentSum<T>>::kPackedSpan) {
    unsigned words[sizeof(r) / 4];
    memcpy(words, &r, sizeof(r));
    acc.add_bf16(x, words);
  } else {
    acc.add(x);
  }
}

//! The sum over a group of G lanes (2 to 16; the group's first lane at `own - rank`, `own` this
//! lane's bin 0) of their bin rank + G m. Lane j's bin c is at c * kBlock + j; the row is read
//! from lane rank on, wrapping (j ^ rank), so that the group's lanes each read a bank of their
//! own. Each of the group's bins is one lane's alone to read: rank + G m is this lane's.
template <int G>
__device__ inline double sum_group_bin(const double* own, int rank, int m) {
  constexpr int kStride = ExactSegmentSum<float>::kBlock;
  const double* row = own + (rank + m * G) * kStride - rank;
  double part[G];
#pragma unroll
  for (int j = 0; j < G; ++j) part[j] = row[j ^ rank];
  return tree_sum(part);
}

//! Sums this lane's 16 / G of its group's bins (sum_group_bin), each into its own bin: no other
//! lane reads that bin, so no wait between the reads and the stores.
template <int G>
__device__ inline void sum_group_bins(double* own, int rank) {
  constexpr int kStride = ExactSegmentSum<float>::kBlock;
#pragma unroll
  for (int m = 0; m < exact::kFieldBins / G; ++m) own[(rank + m * G) * kStride] = sum_group_bin<G>(own, rank, m);
}

//! The fold of a warp's lanes (shuffle_fold's contract; every lane of the warp calls it with its
//! own partial from Accumulator::value). Where the elements of all the warp's lanes span
//! kWarpSpread binades at most, every lane holds its sum in one double (a lane past
//! ExponentSpan::kSpread spans more), and every sum of those is exact in a double too: a warp's
//! at most 32 x 130 f32 (a lane's share of two chunks and a lone element at either end),
//! multiples of 2^(lo - 150) below 2^(hi - 126), sum below 2^(kWarpSpread + 37) such units (and
//! bf16, of 8 bits, far below; an f16 warp folds otherwise, below). So they fold as plain doubles, a shuffle and
//! an addition a step; the sign of a zero comes out of the doubles themselves (each lane starts
//! at -0, and a sum of doubles is -0 only where every term is).
//!
//! Elsewhere every lane puts its double into its bins (bin_double; a lane in range zeroes them
//! first), and the group's bins are summed across its
//! lanes in shared memory, each lane taking 16 of the group's 16 x G (sum_group_bins: bins rank,
//! rank + G ...; a warp's group as two halves of 16, added by one shuffle), and leaving its sums
//! in its own bins. The group's first lane reads each bin's sum from the lane that holds it and
//! turns it into its integer count of the bin's unit, carried to 16 bits: word k's halves are bins
//! 2k and 2k + 1, the carry out of bin 15 (signed) is words 8 and 9. The other lanes' digits mean nothing. (Shuffling each of the
//! 16 bins down log2 G steps took 4.3 million shuffles of the short-segment kernel's 133.6 million
//! warp instructions on wide power-law data, ncu on an H200; 0.3 million now.) An f16 warp skips
//! both: every lane read its elements once (ExponentSpan::read_once), and its double, a count of
//! 2^-24, folds with the others' as a 64-bit integer, its flags (an infinity's or a NaN's, a -0's
//! absence) with theirs. (Where they spanned more than 16 binades, its lanes' doubles had folded
//! as pairs, by the policy's TwoSum, and every lane had kept the span of its elements: power-law
//! segments of wide f16 data took 1.52-1.54x the plain sums on an H200, of uniform data 1.36-1.38x.)
inline constexpr unsigned kWarpSpread = 16;
template <class T>
__device__ inline FloatDigits fold_groups(const ExactSegmentSum<T>& f, FloatDigits r, int group, int from) {
  constexpr int kStride = ExactSegmentSum<T>::kBlock;
  FloatDigits d;
  d.fast = 0.0, d.low = 0.0;
#pragma unroll
  for (int i = 0; i < FloatDigits::kWords; ++i) d.w[i] = 0;
  d.top = 0, d.bottom = 0xffffffffu;
  if constexpr (kAlwaysReadOnce<T>) {
    // Each lane's double (0 for an infinity or a NaN, which its flags say) is a count of 2^-24
    // below 2^49: the warp's add below 2^54 as integers, whatever the data. The count as a pair
    // of doubles: its nearest, and the rest (0 below 2^53).
    const long long units = __double2ll_rn(r.fast * 0x1p24);
    const long long total = shuffle_fold([](long long a, long long b) { return a + b; }, units, group, from);
    d.flags = shuffle_fold([](unsigned a, unsigned b) { return a | b; }, r.flags, group, from);
    const double nearest = __ll2double_rn(total);
    d.fast = nearest * 0x1p-24;
    d.low = static_cast<double>(total - __double2ll_rn(nearest)) * 0x1p-24;
    return d;
  }
  const auto plus = [](double a, double b) { return a + b; };
  if (ExponentSpan::within(warp_max(r.top), warp_min(r.bottom), kWarpSpread)) {  // the same on every lane
    d.fast = shuffle_fold(plus, r.fast, group, from);
    // Only a segment with elements is written: -0 says that every one was -0.
    d.flags = FloatDigits::kAny | (d.fast == 0 && signbit(d.fast) ? 0u : FloatDigits::kNotNegativeZero);
    return d;
  }
  double* own = exact_segment_lane_bins() + threadIdx.x;  // this lane's bin 0
  if (ExponentSpan::read_once<T>(r.top, r.bottom)) clear_lane_bins(own);  // else they hold its elements
  if (r.fast != 0) bin_double(own, r.fast);
  d.flags = shuffle_fold([](unsigned a, unsigned b) { return a | b; }, r.flags, group, from) | FloatDigits::kDigits;
  const int lanes = group < 32 ? group : 16;  // whose bins one lane sums: its group's, or its half of a warp's
  const int rank = static_cast<int>(threadIdx.x) & (lanes - 1);
  __syncwarp();  // every lane's bins written
  if (group >= 32) {  // the same on every lane: the warp's halves, added by one shuffle
    double sum = sum_group_bin<16>(own, rank, 0);
    sum += __shfl_xor_sync(0xffffffffu, sum, 16);
    own[rank * kStride] = sum;
  } else {
    switch (group) {
      case 2: sum_group_bins<2>(own, rank); break;
      case 4: sum_group_bins<4>(own, rank); break;
      case 8: sum_group_bins<8>(own, rank); break;
      case 16: sum_group_bins<16>(own, rank); break;
      default: break;  // a lane alone: its bins are its group's
    }
  }
  __syncwarp();  // every sum stored
  const double* first = own - rank;  // the group's first lane's bin 0: bin c's sum is on its lane c % lanes
  long long carry = 0;
  unsigned low_half = 0;
#pragma unroll
  for (int c = 0; c < exact::kFieldBins; ++c) {
    const double bin = first[c * kStride + (c & (lanes - 1))];
    long long count = carry;
    if (c == exact::kFieldBins - 1 && !isfinite(bin))  // the group's infinities (both: NaN) or NaN: the sum's
      d.flags |= isnan(bin) ? FloatDigits::kNaN : bin > 0 ? FloatDigits::kPosInf : FloatDigits::kNegInf;
    else  // bin / 2^(16c - 150): an integer below 2^53, exactly
      count += __double2ll_rz(bin * __longlong_as_double(static_cast<long long>(1023 - exact::field_bin_unit(c)) << 52));
    carry = count >> 16;  // arithmetic: floor division
    const unsigned half = static_cast<unsigned>(count) & 0xffffu;
    if (c % 2 == 0) low_half = half;
    else d.w[c / 2] = low_half | half << 16;
  }
  __syncwarp();  // every sum read: each lane's bins are its own again (the next round's)
  d.w[exact::kFieldBins / 2] = static_cast<unsigned>(carry);  // below 2^38 in magnitude: two words
  d.w[exact::kFieldBins / 2 + 1] = static_cast<unsigned>(carry >> 32);
  return d;
}

//! The sum `a` rounded once to the nearest T, ties to even, as ExactSum::round rounds: NaN for a
//! NaN or both infinities, else +-inf for one, else the exact sum (+-inf past T's largest); a zero
//! sum is -0 only if every element was -0. The magnitude's top two nonzero words (33 to 64 bits)
//! with their last bit set where any word below is nonzero, and that converted to a double with
//! its last bit set where the conversion cut any: both roundings to odd, of at least T's digits
//! and two more, so that the last rounding, to T, is the exact sum's.
template <class T>
__device__ inline T round_digits(FloatDigits a) {
  constexpr int kWords = FloatDigits::kWords;
  auto of = [](double v) {  // v rounded once to T (+-inf past T's range)
    if constexpr (std::is_same_v<T, float>) return static_cast<float>(v);
    else return T(v);
  };
  if ((a.flags & FloatDigits::kNaN) || ((a.flags & FloatDigits::kPosInf) && (a.flags & FloatDigits::kNegInf)))
    return of(__longlong_as_double(0x7ff8000000000000ll));
  if (a.flags & FloatDigits::kPosInf) return of(__longlong_as_double(0x7ff0000000000000ll));
  if (a.flags & FloatDigits::kNegInf) return of(__longlong_as_double(static_cast<long long>(0xfff0000000000000ull)));
  if (a.fast != 0) add_span(a, a.fast);
  if (a.low != 0) add_span(a, a.low);
  // The sum's magnitude (its sign the top word's top bit: sums of floats stay far below 2^169).
  unsigned m[kWords];
#pragma unroll
  for (int i = 0; i < kWords; ++i) m[i] = a.w[i];
  const bool negative = (m[kWords - 1] >> 31) != 0;
  if (negative) {
    unsigned carry = 1;
#pragma unroll
    for (int i = 0; i < kWords; ++i) m[i] = ~m[i] + carry, carry &= m[i] == 0 ? 1u : 0u;
  }
  int top = -1;
  unsigned long long top_two = 0;  // the top nonzero word and the one under it
  unsigned below = 0;              // the words under those two, or-ed
  bool sticky = false;
#pragma unroll
  for (int i = 0; i < kWords; ++i) {
    const unsigned under = i > 0 ? m[i - 1] : 0u;
    if (m[i] != 0) top = i, top_two = static_cast<unsigned long long>(m[i]) << 32 | under, sticky = below != 0;
    below |= under;
  }
  if (top < 0) {
    const bool all_negative_zero = (a.flags & FloatDigits::kAny) && !(a.flags & FloatDigits::kNotNegativeZero);
    return of(all_negative_zero ? -0.0 : 0.0);
  }
  top_two |= sticky ? 1u : 0u;
  double odd = __ull2double_rz(top_two);
  if (__double2ull_rz(odd) != top_two) odd = __longlong_as_double(__double_as_longlong(odd) | 1);
  // Times 2^(32 (top - 1) - 150), a normal double (2^-182 to 2^106): exact, by its bits.
  const double v = odd * __longlong_as_double(static_cast<long long>(1023 + 32 * (top - 1) + FloatDigits::kLowestExponent) << 52);
  return of(negative ? -v : v);
}

//! A partial's exact sum, rounded once to T (a segment's, a view's result). Where it is the
//! pair's, v + lo renormalized, v rounded to odd by lo (as round_digits) and then to T.
template <class T>
__device__ inline T rounded_once(const FloatDigits& a) {
  constexpr unsigned kSlow = FloatDigits::kNaN | FloatDigits::kPosInf | FloatDigits::kNegInf | FloatDigits::kDigits;
  if (a.flags & kSlow) return round_digits<T>(a);
  // A warp's fold leaves no low part (the short segments' partials, written as they come out of
  // it): then none of TwoSum's five additions.
  double v = a.fast, lo = 0.0;
  if (a.low != 0) v = a.fast + a.low, lo = two_sum_error(a.fast, a.low, v);
  if (v == 0) {  // then lo is 0 too: -0 only where every element was -0 (and there was one)
    v = (a.flags & FloatDigits::kAny) && !(a.flags & FloatDigits::kNotNegativeZero) ? -0.0 : 0.0;
  } else if (lo != 0) {  // rounded to odd: the neighbour of v towards lo where v's last bit is even
    const long long bits = __double_as_longlong(v);
    if (!(bits & 1)) v = __longlong_as_double(bits + ((lo < 0) == (v < 0) ? 1 : -1));
  }
  if constexpr (std::is_same_v<T, float>) return static_cast<float>(v);
  else return T(v);
}

//! Segment s's exact sum, rounded once, into out[s].
template <class T, class Out>
__device__ inline void write_segment(const ExactSegmentSum<T>&, const FloatDigits& a, std::uint64_t s, std::uint64_t, Out* out,
                                     std::uint64_t*) {
  out[s] = rounded_once<T>(a);
}

}  // namespace xreduce::cuda
