#pragma once
// The load side of the modern kernels (shuffle, single_pass): 16-byte loads where the data allows,
// several independent loads in flight per thread, a grid-stride loop over a persistent grid.
// Tuning is data: one policy struct, as CUB's agents have.

#include "common.cuh"

namespace xreduce::cuda {

struct VectorPolicy {
  static constexpr int block = 256;  //!< threads per block
  static constexpr int unroll = 4;   //!< 16-byte loads in flight per thread, each into its own accumulator
};

//! Whether a thread keeps one accumulator of policy F, adding its `unroll` loads to it in turn,
//! instead of one a load. Several accumulators give independent chains of additions, but where
//! one is large or its fold costly they cost more than they save. In the flat kernels, four of
//! the moments' (var) or of several ops' (StatsAcc, with two indices) took 104-109 registers a
//! thread on sm_90, a quarter of an SM's threads resident, and logsumexp's 64 (one: 64 and 44);
//! on an H200, one took var from 1.17x a plain sum to 1.04x, logsumexp from 1.27x to 1.14x and
//! several ops of bf16 from 1.35x to 1.10x (bench/results/nvidia-h200/statistics-device.md,
//! dtypes-device.md). In the segments kernels, on an H200, the variance of f32 rows of 256 read
//! at 38% of the read probe with one, 21% with four; rows of 16384 at 58% against 37.5%
//! (bench/results/nvidia-h200/views-device-statistics.md, logs/views-device-statistics-bfef844.md).
//! A thread's vectors still come to its one accumulator in increasing index order, so that a
//! strict comparison keeps the first of equal extremes.
template <class F>
struct one_accumulator : std::false_type {};
template <class T>
struct one_accumulator<StatsOp<T>> : std::true_type {};

//! Elements per 16-byte load: 16 for 1-byte types, 8 for 2-byte ones (16-bit floats too), 4 for
//! 4-byte ones, 2 for 8-byte ones; 1 for anything else (value-index pairs, stats).
template <class T>
constexpr int vector_width() {
  if constexpr ((std::is_arithmetic_v<T> || is_float16_v<T>) && sizeof(T) <= 8) return 16 / sizeof(T);
  else return 1;
}

//! One load: 16 bytes of a type that has several to a vector; else one element, laid out as T
//! (a partial of 24 bytes, such as the moments, must not be padded to 32, or an array of them
//! would be read at the wrong stride).
template <class T>
struct alignas(vector_width<T>() > 1 ? 16 : alignof(T)) Vec {
  T e[vector_width<T>()];
};

//! Elements before the first 16-byte boundary (the data is aligned to its element size).
template <class T>
std::size_t unaligned_head(const T* x, std::size_t n) {
  if constexpr (vector_width<T>() == 1) {
    return 0;
  } else {
    const std::size_t misalign = reinterpret_cast<std::uintptr_t>(x) % 16;
    return std::min(n, misalign == 0 ? 0 : (16 - misalign) / sizeof(T));
  }
}

//! The sum of one loaded vector in a 32-bit type, added to the wide accumulator once instead of
//! element by element: in float for f32 (three additions, then one conversion instead of four)
//! and for f16 and bf16 (seven), a bound of 7 eps(f32) per group, far inside the stated one; in
//! 32-bit integers for 8- and 16-bit integers and bools, exact (16 * 255 and 8 * 65535 fit),
//! bytes four at a time with dp4a. Without this, a byte costs a conversion and a 64-bit addition,
//! and a u8 sum is bound by the arithmetic, not by the memory. An accumulation strategy of this
//! module, not a rule of the op.
template <class In>
inline constexpr bool has_vector_sum =
    std::is_same_v<In, float> || is_float16_v<In> || (std::is_integral_v<In> && sizeof(In) <= 2);

template <class In>
__device__ inline auto vector_sum(const Vec<In>& r) {
  if constexpr (std::is_same_v<In, float>) {
    float s = r.e[0];
#pragma unroll
    for (int j = 1; j < 4; ++j) s += r.e[j];
    return s;
  } else {
    unsigned w[4];  // the vector as 32-bit words: registers, no memory
    memcpy(w, &r, sizeof w);
    if constexpr (sizeof(In) == 1 && std::is_signed_v<In>) {
      int s = 0;
#pragma unroll
      for (int k = 0; k < 4; ++k) s = __dp4a(static_cast<int>(w[k]), 0x01010101, s);
      return s;
    } else if constexpr (sizeof(In) == 1) {  // u8 and bool (0 or 1)
      unsigned s = 0;
#pragma unroll
      for (int k = 0; k < 4; ++k) s = __dp4a(w[k], 0x01010101u, s);
      return s;
    } else if constexpr (std::is_same_v<In, std::int16_t>) {
      int s = 0;
#pragma unroll
      for (int k = 0; k < 4; ++k) s += static_cast<std::int16_t>(w[k] & 0xffffu) + (static_cast<int>(w[k]) >> 16);
      return s;
    } else if constexpr (std::is_same_v<In, std::uint16_t>) {
      unsigned s = 0;
#pragma unroll
      for (int k = 0; k < 4; ++k) s += (w[k] & 0xffffu) + (w[k] >> 16);
      return s;
    } else {  // f16, bf16: each half of a word converted exactly
      float s = 0;
#pragma unroll
      for (int k = 0; k < 4; ++k)
        s += static_cast<float>(In::from_bits(static_cast<std::uint16_t>(w[k]))) +
             static_cast<float>(In::from_bits(static_cast<std::uint16_t>(w[k] >> 16)));
      return s;
    }
  }
}

//! Whether the accumulator of F takes vector_sum's group: sums of types that have one.
template <class F>
inline constexpr bool groups_vectors = false;
template <class T>
inline constexpr bool groups_vectors<SumOp<T>> = has_vector_sum<T>;

//! Adds the elements of one loaded vector (whose first element has index `first`).
template <class F, class In>
__device__ inline void add_vector(Accumulator<F>& acc, const F& f, const Vec<In>& r, std::size_t first) {
  constexpr int kVec = vector_width<In>();
  if constexpr (groups_vectors<F>) {
    // A signed group widens with its sign: the u64 accumulator of i8/i16 sums is two's complement.
    acc.add(f, static_cast<typename F::acc_t>(vector_sum(r)));
  } else {
#pragma unroll
    for (int j = 0; j < kVec; ++j) acc.add(f, f.lift(r.e[j], first + j));
  }
}

//! The first element of a vector equal to v, and its index, by selects (an indexed register
//! array would go to local memory).
template <class T>
__device__ inline ArgPair<T> first_equal(const Vec<T>& r, T v, std::size_t first) {
  constexpr int kVec = vector_width<T>();
  ArgPair<T> p{r.e[kVec - 1], first + kVec - 1};
#pragma unroll
  for (int j = kVec - 2; j >= 0; --j)
    if (r.e[j] == v) p = {r.e[j], first + j};
  return p;
}

//! Several ops (StatsOp), per loaded vector: its sum and sum of squares (grouped in float for
//! f32, f16 and bf16, as SumOp groups; for 8- and 16-bit integers the sum as vector_sum, the
//! squares in the wide type), and its extremes compared once with the running ones; an extreme's
//! index is worked out only when a vector holds a new one. Per element, the general path (a
//! StatsAcc lifted and combined) cost twice the loads' time on an H200. The callers' loops bring
//! an accumulator its vectors in increasing index order, so a strict comparison keeps the first
//! of equal extremes; the lone elements before and after the vectors take the general path,
//! which breaks ties by index. So does a vector holding a NaN (its sum is NaN), which follows
//! the NaN rule there.
template <class T>
__device__ inline void add_vector(Accumulator<StatsOp<T>>& acc, const StatsOp<T>& f, const Vec<T>& r, std::size_t first) {
  constexpr int kVec = vector_width<T>();
  constexpr index_t none = ~index_t{0};  // the identity's index: an equal element still replaces it
  // A vector holding a NaN (its sum is one) goes element by element, where the NaN rule is.
  auto took_nan = [&](auto sum) {
    if (sum == sum) return false;
#pragma unroll
    for (int j = 0; j < kVec; ++j) acc.add(f, f.lift(r.e[j], first + j));
    return true;
  };
  if constexpr (std::is_same_v<T, float> || is_float16_v<T>) {
    // Grouped in float, as SumOp groups (a 16-bit float's x * x is exact in float); each element
    // converted once.
    float v[kVec];
#pragma unroll
    for (int j = 0; j < kVec; ++j) v[j] = static_cast<float>(r.e[j]);
    float sum = 0, squares = 0;
#pragma unroll
    for (int j = 0; j < kVec; ++j) sum += v[j], squares = fmaf(v[j], v[j], squares);
    if (took_nan(sum)) return;
    acc.sum.add(SumOp<T>{}, static_cast<double>(sum));
    acc.squares.add(SumOp<T>{}, static_cast<double>(squares));
    if constexpr (is_float16_v<T>) {
      // The vector's extremes found in float (no NaN here: the sum would be one) and compared
      // with the running ones in float, which orders as T does, instead of converting at each
      // comparison of T.
      float lo = v[0], hi = v[0];
#pragma unroll
      for (int j = 1; j < kVec; ++j) lo = fminf(lo, v[j]), hi = fmaxf(hi, v[j]);
      auto first_at = [&](float x) {
        ArgPair<T> p{r.e[kVec - 1], first + kVec - 1};
#pragma unroll
        for (int j = kVec - 2; j >= 0; --j)
          if (v[j] == x) p = {r.e[j], first + j};
        return p;
      };
      const float run_lo = static_cast<float>(acc.lo.value), run_hi = static_cast<float>(acc.hi.value);
      if (lo < run_lo || (lo == run_lo && acc.lo.index == none)) acc.lo = first_at(lo);
      if (run_hi < hi || (hi == run_hi && acc.hi.index == none)) acc.hi = first_at(hi);
      return;
    }
  } else {
    if constexpr (std::is_floating_point_v<T>) {
      T sum = r.e[0];
#pragma unroll
      for (int j = 1; j < kVec; ++j) sum += r.e[j];
      if (took_nan(sum)) return;
    }
    if constexpr (has_vector_sum<T>) acc.sum.add(SumOp<T>{}, static_cast<wide_t<T>>(vector_sum(r)));
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      const wide_t<T> w = static_cast<wide_t<T>>(r.e[j]);
      if constexpr (!has_vector_sum<T>) acc.sum.add(SumOp<T>{}, w);
      acc.squares.add(SumOp<T>{}, w * w);
    }
  }
  T lo = r.e[0], hi = r.e[0];
#pragma unroll
  for (int j = 1; j < kVec; ++j) lo = r.e[j] < lo ? r.e[j] : lo, hi = hi < r.e[j] ? r.e[j] : hi;
  if (lo < acc.lo.value || (lo == acc.lo.value && acc.lo.index == none)) acc.lo = first_equal(r, lo, first);
  if (acc.hi.value < hi || (hi == acc.hi.value && acc.hi.index == none)) acc.hi = first_equal(r, hi, first);
}

