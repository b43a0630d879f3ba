// Exact sums: the superaccumulator of xreduce/exact.hpp and the fast path in front of it.
//
// The digits are Neal's small superaccumulator (xsum): 64-bit words holding 32-bit digits, so a
// value goes in with three plain integer additions and carries wait until normalize().
//
// Adding one value at a time that way costs a few nanoseconds, which calls of fewer than 1024
// elements do (add_many); more go in runs of 2048 elements instead:
//   1. a window E, so that every |x| < 2^E: the previous run's, checked by finding the run's
//      largest magnitude in the same pass as step 2 (most data change little from run to run);
//      if it was too low, the run's own, from a pass of its own first.
//   2. every element is cut into bins, by Rump, Ogita and Oishi's error-free extraction (as
//      ReproBLAS bins values): bin b keeps a running double S_b that starts at 1.5 * 2^K_b and
//      stays inside [2^K_b, 2^(K_b+1)), so t = S_b + v rounds v to a multiple of ulp(S_b) =
//      2^(K_b - 52), t - S_b is that multiple exactly, and what it left of v (exact too) goes on
//      to the next bin. K_1 = E + 11 leaves room for the run's 2048 additions spread over the
//      lanes, and for adding the lanes; each further bin starts 42 bits lower. Nothing is left of
//      an element after the last bin if its lowest bit is at or above that bin's ulp, which the
//      run's smallest nonzero magnitude tells (found on the bits, in the same pass): the last bin
//      is then a plain addition. f32 data take one bin (an f32 has 24 bits) and f64 data two,
//      which take every element within 2^18 (f32) or 2^31 (f64) of the window's top; a run with
//      smaller elements is cut with the fewest more bins that take them (f32: 2 or 4; f64: 3),
//      and the next run starts with as many.
//   3. Each bin's lanes, minus their starting values, add exactly in double (every term is a
//      multiple of the bin's ulp below 2^(K_b+1)) and go into the digits: a few per run.
// A run that the most bins do not take (an element far smaller than the largest), or whose bins
// are not finite (a NaN or an infinity among the elements), goes into Neal's large
// superaccumulator instead (xsum's "large accumulator"): one integer chunk per sign and exponent,
// into which each element adds its mantissa, whatever the data; the chunks go into the digits
// once, at the end of the call. The fast path is vector code; a bin costs three additions per
// element, a large accumulator's element a few integer operations.

#include "xreduce/exact.hpp"

#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "exact_digits.hpp"
#include "prefetch.hpp"

// GCC warns (-Wpsabi) where a function returning a vector is called from code compiled without
// the vector's instruction set: the ABI of such a return changed in GCC 4.6. add_on_fma's calls
// are always inlined, so no call, and no ABI, remains.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace xreduce {

