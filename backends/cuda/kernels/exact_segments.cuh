#pragma once
// Exact sums of rows and segments (Accuracy::exact, layouts inner and ragged) of f32, f16 and
// bf16: ExactSegmentSum<T>, a policy of the segments kernels (segmented.cuh), so that the exact
// sums are balanced over any mix of lengths as the plain ones are, and read the offsets the same
// way. Each segment's sum is rounded once, on the GPU, by the lane that writes it.
//
// Every finite float is m * 2^(p - 149) with m < 2^24 and 0 <= p <= 253: the sum of any floats is
// a fixed-point number whose lowest bit weighs 2^-149. FloatDigits holds it as ExactSum holds a
// double's (Neal's small superaccumulator): 32-bit digits in 64-bit words, digit d weighing
// 2^(32 d - 149), carries left in the words until normalize(). An element spans two digits
// (m << (p % 32) has at most 55 bits), digits 0 to 8; word 9 takes the carries and the sign.
//
// A lane keeps its digits in shared memory (80 bytes a lane, any digit in reach at one address),
// and before them a run: the sum, in a register, of its consecutive elements whose significands
// land at the same digit, which goes to the two digits it spans when an element lands elsewhere
// (or after 255 elements, before the run could overflow). On data of one binade or a few (uniform
// [0, 1): digit 3 for all but about one element in 2^30) that is one 64-bit addition an element;
// on data of random exponents, where nearly every element ends a run, two shared-memory additions
// more. The lanes of a segment combine their digits with shuffles of the words that some lane of
// the warp has nonzero, as they combine a plain sum.
//
// f64 has no such form here (its 2098 bits of range would take 67 words a lane): the CPU
// backends and the flat and column kernels of exact_sum.cuh sum it.

#include "vector_loads.cuh"

