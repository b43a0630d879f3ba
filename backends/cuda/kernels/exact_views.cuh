#pragma once
// Exact sums (Accuracy::exact) of N-D views of device data that the columns and strided kernels
// of views.cuh read (layouts middle and strided), each result rounded once on the GPU. The views
// kernels fold the threads' partials with the policy's fold, as the segments kernels fold a
// block's warps.
//
// f32, f16 and bf16 (SpanAccumulator, below): a thread adds its elements to one double while they
// span at most ExponentSpan::kSpread binades, 512 at most (every partial sum is exact there, in any
// order), as the segments' lanes do: several elements at once (a load's, or in the columns kernel a
// column's of the rows in flight: adds_together) in a tree, the span's test, one addition. A
// vector that would take the double past that closes it into the thread's closed partial, and the
// double starts again from the vector; a vector that spans more by itself goes to the thread's 16
// exponent bins in shared memory (exponent_bins.cuh: one addition an element, whatever the data;
// each accumulator's own, lane_bins), which are emptied into the closed partial every 2^14
// elements and at the end. (Each such element went to the closed partial by itself before: two
// TwoSums, about fourteen double operations. On an H100, wide data so took 2.99x the plain kernel
// in bf16 over two outer axes, 1.79x with the bins; f32 over one outer axis 1.72x, 1.19x with the
// bins; bench/results/nvidia-h100/logs/run-73ba103, run-a2a85aa.)
// Unlike the segments' lanes, a thread of the views kernels reads its elements once: it may add
// any number of them (a column of many rows). The closed partial:
//
// - f16 (ExactViewSum): the segments' FloatDigits (exact_segments.cuh), a pair of doubles and a
//   320-bit integer: each addition's error (TwoSum) to the low double, and that addition's own
//   error, where there is one, to the integer, a carry chain. On an H100, f32 so took 6.0-7.3x
//   the plain views kernels on wide and random-bit data (1.04-1.24x on uniform).
// - f32, bf16 and f64 (ExactViewPairs): the f64 segments' F64Partial (exact_segments_f64.cuh),
//   whose third double adds the magnitudes of the low double's own errors as a bound (f64's
//   threads add every element to it, with no open double). A result is written where its bound settles the
//   rounding to T; else it is listed, and exact_pairs_view_retry_kernel sums it again in
//   ExactSum's digits, a block a result, walking the view's elements. On an H100: f32 wide and
//   random-bit data 1.17-1.42x, uniform 1.05-1.06x; f64 1.00-1.04x on every distribution
//   (bench/results/nvidia-h100/views.md).

#include "exact_segments.cuh"
#include "exact_segments_f64.cuh"
#include "views.cuh"