namespace {

constexpr std::size_t kRun = 2048;
constexpr int kHeadroom = 11;              // K_1 = E + kHeadroom
constexpr int kBinBits = 53 - kHeadroom;   // each bin starts this many bits below the last
constexpr int kLowestBin = -1022;          // 1.5 * 2^K must be a normal double
constexpr double kLargestFast = 0x1p1011;  // K_1 <= 1022, so that 1.5 * 2^K_1 is finite
// Below this window the top bin's ulp, 2^(window + kHeadroom - 52), is subnormal: the bins'
// additions take and give subnormals, which Intel cores do in microcode (f64 subnormal data took
// 15x a plain sum on a Xeon, 1.2x on an EPYC). Such runs are summed as integers instead: runs of
// subnormals by add_subnormal_run, the rest (all below 2^-981) by the large accumulator.
constexpr int kSmallestFastWindow = -1022 + 52 - kHeadroom;

// The fast path is written once over vectors of W doubles (GCC and Clang vector extensions) and
// compiled three times: W = 8 for AVX-512, 4 for AVX2, 2 for baseline x86-64 (SSE2) and other
// machines; the widest the processor has runs. Two vectors a step, so that every bin stays in a
// register.
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define XREDUCE_FAST_VARIANTS 1
#define XREDUCE_TARGET(isa) __attribute__((target(isa)))
#else
#define XREDUCE_FAST_VARIANTS 0
#define XREDUCE_TARGET(isa)
#endif
#define XREDUCE_INLINE inline __attribute__((always_inline))

// The input is asked for ahead of the reads (prefetch.hpp), a line at a time, further ahead for
// f32 than prefetch.hpp's 1 KiB: the f32 paths read 4 bytes an element at much the rate the f64
// ones read 8, so a line asked for 1 KiB ahead had half the time to arrive. On the 2-core Xeon,
// 2^27 f32 from memory, one thread: random bit patterns (the large accumulator) 1.69x a plain sum
// at 1 KiB, 1.22x at 8 KiB; wide data (four bins) 1.25x at 1 KiB, 1.06-1.12x at 4-8 KiB. f64's
// bins lost at 4 KiB (wide data 1.22x to 1.46x) and keep 1 KiB; its large accumulator, once its
// additions took four to a step, took 0.92-1.0x the time at 2 KiB (random bits and wide data,
// 2^27, one thread and two).
constexpr std::size_t kLine = 64;
template <class T>
constexpr std::size_t kFastAhead = std::is_same_v<T, float> ? 4096 : detail::kPrefetchBytes;  // the bins
template <class T>
constexpr std::size_t kLargeAhead = std::is_same_v<T, float> ? 8192 : 2048;  // the large accumulator

//! Asks for the `bytes` of input that begin kAhead after x.
template <std::size_t kAhead, class T>
XREDUCE_INLINE void prefetch_ahead(const T* x, std::size_t bytes) {
  for (std::size_t b = 0; b < bytes; b += kLine) detail::prefetch_ahead<kAhead>(reinterpret_cast<const char*>(x) + b);
}

template <int W>
struct Lanes {
  typedef double D __attribute__((vector_size(8 * W)));
  typedef std::int64_t I __attribute__((vector_size(8 * W)));
  typedef float F __attribute__((vector_size(4 * W)));
  // Unaligned views of the input, read straight into registers: a memcpy into a local array
  // of vectors went through the stack in halves, and each load then waited on two stores (2.5x
  // slower with AVX2).
  typedef double DU __attribute__((vector_size(8 * W), aligned(8), may_alias));
  typedef float FU __attribute__((vector_size(4 * W), aligned(4), may_alias));
  static constexpr int kVectors = 2;
  static constexpr std::size_t kStep = W * kVectors;
};

//! The W floats at p as doubles, in one conversion instruction. GCC 12 compiles
//! __builtin_convertvector from 8 floats to 8 doubles as two 4-wide conversions, an extract and an
//! insert, and from 4 to 4 as two 2-wide ones (f32 runs cost 1.5x f64 runs with the same bins);
//! the intrinsics cannot be inlined into these untargeted templates, an asm statement can. Clang
//! emits the one instruction itself (and rejects a 64-byte asm operand outside AVX-512 code).
//! The floats reach the asm in a register: an asm given memory might read the bins, which GCC then
//! kept in memory (see cut_into_bins).
template <int W>
XREDUCE_INLINE void widen(const float* p, typename Lanes<W>::D& out) {
  using F = typename Lanes<W>::FU;
#if XREDUCE_FAST_VARIANTS && !defined(__clang__)
  typedef float Floats __attribute__((vector_size(4 * W)));
  const Floats floats = *reinterpret_cast<const F*>(p);
  if constexpr (W == 8) {
    asm("vcvtps2pd %1, %0" : "=v"(out) : "v"(floats));
    return;
  } else if constexpr (W == 4) {
    asm("vcvtps2pd %1, %0" : "=x"(out) : "x"(floats));
    return;
  }
#endif
  out = __builtin_convertvector(*reinterpret_cast<const F*>(p), typename Lanes<W>::D);
}

//! a + b, rounded once, as a * 1 + b on the fused multiply-add units where the variant has them.
//! AMD's cores add on two pipes and multiply-add on two others, so the bins' additions, half on
//! each, run side by side: f32 runs of four bins took 0.73x the time on the 2-core EPYC. Intel's
//! cores do both on the same ports, where this should change nothing (not measured there yet).
//! It returns its vector by value (written through a reference, the sum kept the bins in memory:
//! see cut_into_bins); it is always inlined, so the ABI that -Wpsabi warns of never applies.
template <int W>
XREDUCE_INLINE typename Lanes<W>::D add_on_fma(typename Lanes<W>::D a, typename Lanes<W>::D b) {
#if XREDUCE_FAST_VARIANTS && !defined(__clang__)
  const typename Lanes<W>::D one = typename Lanes<W>::D{} + 1.0;
  if constexpr (W == 8) {
    asm("vfmadd231pd %2, %1, %0" : "+v"(b) : "v"(a), "v"(one));
    return b;
  } else if constexpr (W == 4) {
    asm("vfmadd231pd %2, %1, %0" : "+x"(b) : "x"(a), "x"(one));
    return b;
  }
#endif
  return a + b;
}

//! x[i .. i + step) as vectors of doubles, zeros past n (a zero changes no bin).
template <int W, class T>
XREDUCE_INLINE void load_step(const T* x, std::size_t i, std::size_t n, typename Lanes<W>::D (&v)[Lanes<W>::kVectors]) {
  using L = Lanes<W>;
  if (i + L::kStep <= n) {
    prefetch_ahead<kFastAhead<T>>(x + i, L::kStep * sizeof(T));
    for (int h = 0; h < L::kVectors; ++h) {
      if constexpr (std::is_same_v<T, double>) v[h] = *reinterpret_cast<const typename L::DU*>(x + i + h * W);
      else widen<W>(x + i + h * W, v[h]);
    }
    return;
  }
  for (int h = 0; h < L::kVectors; ++h) v[h] = typename L::D{};
  for (std::size_t j = 0; i + j < n; ++j) v[j / W][j % W] = static_cast<double>(x[i + j]);
}

//! The bits of an element of T, and what they say of where its lowest bit can be.
template <class T>
struct BitsOf {
  using Bits = std::conditional_t<std::is_same_v<T, float>, std::uint32_t, std::uint64_t>;
  static constexpr Bits kMagnitude = std::numeric_limits<Bits>::max() >> 1;
  static constexpr int kMantissaBits = std::numeric_limits<T>::digits - 1;
  //! The weight of the lowest bit of the smallest nonzero element, from its magnitude's bits minus
  //! one (the unsigned minimum over a run, under which a zero wraps to the top; all ones: no nonzero
  //! element, INT_MAX). An element whose field is f is a multiple of 2^(max(f, 1) - bias - mantissa
  //! bits).
  static int lowest_bit(Bits smallest_minus_one) {
    if (smallest_minus_one == std::numeric_limits<Bits>::max()) return INT_MAX;
    const int field = static_cast<int>((smallest_minus_one + 1) >> kMantissaBits);
    return std::max(field, 1) - (std::numeric_limits<T>::max_exponent - 1 + kMantissaBits);
  }
};

//! What the fast path needs to know of a run before cutting it.
struct Magnitudes {
  double largest = 0;         //!< the largest magnitude (NaNs passed over)
  int lowest_bit = INT_MAX;   //!< the smallest weight of a nonzero element's lowest bit (INT_MAX: none)
};

//! The magnitudes of x[0..n), in T's own vectors: no conversion.
template <int W, class T>
XREDUCE_INLINE Magnitudes magnitudes_of(const T* x, std::size_t n) {
  using Bits = typename BitsOf<T>::Bits;
  constexpr int kPer = 8 * W / static_cast<int>(sizeof(T));  // elements of T in one vector
  typedef T V __attribute__((vector_size(8 * W)));
  typedef T VU __attribute__((vector_size(8 * W), aligned(sizeof(T)), may_alias));  // see Lanes
  typedef Bits B __attribute__((vector_size(8 * W)));
  constexpr Bits kMagnitude = BitsOf<T>::kMagnitude;
  V top[2] = {};
  B low[2] = {~B{}, ~B{}};  // the smallest nonzero magnitude's bits minus one (a zero wraps to the top)
  std::size_t i = 0;
  for (; i + 2 * kPer <= n; i += 2 * kPer) {
    prefetch_ahead<kFastAhead<T>>(x + i, 2 * kPer * sizeof(T));
    const V v[2] = {*reinterpret_cast<const VU*>(x + i), *reinterpret_cast<const VU*>(x + i + kPer)};
    for (int h = 0; h < 2; ++h) {
      const B bits = reinterpret_cast<B>(v[h]) & kMagnitude;
      const auto a = reinterpret_cast<V>(bits);
      top[h] = a > top[h] ? a : top[h];  // maxps/maxpd: a NaN in a is passed over
      low[h] = bits - 1 < low[h] ? bits - 1 : low[h];
    }
  }
  T largest = 0;
  Bits lowest = std::numeric_limits<Bits>::max();
  for (; i < n; ++i) {
    const T a = std::fabs(x[i]);
    largest = a > largest ? a : largest;
    lowest = std::min(lowest, static_cast<Bits>(std::bit_cast<Bits>(a) - 1));
  }
  for (int h = 0; h < 2; ++h)
    for (int j = 0; j < kPer; ++j) {
      largest = std::max(largest, top[h][j]);
      lowest = std::min(lowest, low[h][j]);
    }
  return {largest, BitsOf<T>::lowest_bit(lowest)};
}

//! The window of a run whose largest magnitude is `largest` (0 < largest < kLargestFast):
//! every element is below 2^window.
inline int window_of(double largest) { return std::ilogb(largest) + 1; }

//! K_b, the exponent of bin b (from 0) under 2^window: kBinBits below the one before, down to
//! kLowestBin (see the top of the file).
inline int bin_exponent(int window, int b) { return std::max(window + kHeadroom - b * kBinBits, kLowestBin); }

//! Whether kB bins under 2^window cut an element whose lowest bit weighs 2^lowest_bit without
//! remainder: that bit is at or above the last bin's ulp, 2^(K_last - 52).
inline bool bins_take(int window, int kB, int lowest_bit) { return lowest_bit >= bin_exponent(window, kB - 1) - 52; }

//! Cuts x[0..n) into kB bins under 2^window and adds them to s; false, adding nothing, if a bin
//! is not finite. Every |x| must be below 2^window and every element's lowest bit at or above the
//! last bin's ulp, so that nothing is left of it there (the last bin is a plain addition): the
//! caller has checked both (magnitudes_of, bins_take), or, with `largest`, the window and count
//! are a guess from the run before and are checked here, in the same pass, which also finds the
//! largest magnitude (a NaN counts as larger than any); false if they do not hold.
//!
//! The checks are made on the elements' bits, in T's own vectors: the largest and the smallest
//! nonzero magnitude (an unsigned max, and an unsigned min of the bits minus one, under which a
//! zero wraps to the top), two or three instructions a vector, where comparing and cutting in
//! doubles took five.
template <int W, int kB, class T>
XREDUCE_INLINE bool cut_into_bins(ExactSum& s, const T* x, std::size_t n, int window, double* largest = nullptr) {
  using L = Lanes<W>;
  using D = typename L::D;
  using Bits = typename BitsOf<T>::Bits;
  typedef Bits B __attribute__((vector_size(8 * W)));
  typedef Bits BU __attribute__((vector_size(8 * W), aligned(sizeof(T)), may_alias));  // see Lanes
  constexpr int kPer = 8 * W / static_cast<int>(sizeof(T));  // elements in one B
  constexpr int kBitVectors = static_cast<int>(L::kStep) / kPer;
  constexpr Bits kMagnitude = BitsOf<T>::kMagnitude;
  double start[kB];
  D S[kB][L::kVectors];
  // S and each step's v live in registers only if nothing indexes them with a variable and no
  // asm is given memory that might hold them; otherwise GCC keeps them in memory and stores them
  // at every step (f32 runs of four bins: ten 64-byte stores a step, 1.09x the time). Hence S's
  // own loop, with no call in it, which unrolls; a v for each step (the partial step's is written
  // a lane at a time); and widen's register operand.
  for (int b = 0; b < kB; ++b) start[b] = std::ldexp(1.5, bin_exponent(window, b));
  for (int b = 0; b < kB; ++b)
    for (int h = 0; h < L::kVectors; ++h) S[b][h] = D{} + start[b];
  B top = {}, low = ~B{};  // the largest magnitude's bits; the smallest nonzero one's, minus one
  auto see = [&](B a) __attribute__((always_inline)) {
    if (!largest) return;  // checked by the caller
    top = a > top ? a : top;
    low = a - 1 < low ? a - 1 : low;
  };
  // The additions into the bins go to the FMA units (add_on_fma), the cuts' subtractions to the adders.
  auto cut = [&](D (&v)[L::kVectors]) __attribute__((always_inline)) {
    for (int b = 0; b + 1 < kB; ++b)
      for (int h = 0; h < L::kVectors; ++h) {
        const D t = add_on_fma<W>(v[h], S[b][h]);
        v[h] -= t - S[b][h];
        S[b][h] = t;
      }
    for (int h = 0; h < L::kVectors; ++h) S[kB - 1][h] = add_on_fma<W>(v[h], S[kB - 1][h]);
  };
  std::size_t i = 0;
  for (; i + L::kStep <= n; i += L::kStep) {
    D v[L::kVectors];
    load_step<W>(x, i, n, v);
    // f64's bits are the vectors just loaded; f32's are read again, whole (the doubles are not
    // its bits), a line where the conversions read two halves.
    if constexpr (std::is_same_v<T, double>)
      for (int h = 0; h < L::kVectors; ++h) see(reinterpret_cast<B>(v[h]) & kMagnitude);
    else
      for (int g = 0; g < kBitVectors; ++g) {
        const B bits = *reinterpret_cast<const BU*>(x + i + g * kPer);
        see(bits & kMagnitude);
      }
    cut(v);
  }
  if (i < n) {  // the last, partial step: its bits one at a time, each in every lane
    for (std::size_t j = i; j < n; ++j) {
      Bits a;
      std::memcpy(&a, x + j, sizeof a);
      see(B{} + (a & kMagnitude));
    }
    D v[L::kVectors];
    load_step<W>(x, i, n, v);
    cut(v);
  }
  if (largest) {
    Bits top_bits = 0, low_bits = std::numeric_limits<Bits>::max();
    for (int j = 0; j < kPer; ++j) {
      top_bits = std::max(top_bits, top[j]);
      low_bits = std::min(low_bits, low[j]);
    }
    *largest = static_cast<double>(std::bit_cast<T>(top_bits));
    // A guess too low puts every bound off; a run of zeros goes where their signs are looked at.
    if (!(*largest > 0 && *largest < std::ldexp(1.0, window))) return false;
    if (!bins_take(window, kB, BitsOf<T>::lowest_bit(low_bits))) return false;
  }
  double total[kB];
  for (int b = 0; b < kB; ++b) {
    total[b] = 0;
    for (int h = 0; h < L::kVectors; ++h)
      for (int j = 0; j < W; ++j) total[b] += S[b][h][j] - start[b];  // exact: see the top of the file
    if (!std::isfinite(total[b])) return false;
  }
  for (int b = 0; b < kB; ++b)
    if (total[b] != 0) detail::add_value(s, total[b]);  // (a zero would count as an element not -0)
  return true;
}

//! Adds (negative ? -v : v) * 2^exponent to the digits: each 32-bit limb of v, shifted, into the
//! two digits it spans (an exponent of at most 972, an f64 mantissa's lowest bit, reaches the top
//! digit at most).
inline void add_wide(ExactSum& s, std::uint64_t v, int exponent, bool negative) {
  const int p = exponent - ExactSum::kLowestExponent;
  const int k = p >> 5, r = p & 31;
  for (int j = 0; v != 0; ++j, v >>= 32) {
    const auto t = static_cast<std::int64_t>((v & 0xffffffff) << r);  // below 2^63
    s.words[k + j] += negative ? -(t & 0xffffffff) : t & 0xffffffff;
    s.words[k + j + 1] += negative ? -(t >> 32) : t >> 32;
  }
}

//! Neal's large superaccumulator for one call's slow runs: a 64-bit chunk per sign and exponent
//! field of T (512 for f32, 4096 for f64), holding the sum of the mantissas (implicit bit
//! included) of the elements with that sign and exponent. An element costs a load, a few bit
//! operations and one addition to its chunk, the same for any data. f32 mantissas are below
//! 2^24, so a chunk holds 2^40 of them (add_runs flushes long before); f32's chunks come in four
//! copies, taken in turn, so that a run of equal exponents does not wait on one chunk. f64
//! mantissas are below 2^53: a chunk that reaches 2^63 (after 2^10 of them at least) goes into
//! the digits there and starts again from zero, a branch almost never taken (128-bit chunks,
//! twice the memory and an add with carry, were half as fast on random bit patterns). NaNs and
//! infinities are counted apart, at the end of each add().
template <class T>
class LargeAccumulator {
  static constexpr bool kF32 = std::is_same_v<T, float>;
  using Bits = std::conditional_t<kF32, std::uint32_t, std::uint64_t>;
  using Chunk = std::uint64_t;
  static constexpr int kMantissaBits = std::numeric_limits<T>::digits - 1;  // stored: 23 or 52
  static constexpr int kFieldBits = static_cast<int>(8 * sizeof(T)) - 1 - kMantissaBits;
  static constexpr int kChunks = 1 << (kFieldBits + 1);  // sign and exponent field
  static constexpr int kCopies = kF32 ? 4 : 1;
  static constexpr Bits kSpecialField = (Bits{1} << kFieldBits) - 1;
  static constexpr Bits kNegativeZeroBits = Bits{1} << (8 * sizeof(T) - 1);