namespace xreduce::cuda {

//! The exact sum of floats (see above). Aggregate, no initializers: it lives in __shared__ arrays.
struct FloatDigits {
  static constexpr int kWords = 10, kLowestExponent = -149;
  enum Flag : unsigned { kNaN = 1, kPosInf = 2, kNegInf = 4, kAny = 8, kNotNegativeZero = 16 };
  long long w[kWords];
  unsigned flags;  //!< Flag bits: what was added besides the finite values' digits
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

//! The warp's shuffle of FloatDigits (every lane of the warp calls it, as every shuffle of the
//! segments kernels): the words that no lane has nonzero are not sent.
__device__ inline FloatDigits shfl_down(const FloatDigits& v, int offset) {
  unsigned nonzero = 0;
#pragma unroll
  for (int i = 0; i < FloatDigits::kWords; ++i) nonzero |= (v.w[i] != 0 ? 1u : 0u) << i;
  nonzero = warp_or(nonzero);
  FloatDigits r;
#pragma unroll
  for (int i = 0; i < FloatDigits::kWords; ++i) r.w[i] = (nonzero >> i) & 1 ? __shfl_down_sync(0xffffffffu, v.w[i], offset) : 0;
  r.flags = __shfl_down_sync(0xffffffffu, v.flags, offset);
  return r;
}

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
  __host__ __device__ acc_t identity() const { return acc_t{}; }
  __device__ Lifted lift(T x, index_t) const { return {static_cast<float>(x)}; }
  __device__ acc_t operator()(acc_t a, const acc_t& b) const {
#pragma unroll
    for (int i = 0; i < FloatDigits::kWords; ++i) a.w[i] += b.w[i];
    a.flags |= b.flags;
    normalize(a);  // so that partials of any number of lanes and chunks add without overflow
    return a;
  }
};

template <class T>
struct one_accumulator<ExactSegmentSum<T>> : std::true_type {};  // its digits are the lane's shared words

//! The block's lanes' digits: digit d of lane t at d * kBlock + t, so that a warp's lanes touch
//! neighbouring words whatever digits they add to (no bank conflicts).
__device__ inline long long* exact_segment_lane_digits() {
  __shared__ long long digits[FloatDigits::kWords * ExactSegmentSum<float>::kBlock];
  return digits;
}

//! A lane's running exact sum: its digits in shared memory, the run that has not reached them yet,
//! and the flags.
template <class T>
struct Accumulator<ExactSegmentSum<T>> {
  static constexpr int kBlock = ExactSegmentSum<T>::kBlock;
  static constexpr int kRunMax = 255;  // elements of below 2^55 each: the run stays below 2^63
  long long* lane;  // digit d at lane[d * kBlock]
  long long run;
  int run_digit, run_length;
  unsigned flags;
  __device__ void init(const ExactSegmentSum<T>&) {
    lane = exact_segment_lane_digits() + threadIdx.x;
#pragma unroll
    for (int d = 0; d < FloatDigits::kWords; ++d) lane[d * kBlock] = 0;
    run = 0, run_digit = 0, run_length = 0, flags = 0;
  }
  //! The run into the two digits it spans: its low 32 bits, and the rest, signed.
  __device__ void flush() {
    if (run_length) {
      lane[run_digit * kBlock] += run & 0xffffffffll;
      lane[(run_digit + 1) * kBlock] += run >> 32;
    }
    run = 0, run_length = 0;
  }
  __device__ void add(float x) {
    const unsigned u = __float_as_uint(x), field = (u >> 23) & 0xffu, fraction = u & 0x7fffffu;
    flags |= FloatDigits::kAny | (u != 0x80000000u ? FloatDigits::kNotNegativeZero : 0u);
    if (field == 0xffu) {
      flags |= fraction ? FloatDigits::kNaN : u >> 31 ? FloatDigits::kNegInf : FloatDigits::kPosInf;
      return;
    }
    if (field == 0 && fraction == 0) return;
    const int p = static_cast<int>(field > 1 ? field : 1u) - 1;  // the significand's lowest bit: 2^(p - 149)
    const int k = p >> 5;
    long long v = static_cast<long long>(fraction | (field ? 0x800000u : 0u)) << (p & 31);
    if (u >> 31) v = -v;
    if (k != run_digit || run_length == kRunMax) flush(), run_digit = k;
    run += v, ++run_length;
  }
  __device__ void add(const ExactSegmentSum<T>&, typename ExactSegmentSum<T>::Lifted e) { add(e.x); }
  __device__ FloatDigits value(const ExactSegmentSum<T>&) {
    flush();
    FloatDigits d;
#pragma unroll
    for (int i = 0; i < FloatDigits::kWords; ++i) d.w[i] = lane[i * kBlock];
    d.flags = flags;
    normalize(d);
    return d;
  }
};

template <class T>
__device__ inline void add_vector(Accumulator<ExactSegmentSum<T>>& acc, const ExactSegmentSum<T>&, const Vec<T>& r,
                                  std::size_t) {
#pragma unroll
  for (int j = 0; j < vector_width<T>(); ++j) acc.add(static_cast<float>(r.e[j]));
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
__device__ inline T round_digits(FloatDigits a) {
  constexpr int kDigits = FloatFormat<T>::digits, kWords = FloatDigits::kWords;
  auto of = [](double v) {  // exact: v is a T, or past its range (+-inf)
    if constexpr (std::is_same_v<T, float>) return static_cast<float>(v);
    else return T(v);
  };
  if ((a.flags & FloatDigits::kNaN) || ((a.flags & FloatDigits::kPosInf) && (a.flags & FloatDigits::kNegInf)))
    return of(__longlong_as_double(0x7ff8000000000000ll));
  if (a.flags & FloatDigits::kPosInf) return of(__longlong_as_double(0x7ff0000000000000ll));
  if (a.flags & FloatDigits::kNegInf) return of(__longlong_as_double(static_cast<long long>(0xfff0000000000000ull)));
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
  out[s] = round_digits<T>(a);
}

}  // namespace xreduce::cuda