//! This thread's partial over x[0..n): `head` elements one by one, then 16-byte vectors in tiles
//! of block * unroll vectors (a block reads a tile as `unroll` contiguous, coalesced rows, each
//! thread holding `unroll` loads in flight; tiles go round the blocks), then the leftover
//! vectors and the tail. Contiguous tiles keep DRAM pages open and spread the work within one
//! tile per block, as CUB's agents do.
template <class P, class F>
__device__ inline typename F::acc_t thread_partial(const typename F::In* __restrict__ x, std::size_t n, std::size_t head,
                                                   const F& f) {
  using In = typename F::In;
  constexpr int kVec = vector_width<In>();
  const std::size_t g = blockIdx.x * static_cast<std::size_t>(P::block) + threadIdx.x;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * P::block;
  const std::size_t nvec = (n - head) / kVec;
  const Vec<In>* body = reinterpret_cast<const Vec<In>*>(x + head);
  constexpr std::size_t kTile = static_cast<std::size_t>(P::block) * P::unroll;
  const std::size_t full_tiles = nvec / kTile;

  constexpr int kAccumulators = one_accumulator<F>::value ? 1 : P::unroll;
  Accumulator<F> acc[kAccumulators];
#pragma unroll
  for (int u = 0; u < kAccumulators; ++u) acc[u].init(f);
  for (std::size_t t = blockIdx.x; t < full_tiles; t += gridDim.x) {
    const std::size_t v = t * kTile + threadIdx.x;
    Vec<In> r[P::unroll];
#pragma unroll
    for (int u = 0; u < P::unroll; ++u) r[u] = body[v + u * P::block];
#pragma unroll
    for (int u = 0; u < P::unroll; ++u) add_vector(acc[u % kAccumulators], f, r[u], head + (v + u * P::block) * kVec);
  }
  for (std::size_t v = full_tiles * kTile + g; v < nvec; v += stride) add_vector(acc[0], f, body[v], head + v * kVec);
  // At most kVec - 1 elements before the vectors and after them.
  const std::size_t tail = head + nvec * kVec;
  if (g < head) acc[0].add(f, f.lift(x[g], g));
  if (tail + g < n) acc[0].add(f, f.lift(x[tail + g], tail + g));

  typename F::acc_t a = acc[0].value(f);
#pragma unroll
  for (int u = 1; u < kAccumulators; ++u) a = f(a, acc[u].value(f));
  return a;
}