 public:
  //! Adds x[0..n) to the chunks, and its NaNs, infinities and elements other than -0 to the counts.
  //! Inlined into add_runs, so that its split is compiled for the vector width that runs.
  XREDUCE_INLINE void add(ExactSum& s, const T* x, std::size_t n) {
    if (chunks_.empty()) chunks_.assign(std::size_t{kChunks} * kCopies, Chunk{0});
    Chunk* chunks = chunks_.data();
    bool special = false;  // a NaN or infinity's chunk filled up
    auto add_to_chunk = [&](std::size_t c, Bits mantissa) __attribute__((always_inline)) {
      Chunk sum = mantissa;
      if (add_and_store(chunks, c, sum) && !kF32) [[unlikely]] {
        special |= empty_full_chunk(s, static_cast<int>(c), sum);
        chunks[c] = 0;
      }
    };
    // Each block is split first, a line of x at a time in vectors (the next line asked for as it
    // starts, see kLargeAhead): every element's chunk and mantissa, written to the block's
    // arrays; then the chunks take them one by one. Split and added element by element, the bit
    // operations took most of the time (1.25 against 0.99 ns an f64 element, from memory).
    constexpr std::size_t kPerLine = kLine / sizeof(T), kBlock = 256;
    typedef Bits Line __attribute__((vector_size(kLine)));
    typedef Bits LineU __attribute__((vector_size(kLine), aligned(sizeof(T)), may_alias));
    Line lane_copy;  // the copy each element's chunk is in: its index modulo kCopies
    for (std::size_t k = 0; k < kPerLine; ++k) lane_copy[k] = static_cast<Bits>(k % kCopies);
    // An element's mantissa, the implicit bit set where its field is not 0 (field + all ones
    // carries into the bit above): for bits and for lines of them alike (written through a
    // reference: a line returned by value would change the ABI of the baseline build).
    auto mantissa = [](const auto& b, auto& out) __attribute__((always_inline)) {
      const auto field = (b >> kMantissaBits) & kSpecialField;
      out = (b & ((Bits{1} << kMantissaBits) - 1)) | (((field + kSpecialField) >> kFieldBits) << kMantissaBits);
    };
    Line not_negative_zero = {};
    alignas(kLine) Bits chunk_of[kBlock], mantissa_of[kBlock];
    std::size_t i = 0;
    for (; i + kBlock <= n; i += kBlock) {
      for (std::size_t j = 0; j < kBlock; j += kPerLine) {
        prefetch_ahead<kLargeAhead<T>>(x + i + j, kLine);
        const Line b = *reinterpret_cast<const LineU*>(x + i + j);
        mantissa(b, *reinterpret_cast<Line*>(mantissa_of + j));
        *reinterpret_cast<Line*>(chunk_of + j) = (b >> kMantissaBits) * kCopies + lane_copy;
        not_negative_zero |= b ^ kNegativeZeroBits;
      }
      // Four at a time, written out: GCC unrolled the f64 loop neither with the full chunk's
      // handling inline nor for a pragma; unrolled, with that handling out of line, f64 runs of
      // random bits and wide data took 0.69-0.82x the time on one thread of the 2-core Xeon
      // (0.92-0.95x on both, where the reads bound them more).
      for (std::size_t k = 0; k < kBlock; k += 4) {
        add_to_chunk(chunk_of[k], mantissa_of[k]);
        add_to_chunk(chunk_of[k + 1], mantissa_of[k + 1]);
        add_to_chunk(chunk_of[k + 2], mantissa_of[k + 2]);
        add_to_chunk(chunk_of[k + 3], mantissa_of[k + 3]);
      }
    }
    Bits any_not_negative_zero = 0;
    for (std::size_t k = 0; k < kPerLine; ++k) any_not_negative_zero |= not_negative_zero[k];
    for (; i < n; ++i) {  // the last block's rest (kCopies divides kBlock: the copies stay in turn)
      Bits b;
      std::memcpy(&b, x + i, sizeof b);
      Bits m;
      mantissa(b, m);
      any_not_negative_zero |= b ^ kNegativeZeroBits;
      add_to_chunk((b >> kMantissaBits) * kCopies + i % kCopies, m);
    }
    if (any_not_negative_zero != 0) s.words[ExactSum::kNotNegativeZero] += 1;
    // NaNs and infinities went into the two chunks of the all-ones field like any element (a test
    // for them in the loop cost a quarter of its speed); each added 2^kMantissaBits at least, so
    // those chunks are nonzero if one passed. They are counted here and the chunks emptied.
    for (const Bits sign : {Bits{0}, Bits{1}})
      for (int k = 0; k < kCopies; ++k) {
        Chunk& chunk = chunks[((sign << kFieldBits) | kSpecialField) * kCopies + k];
        special = special || chunk != 0;
        chunk = 0;
      }
    if (special)
      for (std::size_t i = 0; i < n; ++i)
        if (!std::isfinite(x[i])) {
          const double v = static_cast<double>(x[i]);
          s.words[v != v ? ExactSum::kNaN : v > 0 ? ExactSum::kPosInf : ExactSum::kNegInf] += 1;
        }
  }

