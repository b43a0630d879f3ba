#pragma once
//! The exact partial of a floating-point sum (Accuracy::exact). Threads, blocks, GPUs and
//! processes each sum their part into one; any number of them combine, in any order, to the
//! same exact value, which is rounded once, at the end. Public, with a fixed layout, because it
//! is what crosses between processes.
//!
//! C++17, as the CUDA sources that fill it are.
//!
//! Layout: 72 two's-complement 64-bit words (576 bytes, little-endian on every platform the
//! library builds for), no padding:
//!
//!   words[0..66]  digits: the finite part of the sum is  sum_i words[i] * 2^(32 i - 1088)
//!   words[67]     the number of NaNs added
//!   words[68]     the number of +inf added
//!   words[69]     the number of -inf added
//!   words[70]     nonzero iff an element other than -0.0 was added (its size means nothing)
//!   words[71]     the number of elements added
//!
//! Two partials combine by adding them word by word, nothing else: associative and commutative
//! exactly. A normalized partial (normalize()) has digits 0..65 in [0, 2^32) and the sign in
//! digit 66; up to 2^31 normalized partials add word by word without overflow, so an MPI_SUM over
//! 72 MPI_INT64_T (or NCCL's int64 sum) combines them. The digits span 2^-1088 to 2^1088: every
//! f32 and f64 value, and the sum of fewer than 2^63 of them.
//!
//! The algorithms follow Neal's small superaccumulator (xsum: 64-bit words holding 32-bit
//! digits, carries propagated only now and then) and ExBLAS's split between a fast path and a
//! superaccumulator behind it (see core/src/exact.cpp). Adding one value, combining and
//! normalizing are inline here, so that a plugin, which links nothing of the library, can fill
//! and combine partials; the fast path and the rounding are the library's.

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "xreduce/float16.hpp"

namespace xreduce {

struct ExactSum {
  static constexpr int kDigits = 67;
  static constexpr int kDigitBits = 32;
  static constexpr int kLowestExponent = -1088;  //!< the weight of digit 0's lowest bit: 2^-1088
  static constexpr int kWords = 72;
  enum Word : int { kNaN = 67, kPosInf = 68, kNegInf = 69, kNotNegativeZero = 70, kCount = 71 };

  std::int64_t words[kWords] = {};

  //! Adds one value exactly (every f32 value is a double).
  void add(double x);
  //! Adds many values exactly: fastest for data whose magnitudes span up to about 2^120 (f32) or
  //! 2^70 (f64) within each run of 2048 elements (any data is exact; wider runs go to an
  //! accumulator whose cost does not depend on the data).
  void add(const float* x, std::size_t n);
  void add(const double* x, std::size_t n);
  //! The 16-bit floats: f16 at the same cost whatever the data (every finite f16 is a 40-bit
  //! fixed-point number); bf16 as f32 is.
  void add(const f16* x, std::size_t n);
  void add(const bf16* x, std::size_t n);

  //! Adds `other`, word by word, and normalizes.
  ExactSum& operator+=(const ExactSum& other);
  //! Propagates the carries: digits 0..65 into [0, 2^32), the sign into digit 66. The value is
  //! unchanged.
  void normalize();

  //! The sum rounded once to the nearest T (float, double, f16 or bf16), ties to even: NaN if a NaN or both
  //! infinities were added, else +-inf if one was, else the exact sum rounded (+-inf beyond the
  //! largest finite T). A zero sum is -0 only if every element was -0.
  template <class T>
  T round() const;

