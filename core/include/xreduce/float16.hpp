#pragma once
//! The two 16-bit floating-point element types: `f16` (IEEE 754 binary16: 11 significant bits,
//! exponents -14..15, subnormals down to 2^-24, largest finite 65504) and `bf16` (bfloat16: f32's
//! exponent range with 8 significant bits). Both are their 16 bits and nothing else, the layout of
//! numpy's float16, ml_dtypes' bfloat16, torch's and CUDA's `__half` / `__nv_bfloat16`.
//!
//! Arithmetic happens in float: a value converts to float exactly (implicitly, so comparisons and
//! `static_cast<double>` read the value), and a float or double converts back rounded once to
//! nearest, ties to even, overflowing to +-inf as IEEE does. The conversions are plain integer code
//! (no F16C), the same bits on every processor and on the GPU, where f16's widening is its one
//! conversion instruction (exact, as the integer code is); the CPU kernels that need speed convert
//! blocks with vector instructions (core/src/backend/cpu_kernels.hpp, narrow_sums.cpp).
//!
//! C++17, host and device, as the CUDA sources that include it are.

#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#if defined(__CUDACC__)
#define XREDUCE_FLOAT16_HD __host__ __device__
#else
#define XREDUCE_FLOAT16_HD
#endif

namespace xreduce {

namespace float16_detail {

XREDUCE_FLOAT16_HD inline float float_of_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
XREDUCE_FLOAT16_HD inline std::uint32_t bits_of_float(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

//! A double rounded once to a binary format of `kMant` stored significand bits and `kExp` exponent
//! bits (IEEE layout: sign, biased exponent, significand), nearest with ties to even; NaN stays a
//! quiet NaN, magnitudes past the largest finite value become infinities. Directly from the
//! double: rounding through float first would round twice.
template <int kMant, int kExp>
XREDUCE_FLOAT16_HD inline std::uint16_t round_double(double x) {
  std::uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  const auto sign = static_cast<std::uint16_t>((b >> 63) << (kMant + kExp));
  const int field = static_cast<int>((b >> 52) & 0x7ff);
  std::uint64_t mant = b & ((std::uint64_t{1} << 52) - 1);
  constexpr int kBias = (1 << (kExp - 1)) - 1;
  constexpr std::uint16_t kInf = static_cast<std::uint16_t>(((1u << kExp) - 1) << kMant);
  if (field == 0x7ff) return static_cast<std::uint16_t>(sign | kInf | (mant != 0 ? (1u << (kMant - 1)) : 0u));
  if (field == 0 && mant == 0) return sign;
  // The value is m * 2^e with m a 53-bit integer (double subnormals: far below either format).
  if (field != 0) mant |= std::uint64_t{1} << 52;
  const int e = (field != 0 ? field : 1) - 1075;
  // The target's lowest bit: its exponent's, or the subnormals' 2^(1 - bias - kMant).
  // One instruction, not a dozen steps of a loop: on the GPU the loop was 12 steps of 7
  // instructions for every f16/bf16 result (ncu's source counters, bf16 segments).
#if defined(__CUDA_ARCH__)
  const int top = 63 - __clzll(static_cast<long long>(mant));
#elif defined(__GNUC__)
  const int top = 63 - __builtin_clzll(mant);
#else
  int top = 63;
  while (((mant >> top) & 1) == 0) --top;
#endif
  int lsb = top + e - kMant;  // exponent of the lowest kept bit, for a normal result
  const int min_lsb = 1 - kBias - kMant;
  if (lsb < min_lsb) lsb = min_lsb;
  const int shift = lsb - e;  // bits of mant below the kept ones (>= 53 - 1 - kMant > 0)
  // Every bit below the kept ones, and below half of the lowest (mant < 2^53): zero.
  if (shift >= 64) return sign;
  std::uint64_t q;
  q = mant >> shift;
  const std::uint64_t rest = mant & ((std::uint64_t{1} << shift) - 1), half = std::uint64_t{1} << (shift - 1);
  if (rest > half || (rest == half && (q & 1) != 0)) ++q;
  // q * 2^lsb: a subnormal if q < 2^kMant, else q has kMant + 1 bits (or kMant + 2 after a carry).
  int biased = lsb + kMant + kBias;  // of a q in [2^kMant, 2^(kMant+1))
  if (q >> (kMant + 1)) {
    q >>= 1;  // the carry made it 2^(kMant+1): exact
    ++biased;
  }
  if (q < (std::uint64_t{1} << kMant)) return static_cast<std::uint16_t>(sign | q);  // subnormal (or zero)
  if (biased >= (1 << kExp) - 1) return static_cast<std::uint16_t>(sign | kInf);
  return static_cast<std::uint16_t>(sign | (static_cast<std::uint32_t>(biased) << kMant) |
                                    (q & ((std::uint64_t{1} << kMant) - 1)));
}

}  // namespace float16_detail

//! IEEE 754 binary16.
struct f16 {
  std::uint16_t bits = 0;