  //! Adds the chunks to the digits (which take up to 2^(kFieldBits + 5) additions of less than
  //! 2^33 each: normalize first) and empties them.
  void flush(ExactSum& s) {
    if (chunks_.empty()) return;  // no slow run since the last flush
    for (int c = 0; c < kChunks; ++c) {
      Chunk total = 0;
      for (int k = 0; k < kCopies; ++k) total += chunks_[std::size_t(c) * kCopies + k];
      if (total != 0) to_digits(s, c, total);
    }
    chunks_.clear();
  }

 private:
  //! chunks[c] + sum, stored to chunks[c] and left in sum; whether its top bit is set. On x86-64
  //! one load-and-add and one store, the branch taken on the addition's own sign flag: GCC formed
  //! the address apart (a lea) for the load and the store, and f64 runs of random bits and wide
  //! data took 1.03-1.06x as long.
  static XREDUCE_INLINE bool add_and_store(Chunk* chunks, std::size_t c, Chunk& sum) {
#if defined(__GNUC__) && defined(__x86_64__)
    bool top;
    asm volatile("add (%[chunks],%[c],8), %[sum]\n\tmov %[sum], (%[chunks],%[c],8)"
                 : [sum] "+r"(sum), "=@ccs"(top)
                 : [chunks] "r"(chunks), [c] "r"(c)
                 : "memory");
    return top;
#else
    sum += chunks[c];
    chunks[c] = sum;
    return (sum >> 63) != 0;
#endif
  }