  std::int64_t count() const { return words[kCount]; }
};

extern template float ExactSum::round<float>() const;
extern template double ExactSum::round<double>() const;
extern template f16 ExactSum::round<f16>() const;
extern template bf16 ExactSum::round<bf16>() const;

//! Statistics of the elements whose exact partial is `sum` (n = sum.count() of them) and, for the
//! variance, `squares` (an exact partial of their squares: an f32's square is a double exactly, an
//! f64's a double and its fma remainder), each the exact value rounded once to T (float, double,
//! f16 or bf16), ties to even (MPFR). The mean is S / n (NaN or an infinity if one was added); the
//! variance (n Q - S^2) / (n (n - correction)), NaN for a NaN or an infinity or where
//! n - correction <= 0; `root`: its square root, also correctly rounded. What Accuracy::exact gives
//! for mean, var and std, for partials combined elsewhere (chunks of a Dask array, MPI ranks).
template <class T>
T exact_mean(const ExactSum& sum);
template <class T>
T exact_variance(const ExactSum& sum, const ExactSum& squares, double correction, bool root = false);

extern template float exact_mean<float>(const ExactSum&);
extern template double exact_mean<double>(const ExactSum&);
extern template f16 exact_mean<f16>(const ExactSum&);
extern template bf16 exact_mean<bf16>(const ExactSum&);
extern template float exact_variance<float>(const ExactSum&, const ExactSum&, double, bool);
extern template double exact_variance<double>(const ExactSum&, const ExactSum&, double, bool);
extern template f16 exact_variance<f16>(const ExactSum&, const ExactSum&, double, bool);
extern template bf16 exact_variance<bf16>(const ExactSum&, const ExactSum&, double, bool);

static_assert(sizeof(ExactSum) == 576, "ExactSum: the layout is 72 words, no padding");

namespace detail {
//! Adds m * 2^exponent to the digits, without carrying (kLowestExponent <= exponent <= 971, the
//! range of a double's lowest bit). A call adds less than 2^33 to each digit it touches:
//! normalize before 2^29 of them.
inline void add_scaled(ExactSum& s, std::int64_t m, int exponent) {
  const int p = exponent - ExactSum::kLowestExponent;
  const int k = p >> 5, r = p & 31;
  // m = high * 2^32 + low, low in [0, 2^32): low * 2^r spans digits k and k+1, high * 2^r k+1 and k+2.
  const std::uint64_t low = (static_cast<std::uint64_t>(m) & 0xffffffff) << r;
  const std::int64_t high = (m >> 32) * (std::int64_t{1} << r);  // arithmetic shift: floor
  s.words[k] += static_cast<std::int64_t>(low & 0xffffffff);
  s.words[k + 1] += static_cast<std::int64_t>(low >> 32) + (high & 0xffffffff);
  s.words[k + 2] += high >> 32;
}

//! The bits of -0.0.
inline constexpr std::uint64_t kNegativeZero = std::uint64_t{1} << 63;

//! Adds one double (finite, infinite or NaN) to the digits or the counts, not to the count of elements.
inline void add_value(ExactSum& s, double x) {
  std::uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  const int field = static_cast<int>((bits >> 52) & 0x7ff);
  std::uint64_t mantissa = bits & ((std::uint64_t{1} << 52) - 1);
  const bool negative = (bits >> 63) != 0;
  if (bits != kNegativeZero) s.words[ExactSum::kNotNegativeZero] += 1;
  if (field == 0x7ff) {
    s.words[mantissa != 0 ? ExactSum::kNaN : negative ? ExactSum::kNegInf : ExactSum::kPosInf] += 1;
    return;
  }
  if (mantissa == 0 && field == 0) return;
  int exponent = -1074;
  if (field != 0) {
    mantissa |= std::uint64_t{1} << 52;
    exponent = field - 1075;
  }
  const auto m = static_cast<std::int64_t>(mantissa);
  add_scaled(s, negative ? -m : m, exponent);
}

//! The fast path's vector width in doubles here: 8 (AVX-512), 4 (AVX2) or 2 (the rest).
int exact_vector_width();
//! ExactSum::add with a narrower vector width than this processor's (for the tests: every
//! variant gets checked on a machine that has them all).
void add_with_width(ExactSum& s, const float* x, std::size_t n, int width);
void add_with_width(ExactSum& s, const double* x, std::size_t n, int width);
void add_with_width(ExactSum& s, const bf16* x, std::size_t n, int width);
}  // namespace detail

inline void ExactSum::add(double x) {
  detail::add_value(*this, x);
  if ((++words[kCount] & ((std::int64_t{1} << 29) - 1)) == 0) normalize();
}

inline ExactSum& ExactSum::operator+=(const ExactSum& other) {
  for (int i = 0; i < kWords; ++i) words[i] += other.words[i];
  normalize();
  return *this;
}

namespace detail {
//! Propagates the carries of `count` 32-bit digits held in 64-bit words: d[0..count-2] into
//! [0, 2^32), the sign into d[count - 1]; the value is unchanged. The carries are one chain, digit
//! by digit, so it runs only from the lowest nonzero digit (the ones below are normalized
//! already) and stops past the highest where no carry is left; a borrow past it makes every digit
//! above 2^32 - 1 and the sign digit -1, written at once. A sum of a few values spans a few of
//! ExactSum's 67 digits.
inline void normalize_digits(std::int64_t* d, int count) {
  int low = 0, high = count - 1;
  while (low < count - 1 && d[low] == 0) ++low;
  while (high > low && d[high] == 0) --high;
  for (int i = low; i + 1 < count; ++i) {
    const std::int64_t carry = d[i] >> 32;  // arithmetic: floor division by 2^32
    d[i] &= 0xffffffff;
    if (i >= high && carry <= 0) {  // the digits above are zero: they stay so, or all borrow
      if (carry < 0 && i + 2 < count) {
        d[i + 1] = carry & 0xffffffff;
        for (int j = i + 2; j + 1 < count; ++j) d[j] = 0xffffffff;
        d[count - 1] = -1;
      } else {
        d[i + 1] += carry;  // the sign digit
      }
      return;
    }
    d[i + 1] += carry;
  }
}
}  // namespace detail

inline void ExactSum::normalize() { detail::normalize_digits(words, kDigits); }

}  // namespace xreduce