namespace xreduce::cuda {

//! The views kernels' policy for exact sums of f16: the segments' exact policy,
//! with a result (F::finish, for FinishedResults) and its own accumulator.
template <class T>
struct ExactViewSum : ExactSegmentSum<T> {
  using result_t = T;
  static_assert(sizeof(FloatDigits) * ViewsPolicy::block <= 48 * 1024, "a block's partials in shared memory");
  __device__ static T finish(const FloatDigits& a) { return rounded_once<T>(a); }
};

//! Adds v (exact, a multiple of 2^-149 below 2^160, or an infinity or a NaN) to the partial a:
//! into the pair by TwoSum, its error into the low double, and that addition's error, if any,
//! into the digits. A special only sets its flag.
__device__ inline void add_to_pair(FloatDigits& a, double v) {
  if (!isfinite(v)) {
    a.flags |= isnan(v) ? FloatDigits::kNaN : v > 0 ? FloatDigits::kPosInf : FloatDigits::kNegInf;
    return;
  }
  const double t = a.fast + v, e = two_sum_error(a.fast, v, t);
  a.fast = t;
  if (e == 0) return;
  const double l = a.low + e, el = two_sum_error(a.low, e, l);
  a.low = l;
  if (el != 0) add_span(a, el);
}

template <class T>
struct adds_together<ExactViewSum<T>> : std::true_type {};  // a load's elements (or rows) tested at once
template <class T>
struct lane_bins<ExactViewSum<T>> : std::integral_constant<int, exact::kFieldBins> {};

//! `open` (the exact sum of some elements) into a closed partial: FloatDigits (its flags, and the
//! pair and digits), or the pairs of an F64Partial.
__device__ inline void take_open(FloatDigits& closed, double open) {
  closed.flags |= FloatDigits::kAny | (open == 0 && signbit(open) ? 0u : FloatDigits::kNotNegativeZero);
  if (open != 0) add_to_pair(closed, open);
}
__device__ inline void take_open(F64Partial& closed, double open) { closed.add(open); }
//! A bin's sum (exact; +0 where its elements cancel; NaN or an infinity where bin 15 took one)
//! into a closed partial whose elements went to the bins (past the range: not every one a zero).
__device__ inline void take_bin(FloatDigits& closed, double bin) {
  closed.flags |= FloatDigits::kAny | FloatDigits::kNotNegativeZero;
  if (bin != 0) add_to_pair(closed, bin);
}
__device__ inline void take_bin(F64Partial& closed, double bin) { closed.add(bin); }  // a +0 too: the sum is not -0 then

//! A thread's exact sum (see above) under policy F: `open`, the double of its last elements
//! while they lie in ExponentSpan's range, and `closed` (F's partial), all the others. open starts
//! at -0, so that it is -0 exactly where every element it took was -0.
template <class F>
struct SpanAccumulator {
  using T = typename F::In;
  static constexpr int kStride = ViewsPolicy::block;
  static_assert(lane_bins<F>::value == exact::kFieldBins, "the views kernels give F's accumulators their bins");
  //! The most elements the bins take before they are emptied into `closed`: 2^14 add exactly in
  //! a bin (exponent_bins.cuh).
  static constexpr int kMostBinned = 1 << 14;
  double open;
  ExponentSpan span;
  int count;  // the elements in `open`
  typename F::acc_t closed;
  // The thread's bin 0, given by use_bins: both views kernels give each accumulator its bins
  // where F has lane_bins, as every policy of this accumulator does (static_assert above).
  double* bins;
  int binned;  // the elements in the bins
  __device__ void init(const F& f) {
    open = -0.0, span.init(), count = 0;
    closed = f.identity();
    bins = nullptr, binned = 0;
  }
  //! Elements past the range go to this thread's 16 exponent bins, zeroed here (bin c at c * kStride
  //! from the thread's in `block_bins`, as the segments' lanes keep theirs): one addition in shared
  //! memory an element, where `closed` took about fourteen (a pair's TwoSum, and its error's).
  __device__ void use_bins(double* block_bins) {
    static_assert(kStride == ExactSegmentSum<float>::kBlock, "clear_lane_bins' stride");
    bins = block_bins + threadIdx.x;
    clear_lane_bins(bins);
  }
  //! Moves `open` into `closed` and starts it again.
  __device__ void close() {
    if (count == 0) return;
    take_open(closed, open);
    open = -0.0, span.init(), count = 0;
  }
  //! Moves the bins' sums into `closed` and zeroes them.
  __device__ void empty_bins() {
    if (binned == 0) return;
#pragma unroll
    for (int c = 0; c < exact::kFieldBins; ++c) {
      take_bin(closed, bins[c * kStride]);
      bins[c * kStride] = 0.0;
    }
    binned = 0;
  }
  //! Elements past the range: into the bins, one addition each.
  template <int N>
  __device__ void take_past_range(const float (&x)[N]) {
    if (binned + N > kMostBinned) empty_bins();
#pragma unroll
    for (int j = 0; j < N; ++j) exact::add_finite_to_bins<kStride>(bins, x[j]);  // an infinity or a NaN to bin 15
    binned += N;
  }
  //! N elements whose own span is `own`: to `open` where they keep it in range, else `open`
  //! closes and they start it again, or go past the range where they span too much alone. The
  //! elements' span is taken once, then merged (a maximum and a minimum), so that a vector too
  //! wide alone, as most of wide data's are, is not taken twice. (With bf16's on its words too,
  //! on an H100: bf16 over a middle axis 1.75-1.76x the plain kernel on wide data, 1.84-1.85x
  //! before; f32 over one outer axis 1.17-1.18x, 1.20-1.21x; bench/results/nvidia-h100/logs/run-ac9aa51.)
  template <int N>
  __device__ void add_spanned(const float (&x)[N], const ExponentSpan& own) {
    ExponentSpan wider;
    wider.top = max(span.top, own.top), wider.bottom = min(span.bottom, own.bottom);
    if (count + N > kSpanMostElements || !ExponentSpan::within(wider.top, wider.bottom, ExponentSpan::kSpread)) {
      close();
      if (!ExponentSpan::within(own.top, own.bottom, ExponentSpan::kSpread)) {  // too wide alone
        take_past_range(x);
        return;
      }
      wider = own;
    }
    span = wider;
    open += tree_sum(x);
    count += N;
  }
  template <int N>
  __device__ void add(const float (&x)[N]) {
    ExponentSpan own;
    own.init();
    own.take(x);
    add_spanned(x, own);
  }
  __device__ void add(const F&, typename F::Lifted e) {
    const float one[1] = {static_cast<float>(e.x)};
    add(one);
  }
  //! N elements of one result (a load's, or a column's of the rows in flight), tested together.
  //! bf16's span is taken on their bits two to a word (Bf16PackedSpan, as the segments' lanes
  //! take theirs): 18 instructions for a 16-byte load in the strided kernel's sm_90 SASS, where
  //! the floats' took 28.
  template <int N>
  __device__ void add_together(const F&, const T (&e)[N]) {
    float x[N];
#pragma unroll
    for (int j = 0; j < N; ++j) x[j] = static_cast<float>(e[j]);
    if constexpr (std::is_same_v<T, bf16> && N % 2 == 0) {
      unsigned words[N / 2];
      memcpy(words, e, sizeof(words));
      Bf16PackedSpan own;
      own.init();
      own.take_words(words);
      add_spanned(x, own.bounds());
    } else {
      add(x);
    }
  }
  __device__ typename F::acc_t value(const F&) {
    close();
    empty_bins();  // returns at once where nothing was binned
    return closed;
  }
};
template <class T>
struct Accumulator<ExactViewSum<T>> : SpanAccumulator<ExactViewSum<T>> {};

//! The views kernels' policy for exact sums of T (f64, f32, bf16) in pairs of doubles
//! (ExactPairsPolicy), each result going to PairsViewResults. f64's threads add each element to
//! their pairs; f32's and bf16's keep the span accumulator's open double, and their pairs take it
//! where it closes.
template <class T>
struct ExactViewPairs : ExactPairsPolicy<T> {
  using result_t = T;
};
template <>
struct Accumulator<ExactViewPairs<double>> : F64PartialAccumulator<ExactViewPairs<double>> {};
template <>
struct adds_together<ExactViewPairs<float>> : std::true_type {};  // a load's elements (or rows) tested at once
template <>
struct lane_bins<ExactViewPairs<float>> : std::integral_constant<int, exact::kFieldBins> {};
template <>
struct lane_bins<ExactViewPairs<bf16>> : std::integral_constant<int, exact::kFieldBins> {};
template <>
struct Accumulator<ExactViewPairs<float>> : SpanAccumulator<ExactViewPairs<float>> {};
template <>
struct adds_together<ExactViewPairs<bf16>> : std::true_type {};
template <>
struct Accumulator<ExactViewPairs<bf16>> : SpanAccumulator<ExactViewPairs<bf16>> {};

//! Where a view's results go under ExactViewPairs<T> (the views kernels' Write): result o's
//! exact sum, rounded once, into values[o] where its pairs settle it (a result of no elements:
//! +0); else o is listed (`listed`, `*listed_count` of them, in no order) for
//! exact_pairs_view_retry_kernel.
template <class T>
struct PairsViewResults {
  T* values;
  std::uint64_t per_result;  // the elements each result sums
  unsigned long long* listed_count;
  std::uint64_t* listed;
  __device__ void operator()(const F64Partial& a, std::uint64_t o) const {
    T r;
    if (per_result == 0) values[o] = T(0);
    else if (rounded_by_pairs(a, per_result, r)) values[o] = r;
    else listed[atomicAdd(listed_count, 1ull)] = o;
  }
};

//! The results of a view of T (f64, f32, bf16) listed by the views kernels (listed[0,
//! *listed_count)), a block each, round the grid: the block's lanes take the result's elements in
//! turn (element j: run j / run_length of s, element j % run_length of that run) into their digits
//! (DigitSumLane, as the flat f64 sums), carried every 2^10 of a lane's, and the block's first
//! thread rounds them into out[o]. A result of many elements is read by one block: listed results
//! are rare but for data that cancel.
template <class T>
__global__ inline __launch_bounds__(exact::kDigitBlock) void exact_pairs_view_retry_kernel(const T* __restrict__ x,
                                                                                           StridedShape s,
                                                                                           const unsigned long long* listed_count,
                                                                                           const std::uint64_t* listed, T* out) {
  extern __shared__ long long lane_digits[];  // digit d of lane t at d * exact::kDigitBlock + t
  __shared__ long long words[ExactSum::kWords];
  constexpr int kElementsPerCarry = 1 << 10;
  constexpr auto kLanes = static_cast<std::uint64_t>(exact::kDigitBlock);
  const unsigned long long count = *listed_count;
  const std::uint64_t elements = s.runs * s.run_length;  // listed only where nonzero
  for (unsigned long long i = blockIdx.x; i < count; i += gridDim.x) {
    const std::uint64_t o = listed[i];
    const T* base = x + offset_of(o, s.kept_extent, s.kept_stride, s.kept_rank);
    for (int w = threadIdx.x; w < ExactSum::kWords; w += exact::kDigitBlock) words[w] = 0;
    __syncthreads();  // words zeroed before any lane counts an infinity or a NaN in them
    exact::DigitSumLane lane(lane_digits, words);
    int since_carry = 0;
    std::uint64_t r = threadIdx.x / s.run_length, v = threadIdx.x % s.run_length;  // this lane's element: run r, element v
    const std::uint64_t runs_ahead = kLanes / s.run_length, elements_ahead = kLanes % s.run_length;
    for (std::uint64_t j = threadIdx.x; j < elements; j += kLanes) {
      const std::int64_t at = offset_of(r, s.run_extent, s.run_stride, s.run_rank) + static_cast<std::int64_t>(v) * s.run_step;
      lane.add_one(static_cast<double>(base[at]));
      if (++since_carry == kElementsPerCarry) lane.carry(), since_carry = 0;
      r += runs_ahead, v += elements_ahead;
      if (v >= s.run_length) v -= s.run_length, ++r;
    }
    lane.deposit(lane_digits);
    __syncthreads();  // every column in words
    if (threadIdx.x == 0) {
      words[ExactSum::kCount] = static_cast<long long>(elements);
      out[o] = round_exact_words_as<T>(words);
    }
    __syncthreads();  // words read, and every lane's digits, before the next result clears them
  }
}

}  // namespace xreduce::cuda