  //! A chunk that reached 2^63 (f64): adds it to the digits, or says that it is a NaN's or an
  //! infinity's. Out of line, so that the loop around the rare call stays small enough to unroll.
  [[gnu::noinline, gnu::cold]] static bool empty_full_chunk(ExactSum& s, int c, Chunk sum) {
    if ((c & kSpecialField) == kSpecialField) return true;
    to_digits(s, c, sum);
    return false;
  }

  //! Adds chunk c's `total` of mantissas to the digits.
  static void to_digits(ExactSum& s, int c, Chunk total) {
    const int field = c & static_cast<int>(kSpecialField);
    const bool negative = (c >> kFieldBits) != 0;
    // The weight of a mantissa's lowest bit: subnormals (field 0) share field 1's.
    const int exponent = std::max(field, 1) - std::numeric_limits<T>::max_exponent + 1 - kMantissaBits;
    add_wide(s, total, exponent, negative);
  }

  std::vector<Chunk> chunks_;  // made at the first slow run of a call
};

constexpr int kNoWindow = INT_MIN;

//! The bin counts of the fast path, fewest first: most data need one (f32) or two (f64), when the
//! run's magnitudes span less than 2^18 or 2^31; one more bin takes 42 bits more of span. Four
//! take f32 data spanning up to 2^120 (exponents of random sign in 2^-60..2^60); seven would take
//! any finite f32 run, but cost more than the large accumulator (random bit patterns, 2^26 f32 on
//! the 2-core Xeon: 5.0 GB/s against 5.6).
template <class T>
constexpr int kBinCounts[] = {2, 3};
template <>
constexpr int kBinCounts<float>[] = {1, 2, 4};
// The four bins take a run whose smallest element's lowest bit, 2^(lo - 150) for binade lo, lies
// at or above the last bin's ulp, 2^(K_1 - 3 kBinBits - 52), where K_1 = hi - 126 + kHeadroom for
// a largest element of binade hi: hi - lo <= 3 kBinBits + 52 - kHeadroom - (150 - 126).
static_assert(3 * kBinBits + 52 - kHeadroom - (150 - 126) == static_cast<int>(detail::kMostBinadesOfFastRuns),
              "the binades that F32Digits' callers leave to the fast path");
// The same for f64's three bins: lowest bit 2^(lo - 1075), K_1 = hi - 1022 + kHeadroom.
static_assert(2 * kBinBits + 52 - kHeadroom - (1075 - 1022) == static_cast<int>(detail::kMostBinadesOfFastF64Runs),
              "the binades that f64 rows leave to the fast path");

//! cut_into_bins with kBinCounts<T>[level] bins.
template <int W, class T, int kLevel = 0>
XREDUCE_INLINE bool cut_at_level(int level, ExactSum& s, const T* x, std::size_t n, int window, double* largest = nullptr) {
  constexpr auto& counts = kBinCounts<T>;
  if constexpr (kLevel < static_cast<int>(std::size(counts))) {
    if (level == kLevel) return cut_into_bins<W, counts[kLevel]>(s, x, n, window, largest);
    return cut_at_level<W, T, kLevel + 1>(level, s, x, n, window, largest);
  }
  return false;
}

//! Adds a run of f64 subnormals and zeros, each its significand times 2^-1074: an integer sum of
//! 52-bit significands (below 2^63 for a run), vector code with no floating point; false, adding
//! nothing, if an element is not a subnormal or a zero (a NaN, which magnitudes_of passes over).
inline bool add_subnormal_run(ExactSum& s, const double* x, std::size_t n) {
  constexpr std::int64_t kSignificand = (std::int64_t{1} << 52) - 1;
  std::int64_t sum = 0, fields = 0;
  for (std::size_t i = 0; i < n; ++i) {
    std::int64_t b;
    std::memcpy(&b, x + i, sizeof b);
    fields |= b & ~(kSignificand | std::numeric_limits<std::int64_t>::min());
    sum += b < 0 ? -(b & kSignificand) : b & kSignificand;
  }
  if (fields != 0) return false;
  detail::add_scaled(s, sum, -1074);
  s.words[ExactSum::kNotNegativeZero] += 1;  // the caller saw a nonzero element
  return true;
}

//! The fast path over one run (n <= kRun); false if the run must go to the large accumulator.
//! `window` carries the previous run's window and `level` its bin count (kBinCounts<T>[level]):
//! most data change little from run to run, so the run is first cut under them in one pass,
//! which finds its largest magnitude as it goes (reading the run twice, once for the largest and
//! once to cut it, took half the time); if that window was too low, or left something, a pass
//! over the run's magnitudes gives its own window and the fewest bins that take its smallest
//! element, or sends it to the large accumulator without cutting it at all.
template <int W, class T>
XREDUCE_INLINE bool add_run_fast(ExactSum& s, const T* x, std::size_t n, int& window, int& level) {
  constexpr int kLevels = static_cast<int>(std::size(kBinCounts<T>));
  if (window != kNoWindow) {
    double seen = 0;
    if (cut_at_level<W>(level, s, x, n, window, &seen)) {
      s.words[ExactSum::kNotNegativeZero] += 1;  // a nonzero element
      window = window_of(seen);
      return true;
    }
  }
  const Magnitudes m = magnitudes_of<W>(x, n);
  const double largest = m.largest;
  window = largest > 0 && largest < kLargestFast ? window_of(largest) : kNoWindow;
  if (largest == 0) {  // zeros, or NaNs (which the slow path counts)
    bool other_than_negative_zero = false;
    for (std::size_t i = 0; i < n; ++i) {
      if (x[i] != x[i]) return false;
      other_than_negative_zero |= std::bit_cast<std::uint64_t>(static_cast<double>(x[i])) != detail::kNegativeZero;
    }
    if (other_than_negative_zero) s.words[ExactSum::kNotNegativeZero] += 1;
    return true;
  }
  if (window == kNoWindow || window < kSmallestFastWindow) {
    window = kNoWindow;
    if constexpr (std::is_same_v<T, double>)
      if (largest < std::numeric_limits<double>::min()) return add_subnormal_run(s, x, n);
    return false;
  }
  for (level = 0; level < kLevels; ++level)
    if (bins_take(window, kBinCounts<T>[level], m.lowest_bit)) {
      if (cut_at_level<W>(level, s, x, n, window)) {
        s.words[ExactSum::kNotNegativeZero] += 1;  // a nonzero element
        return true;
      }
      break;  // a NaN or an infinity, for the slow path
    }
  level = 0;
  window = kNoWindow;  // the next try starts from the magnitudes: this run's window left a remainder
  return false;
}

//! Adds x[0..n) run by run, with vectors of W doubles.
template <int W, class T>
XREDUCE_INLINE void add_runs(ExactSum& s, const T* x, std::size_t n) {
  // A run adds at most kRun values to a digit; normalize before 2^29 of them.
  constexpr std::size_t kRunsPerNormalize = std::size_t{1} << 18;
  // An f32 chunk holds 2^40 mantissas: flushed well before (f64's go into the digits as they fill).
  constexpr std::size_t kRunsPerFlush = std::size_t{1} << 26;
  // After a run the fast path could not take, the next kSlowRuns go straight to the large
  // accumulator (wide data stay wide: trying each run first cost more than the accumulator);
  // the run after them tries the fast path again, and each try that fails in a row doubles the
  // runs it skips, up to kMostSlowRuns (2M elements), so that data wide throughout pay for a try
  // every few million elements rather than every 32K.
  constexpr int kSlowRuns = 15, kMostSlowRuns = 1023;
  // bf16 spans f32's exponents: each run is widened to f32 (exact: the bits shifted up 16) and
  // goes on as f32's runs do, one call's state kept across them (widened and added 2048 at a time
  // through add(const float*), every run started the window, the bins and the accumulator's
  // chunks anew, and random bit patterns took 7.8x a plain bf16 sum).
  using Element = std::conditional_t<std::is_same_v<T, bf16>, float, T>;
  [[maybe_unused]] alignas(64) float widened[std::is_same_v<T, bf16> ? kRun : 1];
  std::size_t runs = 0;
  int window = kNoWindow, straight_to_large = 0, slow_runs = kSlowRuns;
  int level = 0;
  LargeAccumulator<Element> large;
  for (std::size_t i = 0; i < n; i += kRun) {
    const std::size_t len = std::min(kRun, n - i);
    const Element* run;
    if constexpr (std::is_same_v<T, bf16>) {
      for (std::size_t k = 0; k < len; ++k) widened[k] = std::bit_cast<float>(std::uint32_t{x[i + k].bits} << 16);
      run = widened;
    } else {
      run = x + i;
    }
    if (straight_to_large > 0) {
      --straight_to_large;
      large.add(s, run, len);
    } else if (!add_run_fast<W>(s, run, len, window, level)) {
      straight_to_large = slow_runs;
      slow_runs = std::min(2 * slow_runs + 1, kMostSlowRuns);
      large.add(s, run, len);
    } else {
      slow_runs = kSlowRuns;
    }
    if (++runs % kRunsPerNormalize == 0) s.normalize();
    if (runs % kRunsPerFlush == 0) {
      s.normalize();
      large.flush(s);
    }
  }
  s.normalize();
  large.flush(s);
}

template <class T>
XREDUCE_TARGET("avx512f") void add_runs_avx512(ExactSum& s, const T* x, std::size_t n) { add_runs<8>(s, x, n); }
template <class T>
XREDUCE_TARGET("avx2,fma") void add_runs_avx2(ExactSum& s, const T* x, std::size_t n) { add_runs<4>(s, x, n); }
template <class T>
void add_runs_baseline(ExactSum& s, const T* x, std::size_t n) { add_runs<2>(s, x, n); }

//! Fewer elements than this go in one at a time (add_value: a few integer additions each, about
//! 3 ns). The runs cost about 2.5 us a call whatever n is (a window, the bins, the large
//! accumulator's 4 KB of chunks cleared) and under 1 ns an element: rows of random-bit f32 took
//! 560 ns a row of 4 through them, 2.6 us a row of 256 (0.95 us one at a time), and rows of 1024
//! alike either way.
constexpr std::size_t kFewestForRuns = 1024;

template <class T>
void add_many(ExactSum& s, const T* x, std::size_t n, int width) {
  if (n < kFewestForRuns) {
    for (std::size_t i = 0; i < n; ++i) detail::add_value(s, static_cast<double>(x[i]));
    s.words[ExactSum::kCount] += static_cast<std::int64_t>(n);
    s.normalize();
    return;
  }
#if XREDUCE_FAST_VARIANTS
  if (width == 8) add_runs_avx512(s, x, n);
  else if (width == 4) add_runs_avx2(s, x, n);
  else add_runs_baseline(s, x, n);
#else
  (void)width;
  add_runs_baseline(s, x, n);
#endif
  s.words[ExactSum::kCount] += static_cast<std::int64_t>(n);
  s.normalize();
}

}  // namespace

