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

#include "exact_segments.cuh"
#include "exact_sum.cuh"

namespace xreduce::cuda {

//! A sum, the rounding errors of its additions (each exact, by TwoSum: Knuth's s + x = t + e)
//! added in `errors`, and the magnitudes of the rounding errors of those additions (each exact,
//! by TwoSum too) added in `rounded`: sum + errors lies within `rounded` (to its own roundings,
//! which only make it smaller: below) of the exact sum of what was added, and `rounded` is 0
//! where every addition to `errors` was exact (as on data of few significant bits, whose sums
//! are often ties). A third double that kept those errors too, with its own roundings bounded,
//! settled no more segments of the benchmark's distributions and took 1.22x, 1.34x and 1.22x a
//! plain sum on uniform, wide and subnormal power-law segments, against 1.16x, 1.28x and 1.17x
//! (H100, bench/results/nvidia-h100/logs/exact-segments-f64-e49b4bc.md).
struct TwoSumPair {
  double sum, errors, rounded;
  __device__ void add_error(double e) {
    const double t = errors + e;
    rounded += fabs(two_sum_error(errors, e, t));
    errors = t;
  }
  __device__ void add(double x) {
    const double t = sum + x;
    add_error(two_sum_error(sum, x, t));
    sum = t;
  }
  __device__ void add(const TwoSumPair& other) {
    const double t = sum + other.sum, e = two_sum_error(sum, other.sum, t);
    sum = t;
    rounded += other.rounded;
    add_error(other.errors);
    add_error(e);
  }
};

//! Elements whose exponent field is this or more (2^977 and up) go to the large pair, times 2^-64.
inline constexpr unsigned kLargeF64Field = 2000;

//! A partial of an f64 segment's exact sum: the elements below 2^977 in `small`, the others times
//! 2^-64 in `large`; top, the largest exponent field among them (2047: an infinity or a NaN among
//! them, which went to `large`).
struct F64Partial {
  TwoSumPair small, large;
  unsigned top;
};

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
    a.small.add(b.small);
    a.large.add(b.large);
    a.top = max(a.top, b.top);
    return a;
  }
};

//! A lane's pairs: each element to the one its field picks (a branch: where a warp's lanes
//! differ, both are taken). One a lane (one_accumulator): four, one for each load in flight,
//! spilled in the short-segment kernel under its cap of 64 registers (sm_90).
template <>
struct one_accumulator<ExactSegmentSumF64> : std::true_type {};
template <>
struct Accumulator<ExactSegmentSumF64> {
  F64Partial p;
  __device__ void init(const ExactSegmentSumF64& f) { p = f.identity(); }
  __device__ void add(const ExactSegmentSumF64&, ExactSegmentSumF64::Lifted e) {
    const unsigned field = (static_cast<unsigned>(__double2hiint(e.x)) >> 20) & 0x7ffu;
    if (field >= kLargeF64Field) p.large.add(e.x * 0x1p-64);
    else p.small.add(e.x);
    p.top = max(p.top, field);
  }
  __device__ F64Partial value(const ExactSegmentSumF64&) const { return p; }
};

__device__ inline void add_vector(Accumulator<ExactSegmentSumF64>& acc, const ExactSegmentSumF64& f, const Vec<double>& r,
                                  std::size_t) {
#pragma unroll
  for (int j = 0; j < vector_width<double>(); ++j) acc.add(f, {r.e[j]});
}

//! The most elements of a segment whose pairs may settle it: the `rounded` sums of up to 2^22
//! additions deep (a lane's elements, then the folds) are then within 2^-31 of the exact sums of
//! their nonnegative terms, which the bound's factor 1 + 2^-30 covers.
inline constexpr std::uint64_t kMostBoundedF64Elements = std::uint64_t{1} << 40;