  f16() = default;
  //! Any arithmetic value, rounded once (integers and floats alike pass through double: exact
  //! for every float, and for integers up to 2^53, far past the largest finite f16).
  template <class A, class = std::enable_if_t<std::is_arithmetic_v<A>>>
  XREDUCE_FLOAT16_HD explicit f16(A x) : bits(float16_detail::round_double<10, 5>(static_cast<double>(x))) {}
  XREDUCE_FLOAT16_HD static constexpr f16 from_bits(std::uint16_t b) {
    f16 h;
    h.bits = b;
    return h;
  }
  //! Exact. On the host, shifted into float's position and scaled by 2^112 (which also normalises
  //! the subnormals), branch-free apart from the infinity/NaN test, so loops of it vectorise.
  XREDUCE_FLOAT16_HD operator float() const {
#if defined(__CUDA_ARCH__)
    float f;  // the GPU converts in one instruction
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(bits));
    return f;
#else
    const std::uint32_t u = bits;
    float magnitude = float16_detail::float_of_bits((u & 0x7fffu) << 13) * 5.192296858534828e33f;  // 2^112
    std::uint32_t m = float16_detail::bits_of_float(magnitude);
    if ((u & 0x7c00u) == 0x7c00u) m |= 0xffu << 23;  // infinity or NaN: float's all-ones exponent
    return float16_detail::float_of_bits(m | ((u & 0x8000u) << 16));
#endif
  }
};

//! bfloat16: the upper half of an f32.
struct bf16 {
  std::uint16_t bits = 0;

  bf16() = default;
  //! Any arithmetic value, rounded once (integers and floats alike pass through double: exact
  //! for every float, and for integers up to 2^53, far past the largest finite bf16).
  template <class A, class = std::enable_if_t<std::is_arithmetic_v<A>>>
  XREDUCE_FLOAT16_HD explicit bf16(A x) : bits(float16_detail::round_double<7, 8>(static_cast<double>(x))) {}
  XREDUCE_FLOAT16_HD static constexpr bf16 from_bits(std::uint16_t b) {
    bf16 h;
    h.bits = b;
    return h;
  }
  //! Exact: the bits are f32's upper half.
  XREDUCE_FLOAT16_HD operator float() const { return float16_detail::float_of_bits(static_cast<std::uint32_t>(bits) << 16); }
};

static_assert(sizeof(f16) == 2 && sizeof(bf16) == 2, "the 16-bit floats are their bits");
static_assert(std::is_trivially_copyable_v<f16> && std::is_trivially_copyable_v<bf16>, "copied as bytes");

//! Floating-point element types: float, double and the two 16-bit ones.
template <class T>
inline constexpr bool is_float_v = std::is_floating_point_v<T> || std::is_same_v<T, f16> || std::is_same_v<T, bf16>;
//! The 16-bit floating-point types, whose sums accumulate in float and round at the end.
template <class T>
inline constexpr bool is_float16_v = std::is_same_v<T, f16> || std::is_same_v<T, bf16>;

}  // namespace xreduce

//! What the kernels and references ask of a float type: infinities, NaN, the extremes.
template <>
class std::numeric_limits<xreduce::f16> {
 public:
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = true;
  static constexpr bool is_integer = false;
  static constexpr bool is_iec559 = true;
  static constexpr bool has_infinity = true;
  static constexpr bool has_quiet_NaN = true;
  static constexpr int digits = 11;
  static constexpr int min_exponent = -13;
  static constexpr int max_exponent = 16;
  static constexpr xreduce::f16 infinity() { return xreduce::f16::from_bits(0x7c00); }
  static constexpr xreduce::f16 quiet_NaN() { return xreduce::f16::from_bits(0x7e00); }
  static constexpr xreduce::f16 max() { return xreduce::f16::from_bits(0x7bff); }
  static constexpr xreduce::f16 lowest() { return xreduce::f16::from_bits(0xfbff); }
  static constexpr xreduce::f16 min() { return xreduce::f16::from_bits(0x0400); }
  static constexpr xreduce::f16 denorm_min() { return xreduce::f16::from_bits(0x0001); }
  static constexpr xreduce::f16 epsilon() { return xreduce::f16::from_bits(0x1400); }  // 2^-10
};

template <>
class std::numeric_limits<xreduce::bf16> {
 public:
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = true;
  static constexpr bool is_integer = false;
  static constexpr bool is_iec559 = false;
  static constexpr bool has_infinity = true;
  static constexpr bool has_quiet_NaN = true;
  static constexpr int digits = 8;
  static constexpr int min_exponent = -125;
  static constexpr int max_exponent = 128;
  static constexpr xreduce::bf16 infinity() { return xreduce::bf16::from_bits(0x7f80); }
  static constexpr xreduce::bf16 quiet_NaN() { return xreduce::bf16::from_bits(0x7fc0); }
  static constexpr xreduce::bf16 max() { return xreduce::bf16::from_bits(0x7f7f); }
  static constexpr xreduce::bf16 lowest() { return xreduce::bf16::from_bits(0xff7f); }
  static constexpr xreduce::bf16 min() { return xreduce::bf16::from_bits(0x0080); }
  static constexpr xreduce::bf16 denorm_min() { return xreduce::bf16::from_bits(0x0001); }
  static constexpr xreduce::bf16 epsilon() { return xreduce::bf16::from_bits(0x3c00); }  // 2^-7
};