//! The blocks of kBlock threads with kDynamic bytes of dynamic shared memory each that `kernel`
//! keeps on an SM at once (at least 1). Past the default 48 KiB, a kernel must be allowed them on
//! each device it runs on: on every call, before its launch.
template <auto kernel, int kBlock, std::size_t kDynamic>
int blocks_per_sm() {
  if constexpr (kDynamic > 48 * 1024)
    XREDUCE_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kDynamic)));
  static const int per_sm = [] {
    int b = 0;
    XREDUCE_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, kernel, kBlock, kDynamic));
    return b > 0 ? b : 1;
  }();
  return per_sm;
}

//! Blocks for n elements: enough for every thread to have `unroll` vectors, at most the number
//! that fit on the GPU at once (from the occupancy calculator, for this very kernel).
template <class P, class F, class Kernel>
std::size_t persistent_blocks(Kernel kernel, std::size_t n, const Workspace& ws) {
  static const int per_sm = [&] {
    int b = 0;
    XREDUCE_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, kernel, P::block, 0));
    return b > 0 ? b : 1;
  }();
  const std::size_t per_block = std::size_t(P::block) * P::unroll * vector_width<typename F::In>();
  return std::max<std::size_t>(1, std::min<std::size_t>(static_cast<std::size_t>(per_sm) * ws.sm_count, ceil_div(n, per_block)));
}

}  // namespace xreduce::cuda