//! A segment's exact sum rounded once to double, into `out`, where its pairs (of n > 0 elements)
//! settle it; false where they do not.
//!
//! Without large elements the small pair is the sum: r = sum + errors and its rounding error t,
//! exactly (TwoSum); the exact sum lies within the bound, `rounded` times 1 + 2^-30, of r + t. A
//! bound of 0 says that r + t is the exact sum, so r, its rounding to nearest, is the answer. Else
//! the exact sum rounds to r where the whole interval lies strictly between the points halfway to
//! r's neighbours: half an ulp away from zero, and toward zero half an ulp, or a quarter where |r|
//! is a normal power of two (a quarter of its binade's ulp is half the one below's). Both ends
//! are computed with one rounding, which is monotone, and the halfway points are powers of two,
//! so a computed end inside them means the exact one is. Sums below 2^-968, whose half ulp is not
//! a normal double, are checked scaled by 2^256 (exact for r, t and the bound). A zero sum is -0
//! where every element was -0.
//!
//! With large elements the check is of the sum times 2^-64: the small pair, times 2^-64, is added
//! to the large one (a scaled double below 2^-1022 may round, by 2^-1075 at most, which the bound
//! takes in). The scaled sum rounds as the sum does where both are normal: from 2^-968 to below
//! 2^960 there (below 2^1024 unscaled). A bound of 0 and a sum of 2^960 or more there, or a
//! bound below 2^959 and a sum of 2^962 or more, is past the threshold of overflow (2^960 - 2^906
//! there): an infinity. The rest (near the threshold, or large elements that cancel to a sum
//! below 2^-968) is left to the digits.
__device__ inline bool rounded_by_error_bound(const F64Partial& a, std::uint64_t n, double& out) {
  if (a.top > 2046 || n > kMostBoundedF64Elements) return false;  // an infinity or a NaN among the elements
  const bool any_large = a.top >= kLargeF64Field;
  TwoSumPair p = a.small;
  double slack = 0;  // the scaled small pair's roundings
  if (any_large) {
    const double sum = a.small.sum * 0x1p-64, errors = a.small.errors * 0x1p-64, rounded = a.small.rounded * 0x1p-64;
    if (sum * 0x1p64 != a.small.sum || errors * 0x1p64 != a.small.errors || rounded * 0x1p64 != a.small.rounded)
      slack = 0x1p-1072;  // each rounded by 2^-1075 at most
    p = a.large;
    p.rounded += rounded;
    p.add(sum);
    p.add_error(errors);
  }
  const double r = p.sum + p.errors, t = two_sum_error(p.sum, p.errors, r);
  if (!isfinite(r) || !isfinite(t) || !isfinite(p.rounded)) return false;
  const unsigned long long bits = static_cast<unsigned long long>(__double_as_longlong(r));
  const int field = static_cast<int>((bits >> 52) & 0x7ff), binade = max(field, 1);
  const double bound = p.rounded * (1 + 0x1p-30) + slack;
  const double infinity = __longlong_as_double(0x7ff0000000000000ll);
  if (any_large) {
    if (field < 55) return false;
    if (field >= 1983 && (bound == 0 || (field > 1984 && bound < 0x1p959))) {
      out = signbit(r) ? -infinity : infinity;
      return true;
    }
    if (field >= 1983) return false;
  }
  if (bound != 0) {
    const int scale = !any_large && field < 55 ? 256 : 0;  // the check's domain: r, t and the bound times 2^scale
    const double half_ulp = exact::pow2(binade - 1076 + scale);
    const bool power_of_two = (bits & ((1ull << 52) - 1)) == 0 && field > 1;
    const double toward_zero = power_of_two ? half_ulp / 2 : half_ulp;
    const double away = (signbit(r) ? -t : t) * exact::pow2(scale);
    const double scaled_bound = bound * exact::pow2(scale);
    if (!(away + scaled_bound < half_ulp && away - scaled_bound > -toward_zero)) return false;
  }
  if (any_large) out = r * 0x1p64;  // a normal double below 2^1024: exact
  else out = r != 0 ? r : a.small.sum == 0 && signbit(a.small.sum) ? -0.0 : 0.0;
  return true;
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

//! ExactSum's words (`d`, kWords of them: the digits, not yet carried, then the counts) rounded
//! once to the nearest double, ties to even, as ExactSum::round<double> rounds: NaN for a NaN or
//! both infinities, else +-inf for one, else the exact sum (+-inf past the largest double); a zero
//! sum is -0 only where every element (of at least one) was -0. One thread; changes `d`.
__device__ inline double round_exact_words(long long* d) {
  constexpr int kDigits = ExactSum::kDigits;
  if (d[ExactSum::kNaN] != 0 || (d[ExactSum::kPosInf] != 0 && d[ExactSum::kNegInf] != 0))
    return __longlong_as_double(0x7ff8000000000000ll);
  if (d[ExactSum::kPosInf] != 0) return __longlong_as_double(0x7ff0000000000000ll);
  if (d[ExactSum::kNegInf] != 0) return __longlong_as_double(static_cast<long long>(0xfff0000000000000ull));
  for (int i = 0; i + 1 < kDigits; ++i) {  // carried: digits 0..65 in [0, 2^32), the sign in digit 66
    d[i + 1] += d[i] >> 32;                // arithmetic: floor division by 2^32
    d[i] &= 0xffffffff;
  }
  const bool negative = d[kDigits - 1] < 0;
  if (negative) {  // the magnitude: every bit flipped, then 1 added
    long long carry = 1;
    for (int i = 0; i + 1 < kDigits; ++i) {
      const long long v = (~d[i] & 0xffffffff) + carry;
      d[i] = v & 0xffffffff, carry = v >> 32;
    }
    d[kDigits - 1] = ~d[kDigits - 1] + carry;
  }
  int top = kDigits - 1;
  while (top >= 0 && d[top] == 0) --top;
  if (top < 0) return d[ExactSum::kCount] > 0 && d[ExactSum::kNotNegativeZero] == 0 ? -0.0 : 0.0;
  // Bit positions count from 2^kLowestExponent: 53 bits from the top one, or fewer where they
  // would fall below the smallest subnormal's (2^-1074), and the rest rounded.
  const int msb = top * 32 + 63 - __clzll(d[top]);
  const int lsb = max(msb - 52, -1074 - ExactSum::kLowestExponent);
  auto window = [&](int pos) {  // the magnitude's bits from pos up, modulo 2^64
    const int k = pos >> 5, r = pos & 31;
    unsigned long long w = static_cast<unsigned long long>(d[k]) >> r;
    if (k + 1 < kDigits) w += static_cast<unsigned long long>(d[k + 1]) << (32 - r);
    if (k + 2 < kDigits && r > 0) w += static_cast<unsigned long long>(d[k + 2]) << (64 - r);
    return w;
  };
  unsigned long long q = window(lsb);
  const int below = lsb - 1;  // the rounding bit; every bit under it is sticky
  const bool round_bit = (window(below) & 1) != 0;
  bool sticky = (d[below >> 5] & ((1ll << (below & 31)) - 1)) != 0;
  for (int i = 0; i < (below >> 5) && !sticky; ++i) sticky = d[i] != 0;
  if (round_bit && (sticky || (q & 1) != 0)) ++q;  // may carry to 2^53: still exact
  const double v = ldexp(static_cast<double>(q), lsb + ExactSum::kLowestExponent);  // +-inf past the range
  return negative ? -v : v;
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
