// Leaf sums of the 8- and 16-bit types: see narrow_sums.hpp.

#include "narrow_sums.hpp"

#include "prefetch.hpp"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#define XREDUCE_X86 1
#else
#define XREDUCE_X86 0
#endif

namespace xreduce::detail {
namespace {

//! The plain loop, where no vector form is written (other processors than x86-64).
template <class Acc, class T>
[[maybe_unused]] Acc plain_sum(const T* x, std::size_t n) {
  Acc s = 0;
  for (std::size_t i = 0; i < n; ++i) s += static_cast<Acc>(x[i]);
  return s;
}

//! Floats of a block summed pairwise: the lanes' results.
float pairwise(float* lane, int n) {
  for (int w = n / 2; w > 0; w /= 2)
    for (int j = 0; j < w; ++j) lane[j] += lane[j + w];
  return lane[0];
}

#if XREDUCE_X86
//! The sum of the bytes x[0..n) (SSE2: psadbw against zero adds 8 bytes into each 64-bit half).
std::uint64_t byte_sum(const std::uint8_t* x, std::size_t n, std::uint8_t bias) {
  const __m128i zero = _mm_setzero_si128(), flip = _mm_set1_epi8(static_cast<char>(bias));
  __m128i a = zero, b = zero;
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    prefetch_ahead(x + i);
    const __m128i u = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)), flip);
    const __m128i v = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i + 16)), flip);
    a = _mm_add_epi64(a, _mm_sad_epu8(u, zero));
    b = _mm_add_epi64(b, _mm_sad_epu8(v, zero));
  }
  a = _mm_add_epi64(a, b);
  std::uint64_t s = static_cast<std::uint64_t>(_mm_cvtsi128_si64(a)) + static_cast<std::uint64_t>(_mm_cvtsi128_si64(_mm_unpackhi_epi64(a, a)));
  for (; i < n; ++i) s += static_cast<std::uint8_t>(x[i] ^ bias);
  return s;
}

//! The sum of 16-bit values x[0..n) read as signed after flipping `bias` (SSE2: pmaddwd against
//! ones adds pairs into 32-bit lanes; flushed to 64 bits every 2^14 vectors, before they can overflow).
std::int64_t word_sum_sse2(const std::uint16_t* x, std::size_t n, std::uint16_t bias) {
  const __m128i ones = _mm_set1_epi16(1), flip = _mm_set1_epi16(static_cast<short>(bias));
  std::int64_t s = 0;
  std::size_t i = 0;
  while (i + 8 <= n) {
    __m128i a = _mm_setzero_si128();
    const std::size_t stop = i + 8 * (std::size_t{1} << 14) < n ? i + 8 * (std::size_t{1} << 14) : n;
    for (; i + 8 <= stop; i += 8) {
      prefetch_ahead(x + i);
      const __m128i v = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)), flip);
      a = _mm_add_epi32(a, _mm_madd_epi16(v, ones));
    }
    alignas(16) std::int32_t lane[4];
    _mm_store_si128(reinterpret_cast<__m128i*>(lane), a);
    s += std::int64_t{lane[0]} + lane[1] + lane[2] + lane[3];
  }
  for (; i < n; ++i) s += static_cast<std::int16_t>(x[i] ^ bias);
  return s;
}

// word_sum_sse2's loop in AVX2, a cache line (two vectors) a step, in half the instructions: with
// SSE2's, u16 read 86-90% of the read probe on the build machine's Xeon, where the types with fewer
// instructions a byte read 99-109%.
__attribute__((target("avx2"))) std::int64_t word_sum_avx2(const std::uint16_t* x, std::size_t n, std::uint16_t bias) {
  const __m256i ones = _mm256_set1_epi16(1), flip = _mm256_set1_epi16(static_cast<short>(bias));
  std::int64_t s = 0;
  std::size_t i = 0;
  while (i + 32 <= n) {
    __m256i a = _mm256_setzero_si256(), b = _mm256_setzero_si256();
    // Each 32-bit lane takes two products a vector: 2^14 vectors a lane stay below 2^31.
    const std::size_t stop = i + 32 * (std::size_t{1} << 14) < n ? i + 32 * (std::size_t{1} << 14) : n;
    for (; i + 32 <= stop; i += 32) {
      prefetch_ahead(x + i);
      const __m256i u = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)), flip);
      const __m256i v = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i + 16)), flip);
      a = _mm256_add_epi32(a, _mm256_madd_epi16(u, ones));
      b = _mm256_add_epi32(b, _mm256_madd_epi16(v, ones));
    }
    alignas(32) std::int32_t lane[16];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lane), a);
    _mm256_store_si256(reinterpret_cast<__m256i*>(lane + 8), b);
    for (const std::int32_t l : lane) s += l;
  }
  for (; i < n; ++i) s += static_cast<std::int16_t>(x[i] ^ bias);
  return s;
}

//! The sum of 16-bit values, in the widest form the processor has.
std::int64_t word_sum(const std::uint16_t* x, std::size_t n, std::uint16_t bias) {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2 ? word_sum_avx2(x, n, bias) : word_sum_sse2(x, n, bias);
}

//! Whether the processor converts halves (F16C) on 256-bit registers the system saves (AVX, and
//! XSAVE of the YMM state). From CPUID itself: clang 14's __builtin_cpu_supports has no "f16c".
bool has_f16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  const bool osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, f16c = (c >> 29) & 1;
  if (!(osxsave && avx && f16c)) return false;
  unsigned lo = 0, hi = 0;
  __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (lo & 6) == 6;
}

