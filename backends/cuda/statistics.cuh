#pragma once
// The statistics (mean, var, std, the norms, logsumexp, count_nonzero, any, all and the nan* ops)
// of device data, with cuda.shuffle's kernels over the op table's policies
// (xreduce/backend/ops.hpp). A flat array: one reduction of the op's partial (kernels/shuffle.cuh),
// finished on the host with the request's correction (in f64, unrounded, where wide results are
// asked; var and std hand on their Moments too, for a combine of parts). A view (kernels/views.cuh)
// or rows and segments (kernels/segmented.cuh): each result's partial, then finish_statistics_kernel
// on the GPU. The partials of host data's chunks (flat, or records' columns), and of
// cuda.multi_gpu's parts, are folded on the host by StatisticPartials. Included by
// statistics_<dtype>.cu, which instantiate it for the floats.
//
// Ops that differ only in their finish share a kernel: var and std (and nanmean, nanvar and
// nanstd) reduce one Moments partial, and any and all are read off count_nonzero's count; the
// mean is a sum in double, divided by n.

#include <cstring>

#include "kernels/shuffle.cuh"
#include "kernels/views.cuh"
#include "segments.cuh"
#include "techniques.hpp"

namespace xreduce::cuda {

//! The moments of one thread: runs of 256 elements (up to 256 + a loaded vector's, add_vector
//! below) each summed around its first element in double, and the runs folded into the thread's partial by Chan's update (MomentsOp), as the CPU
//! backends' moments leaf does, so the stated bound of var is the same. Lifting and folding each
//! element alone (the general Accumulator) costs two double divisions an element. An infinite
//! element, or a partial of more than one element, goes to the update, where the infinities'
//! rules are.
template <class T, Op kOp>
struct Accumulator<ops::MomentsOp<T, kOp>> {
  using F = ops::MomentsOp<T, kOp>;
  static constexpr int kRun = 256;
  ops::Moments done;
  double shift, s, q;
  int run;
  __device__ void init(const F&) {
    done = F::identity();
    shift = s = q = 0;
    run = 0;
  }
  __device__ void add(const F& f, const ops::Moments& m) {
    if (m.n == 0) return;  // a skipped NaN
    if (m.n != 1 || !isfinite(m.sum)) {
      flush(f);
      done = f(done, m);
      return;
    }
    if (run == 0) shift = m.sum;
    const double d = m.sum - shift;
    s += d;
    q = fma(d, d, q);
    if (++run >= kRun) flush(f);
  }
  __device__ void flush(const F& f) {
    if (run == 0) return;
    const double n = run;
    done = f(done, ops::Moments{n, fma(n, shift, s), q - s * (s / n)});
    s = q = 0;
    run = 0;
  }
  __device__ ops::Moments value(const F& f) const {
    Accumulator copy = *this;
    copy.flush(f);
    return copy.done;
  }
};

//! The moments of one loaded vector (var, std and their NaN-keeping kin): its deviations from the
//! run's shift summed in registers and added to the run once, with one test of the run's length
//! a vector instead of one an element (per element, var took 1.48x a plain sum's time on an
//! H200). A run ends at the first vector that takes it to kRun elements or more. A vector holding
//! an infinity or a NaN goes element by element, where their rules are; so do the NaN-skipping
//! ops, which drop NaN elements one by one.
template <class T, Op kOp>
__device__ inline void add_vector(Accumulator<ops::MomentsOp<T, kOp>>& acc, const ops::MomentsOp<T, kOp>& f, const Vec<T>& r,
                                  std::size_t first) {
  constexpr int kVec = vector_width<T>();
  double x[kVec];
  bool finite = true;
#pragma unroll
  for (int j = 0; j < kVec; ++j) x[j] = static_cast<double>(r.e[j]), finite = finite && isfinite(x[j]);
  if (skips_nan(kOp) || !finite) {
#pragma unroll
    for (int j = 0; j < kVec; ++j) acc.add(f, f.lift(r.e[j], first + j));
    return;
  }
  if (acc.run == 0) acc.shift = x[0];
  double s = 0, q = 0;
#pragma unroll
  for (int j = 0; j < kVec; ++j) {
    const double d = x[j] - acc.shift;
    s += d;
    q = fma(d, d, q);
  }
  acc.s += s;
  acc.q += q;
  acc.run += kVec;
  if (acc.run >= acc.kRun) acc.flush(f);
}

//! Several ops with the moments (StatsMomentsOp): StatsOp's accumulator and var's side by side,
//! each loaded vector given to both by their own vector paths.
template <class T>
struct Accumulator<StatsMomentsOp<T>> {
  using F = StatsMomentsOp<T>;
  Accumulator<typename F::Stats> stats;
  Accumulator<typename F::Moments> moments;
  __device__ void init(const F&) { stats.init({}), moments.init({}); }
  __device__ void add(const F&, const typename F::acc_t& x) { stats.add({}, x.stats), moments.add({}, x.moments); }
  __device__ typename F::acc_t value(const F&) const { return {stats.value({}), moments.value({})}; }
};
template <class T>
__device__ inline void add_vector(Accumulator<StatsMomentsOp<T>>& acc, const StatsMomentsOp<T>&, const Vec<T>& r, std::size_t first) {
  add_vector(acc.stats, typename StatsMomentsOp<T>::Stats{}, r, first);
  add_vector(acc.moments, typename StatsMomentsOp<T>::Moments{}, r, first);
}
template <class T>
struct one_accumulator<StatsMomentsOp<T>> : std::true_type {};

//! The moments' fold (Chan's update) takes three divisions, logsumexp's two exponentials, and
//! their accumulators hold 56 and 16 bytes with more registers around them: a thread keeps one
//! (one_accumulator, kernels/vector_loads.cuh).
template <class T, Op kOp>
struct one_accumulator<ops::MomentsOp<T, kOp>> : std::true_type {};
template <class T>
struct one_accumulator<ops::LogSumExpOp<T>> : std::true_type {};

//! exp(d) for d <= 0, the difference of two elements: f64's in double; f32's and narrower in
//! float (expf, within 2 ulp; a double exp costs the kernel four times a plain sum's time on an
//! H200), with the part of d that the float lost put back by one fused multiply-add, so that only
//! expf's own error is left: within 2 eps(f32) of exp(d) relative. With add_vector's float
//! groups (1.5 eps(f32) more), the sum is within 4 eps(f32) relative, log(sum) as much absolute:
//! the stated bound's 8 eps(f32) leaves twice that (docs/semantics.md, the reference's slack).
template <class T>
__device__ inline double exp_of_difference(double d) {
  if constexpr (std::is_same_v<T, double>) {
    return exp(d);
  } else {
    const float near = static_cast<float>(d);
    const double e = static_cast<double>(expf(near));
    return fma(e, d - static_cast<double>(near), e);  // e * exp(d - near), to first order
  }
}

//! logsumexp of one thread: the running maximum and the sum of exp(x - max) in double, one
//! exponential an element (the policy's fold of two partials takes two). Infinities and NaN, and
//! partials of more than one element, go to the policy's fold, where their rules are.
template <class T>
struct Accumulator<ops::LogSumExpOp<T>> {
  using F = ops::LogSumExpOp<T>;
  ops::LogSumExp v;
  __device__ void init(const F& f) { v = f.identity(); }
  __device__ void add(const F& f, const ops::LogSumExp& x) {
    if (x.sum != 1 || !isfinite(x.max) || !isfinite(v.max)) {
      if (v.sum == 0 && x.sum == 1 && isfinite(x.max)) v = x;  // the first element
      else v = f(v, x);
      return;
    }
    if (x.max > v.max) {
      v.sum = fma(v.sum, exp_of_difference<T>(v.max - x.max), 1.0);
      v.max = x.max;
    } else {
      v.sum += exp_of_difference<T>(x.max - v.max);
    }
  }
  __device__ ops::LogSumExp value(const F&) const { return v; }
};

//! exp(x - m) in float, for elements x <= m of f32 and narrower: the difference's rounding error
//! (TwoSum) put back by one fused multiply-add, so that only expf's 2 ulp are left.
__device__ inline float exp_below(float x, float m) {
  const float d = x - m, back = d - x;
  const float lost = (x - (d - back)) + (-m - back);
  const float e = expf(d);
  return fmaf(e, lost, e);
}

//! logsumexp of one loaded vector of f32 or narrower: its largest element raises the running
//! maximum first (one rescaling a vector, not an element), then its exponentials are taken in
//! float and summed in float in groups of four (three additions: 1.5 eps(f32) of the group), each
//! group converted to double once and added to the running sum. Per element, the conversions
//! between float and double (three an element) bound the kernel at 2.15x a plain sum's time on an
//! H200. A vector holding an infinity or a NaN, and the thread's first, go element by element.
template <class T>
__device__ inline void add_vector(Accumulator<ops::LogSumExpOp<T>>& acc, const ops::LogSumExpOp<T>& f, const Vec<T>& r,
                                  std::size_t first) {
  constexpr int kVec = vector_width<T>();
  if constexpr (std::is_same_v<T, double>) {
#pragma unroll
    for (int j = 0; j < kVec; ++j) acc.add(f, f.lift(r.e[j], first + j));
  } else {
    static_assert(kVec % 4 == 0, "groups of four");
    float x[kVec];
    bool finite = isfinite(acc.v.max);
    float top = -INFINITY;
#pragma unroll
    for (int j = 0; j < kVec; ++j) x[j] = static_cast<float>(r.e[j]), finite = finite && isfinite(x[j]), top = fmaxf(top, x[j]);
    if (!finite) {
#pragma unroll
      for (int j = 0; j < kVec; ++j) acc.add(f, f.lift(r.e[j], first + j));
      return;
    }
    if (top > acc.v.max) {
      acc.v.sum *= exp_of_difference<T>(acc.v.max - top);
      acc.v.max = top;
    }
    const float m = static_cast<float>(acc.v.max);  // an element's value: exact in float
    double added = 0;
#pragma unroll
    for (int g = 0; g < kVec; g += 4) {
      float group = 0;
#pragma unroll
      for (int j = g; j < g + 4; ++j) group += exp_below(x[j], m);
      added += static_cast<double>(group);
    }
    acc.v.sum += added;
  }
}

//! norm2 of f32 and narrower floats: every square of such an element is a normal double or
//! zero, far from overflow (Norm2Op's medium sum takes them all), so a thread adds the squares
//! with one fused multiply-add an element instead of sorting each into three sums.
template <class T>
struct Accumulator<ops::Norm2Op<T>> {
  using F = ops::Norm2Op<T>;
  static constexpr bool kMediumOnly = sizeof(T) <= 4;
  ops::ScaledSquares v;
  __device__ void init(const F& f) { v = f.identity(); }
  __device__ void add(const F& f, const ops::ScaledSquares& x) {
    if constexpr (kMediumOnly) v.medium += x.medium + x.small + x.big;  // the lifted element's one square
    else v = f(v, x);
  }
  __device__ ops::ScaledSquares value(const F&) const { return v; }
};
template <class T>
__device__ inline void add_vector(Accumulator<ops::Norm2Op<T>>& acc, const ops::Norm2Op<T>& f, const Vec<T>& r, std::size_t first) {
  constexpr int kVec = vector_width<T>();
#pragma unroll
  for (int j = 0; j < kVec; ++j) {
    if constexpr (Accumulator<ops::Norm2Op<T>>::kMediumOnly) {
      const double x = static_cast<double>(static_cast<float>(r.e[j]));
      acc.v.medium = fma(x, x, acc.v.medium);
    } else {
      acc.add(f, f.lift(r.e[j], first + j));
    }
  }
}

//! mean (not nanmean): the sum in double and n; the moments' kernel would also fold each run's
//! squared deviations, which the mean does not need.
template <class T>
struct DoubleSum {
  using In = T;
  using acc_t = double;
  static constexpr Op op = Op::mean;
  __host__ __device__ static constexpr double identity() { return 0; }
  __host__ __device__ static double lift(T x, index_t = 0) { return static_cast<double>(x); }
  __host__ __device__ constexpr double operator()(double a, double b) const { return a + b; }
};
//! A thread's sum for the mean, compensated as f64 sums are (Neumaier): a thread adds a number of
//! elements that grows with n, and the mean's bound (64 eps(f64) max|x| beyond the last rounding)
//! must not.
template <class T>
struct Accumulator<DoubleSum<T>> {
  Accumulator<SumOp<double>> sum;
  __device__ void init(const DoubleSum<T>&) { sum.init(SumOp<double>{}); }
  __device__ void add(const DoubleSum<T>&, double x) { sum.add(SumOp<double>{}, x); }
  __device__ double value(const DoubleSum<T>&) const { return sum.value(SumOp<double>{}); }
};

//! The policy whose kernel computes the partial of op F: F itself, but for the ops that share one.
template <class F>
struct kernel_policy {
  using type = F;
};
template <class T, Op kOp>
struct kernel_policy<ops::MomentsOp<T, kOp>> {
  using type = std::conditional_t<kOp == Op::mean, DoubleSum<T>, ops::MomentsOp<T, skips_nan(kOp) ? Op::nanvar : Op::var>>;
};
template <class T, Op kOp>
struct kernel_policy<ops::NonzeroOp<T, kOp>> {
  using type = ops::NonzeroOp<T, Op::count_nonzero>;
};

//! Whether op F's result is read off its kernel's count (any and all of count_nonzero's).
template <class F, class K>
inline constexpr bool finished_from_count = !std::is_same_v<K, F> && std::is_same_v<typename F::acc_t, bool>;

//! The result of statistic F (of type Out: F's own, or double for a wide one) from the partial of
//! its kernel policy K over n elements: the mean from the sum and n, any and all from the count,
//! the others from F's own finish with the correction. The host finishes a flat array's partial
//! with it (StatisticPartials::result), finish_statistics_kernel each result of a view.
template <class F, class K, class Out = typename F::result_t>
__host__ __device__ inline Out finish_statistic(const typename K::acc_t& a, std::uint64_t n, ops::FinishArgs args) {
  if constexpr (std::is_same_v<K, DoubleSum<typename F::In>>)
    return ops::finish_as<Out, F>(ops::Moments{static_cast<double>(n), a, 0}, args);
  else if constexpr (finished_from_count<F, K>)
    return static_cast<Out>(F::finish(F::op == Op::any ? a != 0 : static_cast<std::uint64_t>(a) == n));
  else return ops::finish_as<Out, F>(a, args);
}

//! The elements result o reduces: the same for every result of a view; a segment's own length.
struct EqualCounts {
  std::uint64_t count;
  __device__ std::uint64_t operator()(std::uint64_t) const { return count; }
};
struct SegmentCounts {
  SegmentBounds b;
  __device__ std::uint64_t operator()(std::uint64_t s) const {
    const std::uint64_t a = b.begin(s), e = b.begin(s + 1);
    return e < a ? 0 : e - a;  // bad offsets: reported after the launch, the results not used
  }
};

//! Result o of statistic F from its partial (of kernel policy K) over counts(o) elements, with
//! its index for nanargmin and nanargmax (no_element for an all-NaN slice). The views and the
//! segments kernels leave the partials, per policy K: the ops that share one (var and std; the
//! mean, var and std that skip NaN; count_nonzero, any and all) share those kernels, and only
//! this small one is F's own.
template <class F, class K, class Counts>
__global__ void finish_statistics_kernel(const typename K::acc_t* __restrict__ partials, std::uint64_t results, Counts counts,
                                         ops::FinishArgs args, typename F::result_t* __restrict__ out,
                                         std::uint64_t* __restrict__ out_index) {
  for (std::uint64_t o = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; o < results; o += std::uint64_t{gridDim.x} * blockDim.x) {
    out[o] = finish_statistic<F, K>(partials[o], counts(o), args);
    if constexpr (ops::has_index<F>) out_index[o] = partials[o].index;
  }
}

//! Enqueues finish_statistics_kernel over `results` partials.
template <class F, class K, class Counts>
void enqueue_finish(const typename K::acc_t* partials, std::uint64_t results, Counts counts, double correction, void* out,
                    std::uint64_t* out_index, Workspace& ws) {
  constexpr int kBlock = 256;
  const auto blocks = static_cast<unsigned>(std::min<std::uint64_t>(ceil_div(results, std::uint64_t{kBlock}), 8u * ws.sm_count));
  finish_statistics_kernel<F, K><<<blocks, kBlock, 0, ws.stream>>>(partials, results, counts, ops::FinishArgs{correction},
                                                                   static_cast<typename F::result_t*>(out), out_index);
  XREDUCE_CUDA(cudaGetLastError());
}

template <class T>
void enqueue_statistic_typed(const T* x, std::size_t n, Op op, Workspace& ws) {
  ops::visit_statistic<T>(op, [&](auto f) {
    using K = typename kernel_policy<decltype(f)>::type;
    static_assert(sizeof(typename K::acc_t) <= Workspace::kResultBytes, "a partial fits the workspace's result");
    Shuffle::run(x, n, K{}, VectorPolicy::block, ws);
  });
}

template <class T>
void enqueue_stats_moments_typed(const T* x, std::size_t n, Workspace& ws) {
  static_assert(sizeof(StatsMomentsAcc<T>) <= Workspace::kResultBytes, "the accumulator fits the workspace's result");
  Shuffle::run(x, n, StatsMomentsOp<T>{}, VectorPolicy::block, ws);
}

template <class T>
void enqueue_view_statistic_typed(const T* x, const Request& c, void* out, std::uint64_t* out_index, Workspace& ws) {
  std::uint64_t count = 1;  // elements each result reduces: the product of the reduced extents
  for (std::size_t k = 0; k < c.view.rank; ++k)
    if (c.axes.empty() || c.axes.contains(k)) count *= static_cast<std::uint64_t>(c.view.shape[k]);
  const auto results = static_cast<std::uint64_t>(result_count(c));
  if (results == 0) return;
  ops::visit_statistic<T>(c.op, [&](auto f) {
    using F = decltype(f);
    using K = typename kernel_policy<F>::type;
    using A = typename K::acc_t;
    auto* partials = static_cast<A*>(ws.result_partials.reserve(results * sizeof(A), "partials of a view's statistic"));
    enqueue_view_with(x, c, K{}, PartialResults<A>{partials}, ws);
    enqueue_finish<F, K>(partials, results, EqualCounts{count}, c.correction, out, out_index, ws);
  });
}

template <class T>
void enqueue_segment_statistic_typed(const T* x, const SegmentBounds& b, Op op, double correction, void* out,
                                     std::uint64_t* out_index, Workspace& ws, unsigned long long** bad) {
  ops::visit_statistic<T>(op, [&](auto f) {
    using F = decltype(f);
    using K = typename kernel_policy<F>::type;
    using A = typename K::acc_t;
    // Each segment's partial whole (nanargmin's and nanargmax's with its index in the segment),
    // then finished with its length.
    auto* partials = static_cast<A*>(ws.result_partials.reserve(b.count * sizeof(A) + 16, "partials of segments' statistic"));
    shuffle_segments<StatsSegmentPolicy>(x, b, K{}, partials, nullptr, ws, bad);  // the heavy partials' registers
    if (b.count > 0) enqueue_finish<F, K>(partials, b.count, SegmentCounts{b}, correction, out, out_index, ws);
  });
}

template <class T>
void enqueue_column_statistic_typed(const T* x, std::size_t rows, std::size_t width, Op op, void* partials, Workspace& ws) {
  ops::visit_statistic<T>(op, [&](auto f) {
    using K = typename kernel_policy<decltype(f)>::type;
    using A = typename K::acc_t;
    Views::columns(x, 1, rows, width, K{}, PartialResults<A>{static_cast<A*>(partials)}, ws);
  });
}

template <class T>
StatisticPartials statistic_partials_typed(Op op) {
  return ops::visit_statistic<T>(op, [](auto f) {
    using F = decltype(f);
    using K = typename kernel_policy<F>::type;
    using A = typename K::acc_t;
    static_assert(std::is_trivially_copyable_v<A>, "a partial crosses as bytes");
    StatisticPartials p;
    p.bytes = sizeof(A);
    p.identity = [](void* out) {
      const A a = K::identity();
      std::memcpy(out, &a, sizeof a);
    };
    p.fold = [](void* total, const void* part, std::size_t first) {
      A a, b;
      std::memcpy(&a, total, sizeof a);
      std::memcpy(&b, part, sizeof b);
      if constexpr (ops::has_index<K>)
        if (b.index != ops::no_element) b.index += first;  // a part of NaN alone has no index to move
      a = K{}(a, b);
      std::memcpy(total, &a, sizeof a);
    };
    p.result = [](const void* partial, std::size_t n, double correction, bool wide) {
      A a;
      std::memcpy(&a, partial, sizeof a);
      Result r;
      const ops::FinishArgs args{correction};
      // Wide: the value in f64, unrounded (the core, or the ranks' combine, rounds it once); any
      // and all stay bools.
      if (wide && !finished_from_count<F, K>) r.value = Scalar(finish_statistic<F, K, double>(a, n, args));
      else r.value = Scalar(finish_statistic<F, K>(a, n, args));
      if constexpr (F::op == Op::var || F::op == Op::std) r.moments = a;  // what a combine of parts needs (Result::moments)
      if constexpr (ops::has_index<F>) r.index = a.index;
      return r;
    };
    return p;
  });
}

template <class T>
Result collect_statistic_typed(std::size_t count, Op op, double correction, bool wide, Workspace& ws) {
  const StatisticPartials p = statistic_partials_typed<T>(op);
  ws.fetch_result(p.bytes);
  XREDUCE_CUDA(cudaStreamSynchronize(ws.stream));
  return p.result(ws.host_result, count, correction, wide);
}

}  // namespace xreduce::cuda

#define XREDUCE_INSTANTIATE_STATISTICS(T)                                                                    \
  template void xreduce::cuda::enqueue_statistic_typed<T>(const T*, std::size_t, Op, Workspace&);         \
  template void xreduce::cuda::enqueue_stats_moments_typed<T>(const T*, std::size_t, Workspace&);         \
  template void xreduce::cuda::enqueue_view_statistic_typed<T>(const T*, const Request&, void*, std::uint64_t*, Workspace&); \
  template void xreduce::cuda::enqueue_column_statistic_typed<T>(const T*, std::size_t, std::size_t, Op, void*, Workspace&); \
  template void xreduce::cuda::enqueue_segment_statistic_typed<T>(const T*, const SegmentBounds&, Op, double, void*, \
                                                                  std::uint64_t*, Workspace&, unsigned long long**); \
  template xreduce::Result xreduce::cuda::collect_statistic_typed<T>(std::size_t, Op, double, bool, Workspace&); \
  template xreduce::cuda::StatisticPartials xreduce::cuda::statistic_partials_typed<T>(Op);
