#pragma once
//! The exact partial of a floating-point sum (Accuracy::exact). Threads, blocks, GPUs and
//! processes each sum their part into one; any number of them combine, in any order, to the
//! same exact value, which is rounded once, at the end. Public, with a fixed layout, because it
//! is what crosses between processes.
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
//! superaccumulator behind it (see core/src/exact.cpp).

#include <cstddef>
#include <cstdint>
#include <span>

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
  //! Adds many values exactly: fast for data whose magnitudes span up to about 2^60 within each
  //! run of 2048 elements (any data is exact; wider ranges take a slower path).
  void add(std::span<const float> x);
  void add(std::span<const double> x);

  //! Adds `other`, word by word, and normalizes.
  ExactSum& operator+=(const ExactSum& other);
  //! Propagates the carries: digits 0..65 into [0, 2^32), the sign into digit 66. The value is
  //! unchanged.
  void normalize();

  //! The sum rounded once to the nearest T (float or double), ties to even: NaN if a NaN or both
  //! infinities were added, else +-inf if one was, else the exact sum rounded (+-inf beyond the
  //! largest finite T). A zero sum is -0 only if every element was -0.
  template <class T>
  T round() const;

  std::int64_t count() const { return words[kCount]; }
  bool operator==(const ExactSum&) const = default;
};

extern template float ExactSum::round<float>() const;
extern template double ExactSum::round<double>() const;

static_assert(sizeof(ExactSum) == 576, "ExactSum: the layout is 72 words, no padding");

namespace detail {
//! Adds m * 2^exponent to the digits, without carrying (kLowestExponent <= exponent <= 971, the
//! range of a double's lowest bit). A call adds less than 2^32 to each digit it touches:
//! normalize before 2^30 of them.
void add_scaled(ExactSum& s, std::int64_t m, int exponent);
}  // namespace detail

}  // namespace xreduce