namespace detail {
int exact_vector_width() {
#if XREDUCE_FAST_VARIANTS
  static const int width = __builtin_cpu_supports("avx512f")                                  ? 8
                           : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? 4
                                                                                             : 2;
  return width;
#else
  return 2;
#endif
}
void add_with_width(ExactSum& s, const float* x, std::size_t n, int width) { add_many(s, x, n, std::min(width, exact_vector_width())); }
void add_with_width(ExactSum& s, const double* x, std::size_t n, int width) { add_many(s, x, n, std::min(width, exact_vector_width())); }
void add_with_width(ExactSum& s, const bf16* x, std::size_t n, int width) { add_many(s, x, n, std::min(width, exact_vector_width())); }
}  // namespace detail

void ExactSum::add(const float* x, std::size_t n) { add_many(*this, x, n, detail::exact_vector_width()); }
void ExactSum::add(const double* x, std::size_t n) { add_many(*this, x, n, detail::exact_vector_width()); }

void ExactSum::add(const f16* x, std::size_t n) {
  // Every finite f16 is a multiple of 2^-24 below 2^16: as an integer count of 2^-24 it has at most
  // 40 bits, so runs of 2^22 of them add exactly in one int64, with no data-dependent path (the
  // loop vectorises). Infinities and NaNs are counted apart, as add_value does.
  constexpr std::size_t kRun = std::size_t{1} << 22;
  for (std::size_t start = 0; start < n; start += kRun) {
    const std::size_t len = std::min(kRun, n - start);
    std::int64_t fixed = 0, nans = 0, pos_inf = 0, neg_inf = 0, not_negative_zero = 0;
    for (std::size_t i = 0; i < len; ++i) {
      const std::uint32_t u = x[start + i].bits, field = (u >> 10) & 31, mant = u & 0x3ff;
      const bool negative = (u & 0x8000) != 0, special = field == 31;
      const std::uint32_t shift = field - (field != 0);  // subnormals: mant * 2^-24 is mant
      const std::int64_t k = special ? 0 : static_cast<std::int64_t>(mant | (field != 0 ? 0x400u : 0u)) << shift;
      fixed += negative ? -k : k;
      nans += special && mant != 0;
      pos_inf += special && mant == 0 && !negative;
      neg_inf += special && mant == 0 && negative;
      not_negative_zero += u != 0x8000;
    }
    detail::add_scaled(*this, fixed, -24);
    words[kNaN] += nans;
    words[kPosInf] += pos_inf;
    words[kNegInf] += neg_inf;
    words[kNotNegativeZero] += not_negative_zero;
    words[kCount] += static_cast<std::int64_t>(len);
    normalize();
  }
}