// Four accumulators of eight floats: a float addition's latency is four cycles or so, and each
// chain waits for its last one; with two, an H100 host's core summed f16 at 67% of its read rate.
__attribute__((target("avx,f16c"))) float f16_sum_f16c(const f16* x, std::size_t n) {
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    prefetch_ahead(x + i);
    for (int k = 0; k < 4; ++k)
      acc[k] = _mm256_add_ps(acc[k], _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i + 8 * k))));
  }
  alignas(32) float lane[kFloat16Lanes];
  for (int k = 0; k < 4; ++k) _mm256_store_ps(lane + 8 * k, acc[k]);
  for (std::size_t j = 0; i < n; ++i, j = (j + 1) % kFloat16Lanes) lane[j] += static_cast<float>(x[i]);
  return pairwise(lane, kFloat16Lanes);
}

__attribute__((target("avx,f16c"))) void widen_f16c(const f16* x, std::size_t n, float* out) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
  for (; i < n; ++i) out[i] = static_cast<float>(x[i]);
}

// bf16 with AVX2: each bf16 the upper half of its float, interleaved below zeros (within each
// 128-bit half: the lanes hold other elements than SSE2's, summed as well), 32 a step into four
// accumulators, for the reason above.
__attribute__((target("avx2"))) float bf16_sum_avx2(const bf16* x, std::size_t n) {
  const __m256i zero = _mm256_setzero_si256();
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    prefetch_ahead(x + i);
    for (int h = 0; h < 2; ++h) {
      const __m256i u = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i + 16 * h));
      acc[2 * h] = _mm256_add_ps(acc[2 * h], _mm256_castsi256_ps(_mm256_unpacklo_epi16(zero, u)));
      acc[2 * h + 1] = _mm256_add_ps(acc[2 * h + 1], _mm256_castsi256_ps(_mm256_unpackhi_epi16(zero, u)));
    }
  }
  alignas(32) float lane[kFloat16Lanes];
  for (int k = 0; k < 4; ++k) _mm256_store_ps(lane + 8 * k, acc[k]);
  for (std::size_t j = 0; i < n; ++i, j = (j + 1) % kFloat16Lanes) lane[j] += static_cast<float>(x[i]);
  return pairwise(lane, kFloat16Lanes);
}
#endif

}  // namespace

std::uint64_t leaf_sum(const std::uint8_t* x, std::size_t n) {
#if XREDUCE_X86
  return byte_sum(x, n, 0);
#else
  return plain_sum<std::uint64_t>(x, n);
#endif
}

std::int64_t leaf_sum(const std::int8_t* x, std::size_t n) {
#if XREDUCE_X86
  // Biased by 128 to bytes 0..255, summed, and the bias taken back.
  return static_cast<std::int64_t>(byte_sum(reinterpret_cast<const std::uint8_t*>(x), n, 0x80)) - 128 * static_cast<std::int64_t>(n);
#else
  return plain_sum<std::int64_t>(x, n);
#endif
}

std::uint64_t leaf_sum(const std::uint16_t* x, std::size_t n) {
#if XREDUCE_X86
  // Biased by -32768 to signed values, summed, and the bias taken back.
  return static_cast<std::uint64_t>(word_sum(x, n, 0x8000) + 32768 * static_cast<std::int64_t>(n));
#else
  return plain_sum<std::uint64_t>(x, n);
#endif
}

std::int64_t leaf_sum(const std::int16_t* x, std::size_t n) {
#if XREDUCE_X86
  return word_sum(reinterpret_cast<const std::uint16_t*>(x), n, 0);
#else
  return plain_sum<std::int64_t>(x, n);
#endif
}

float leaf_sum(const f16* x, std::size_t n) {
#if XREDUCE_X86
  static const bool f16c = has_f16c();
  if (f16c) return f16_sum_f16c(x, n);
#endif
  float lane[kFloat16Lanes] = {};
  for (std::size_t i = 0; i < n; ++i) lane[i % kFloat16Lanes] += static_cast<float>(x[i]);
  return pairwise(lane, kFloat16Lanes);
}

void widen(const f16* x, std::size_t n, float* out) {
#if XREDUCE_X86
  static const bool f16c = has_f16c();
  if (f16c) return widen_f16c(x, n, out);
#endif
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(x[i]);
}

void widen(const bf16* x, std::size_t n, float* out) {  // the bits shifted up: the compiler vectorises it
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(x[i]);
}

float leaf_sum(const bf16* x, std::size_t n) {
#if XREDUCE_X86
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) return bf16_sum_avx2(x, n);
#endif
  std::size_t i = 0;
  float lane[kFloat16Lanes] = {};
#if XREDUCE_X86
  // Each bf16 is the upper half of its float: interleaved below zeros, 8 become two float vectors.
  const __m128i zero = _mm_setzero_si128();
  __m128 acc[8];
  for (auto& a : acc) a = _mm_setzero_ps();
  for (; i + 32 <= n; i += 32)
    for (int h = 0; h < 4; ++h) {
      const __m128i u = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i + 8 * h));
      acc[2 * h] = _mm_add_ps(acc[2 * h], _mm_castsi128_ps(_mm_unpacklo_epi16(zero, u)));
      acc[2 * h + 1] = _mm_add_ps(acc[2 * h + 1], _mm_castsi128_ps(_mm_unpackhi_epi16(zero, u)));
    }
  for (int k = 0; k < 8; ++k) _mm_storeu_ps(lane + 4 * k, acc[k]);
#endif
  for (std::size_t j = 0; i < n; ++i, j = (j + 1) % kFloat16Lanes) lane[j] += static_cast<float>(x[i]);
  return pairwise(lane, kFloat16Lanes);
}

}  // namespace xreduce::detail