void ExactSum::add(const bf16* x, std::size_t n) { add_many(*this, x, n, detail::exact_vector_width()); }

namespace detail {

template <class T, int kCount>
T round_digits(std::int64_t* d, int lowest_exponent, bool negative_zero) {
  using Limits = std::numeric_limits<T>;
  // q * 2^e (exact in double for every T here: q has at most 54 bits) as T, signed; for the 16-bit
  // floats the conversion from double is exact or overflows to infinity.
  auto value = [](std::uint64_t q, int e, bool negative) {
    if constexpr (is_float16_v<T> || std::is_same_v<T, float>) {
      // In double first: q * 2^e is exact there (e is at least these types' smallest subnormal
      // exponent; above 2^1023 the result is an infinity in T anyway), then exact or infinite in
      // T. 2^e from its bits: through ldexp, a call into the math library, rows of 4 random-bit
      // f32 in F32Digits took 1.1x the time.
      const double v = static_cast<double>(q) * std::bit_cast<double>(static_cast<std::uint64_t>(std::min(e, 1023) + 1023) << 52);
      return T(negative ? -v : v);
    } else {
      const T r = std::ldexp(static_cast<T>(q), e);  // +-inf past the largest finite T
      return negative ? -r : r;
    }
  };
  // A few digits (F32Digits') go through straight code: every carry, the sign and which digits
  // are nonzero without a branch on the data (with ExactSum's branches, rows of 4 random-bit f32
  // took 1.15x the time: the signs and the digits in use are at random). ExactSum's 67 skip the
  // digits that are zero.
  constexpr bool kFew = kCount <= 16;
  bool negative;
  std::uint32_t nonzero = 0;  // kFew: bit i set where digit i is nonzero
  if constexpr (kFew) {
    for (int i = 0; i + 1 < kCount; ++i) {
      d[i + 1] += d[i] >> 32;
      d[i] &= 0xffffffff;
    }
    // The magnitude, as two's complement negates: every bit flipped, then 1 added, where negative.
    const std::int64_t sign = d[kCount - 1] >> 63;
    negative = sign != 0;
    std::int64_t carry = sign & 1;
    for (int i = 0; i + 1 < kCount; ++i) {
      const std::int64_t x = (d[i] ^ (sign & 0xffffffff)) + carry;
      d[i] = x & 0xffffffff, carry = x >> 32;
    }
    d[kCount - 1] = (d[kCount - 1] ^ sign) + carry;
    for (int i = 0; i < kCount; ++i) nonzero |= static_cast<std::uint32_t>(d[i] != 0) << i;
  } else {
    normalize_digits(d, kCount);
    negative = d[kCount - 1] < 0;
    if (negative) {
      // The magnitude, -(S + d_top 2^(32 top)) with S the lower digits' value, 0 <= S < 2^(32 top):
      // (-d_top - 1) 2^(32 top) + (2^(32 top) - S), whose lower digits are 2^32 - d at the lowest
      // nonzero one, 2^32 - 1 - d above it and 0 below; no carry to propagate (negated digit by
      // digit and normalized again, the carries ran through every digit a second time).
      int low = 0;
      while (low < kCount - 1 && d[low] == 0) ++low;
      if (low == kCount - 1) {
        d[low] = -d[low];
      } else {
        d[low] = (std::int64_t{1} << 32) - d[low];
        for (int i = low + 1; i < kCount - 1; ++i) d[i] = 0xffffffff - d[i];
        d[kCount - 1] = -d[kCount - 1] - 1;
      }
    }
  }
  int top = kCount - 1;
  if constexpr (kFew) top = nonzero ? 31 - std::countl_zero(nonzero) : -1;
  else
    while (top >= 0 && d[top] == 0) --top;
  if (top < 0) return value(0, 0, negative_zero);

  // Bit positions count from 2^lowest_exponent. Keep Limits::digits bits from the top one, or
  // fewer where they would fall below the smallest subnormal, and round on the rest.
  const int msb = top * 32 + 63 - std::countl_zero(static_cast<std::uint64_t>(d[top]));
  const int lowest = (Limits::min_exponent - Limits::digits) - lowest_exponent;  // the smallest subnormal's bit
  const int lsb = std::max(msb - (Limits::digits - 1), lowest);
  // The magnitude's bits from `pos` up, of which at most 55 can be set (modulo 2^64, each term
  // is exact: the true value is below 2^64).
  auto window = [&](int pos) {
    const int k = pos / 32, r = pos % 32;
    std::uint64_t w = static_cast<std::uint64_t>(d[k]) >> r;
    if (k + 1 < kCount) w += static_cast<std::uint64_t>(d[k + 1]) << (32 - r);
    if (k + 2 < kCount && r > 0) w += static_cast<std::uint64_t>(d[k + 2]) << (64 - r);
    return w;
  };
  std::uint64_t q = window(lsb);
  const int below = lsb - 1;  // the rounding bit; every bit under it is sticky
  const bool round_bit = (window(below) & 1) != 0;
  bool sticky = (d[below / 32] & ((std::int64_t{1} << (below % 32)) - 1)) != 0;
  if constexpr (kFew) sticky |= (nonzero & ((std::uint32_t{1} << (below / 32)) - 1)) != 0;
  else
    for (int i = 0; i < below / 32 && !sticky; ++i) sticky = d[i] != 0;
  if (round_bit && (sticky || (q & 1) != 0)) ++q;  // may carry to 2^digits: still exact in T
  return value(q, lsb + lowest_exponent, negative);
}

template float round_digits<float, F32Digits::kCount>(std::int64_t*, int, bool);
template bf16 round_digits<bf16, F32Digits::kCount>(std::int64_t*, int, bool);  // bf16 rows widened to f32

}  // namespace detail

template <class T>
T ExactSum::round() const {
  using Limits = std::numeric_limits<T>;
  if (words[kNaN] != 0 || (words[kPosInf] != 0 && words[kNegInf] != 0)) return Limits::quiet_NaN();
  if (words[kPosInf] != 0) return Limits::infinity();
  if (words[kNegInf] != 0) return T(-static_cast<double>(Limits::infinity()));
  ExactSum m = *this;
  return detail::round_digits<T, kDigits>(m.words, kLowestExponent, words[kCount] > 0 && words[kNotNegativeZero] == 0);
}

template float ExactSum::round<float>() const;
template double ExactSum::round<double>() const;
template f16 ExactSum::round<f16>() const;
template bf16 ExactSum::round<bf16>() const;

}  // namespace xreduce
