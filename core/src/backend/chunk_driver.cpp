#include "xreduce/backend/chunk_driver.hpp"

#include <algorithm>
#include <bit>
#include <functional>
#include <string>
#include <thread>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "chunk_runner.hpp"
#include "columns.hpp"
#include "host_segments.hpp"
#include "xreduce/backend/features.hpp"
#include "cpu_kernels.hpp"
#include "xreduce/error.hpp"

namespace xreduce::backend {
namespace {

using namespace xreduce::detail;  // the blocked kernels (core/src/backend/cpu_kernels.hpp)

// Elements per chunk of a plain request of n elements: kChunkElements from 2^20 elements on;
// below, n/16 rounded down to a power of two, at least kSmallestChunk. With chunks of 2^16
// throughout, 2^17 elements made 2 chunks: 14 of 16 threads idle, and the parallel backends no
// faster than one thread there (the H200 host's crossover runs at 2f512a5). Any power-of-two
// number of whole leaves gives the same bits: the leaves' pairwise stack builds the same tree
// whichever such chunks it is cut into, so the result still depends on n alone, not on the
// thread count or the backend.
constexpr std::size_t kSmallestChunk = std::size_t{1} << 13;  // 32 KiB of f32: a few us of work
static_assert(kChunkElements % kBlock == 0 && kSmallestChunk % kBlock == 0 && std::has_single_bit(kSmallestChunk));

// Types narrower than 4 bytes take chunks of as many bytes as f32's (256 KiB) rather than as many
// elements, so that handing a chunk out costs the same share of reading it (H100 host, 16 threads,
// 8- and 16-bit sums: 62-90% of f32's rate with 2^16 elements a chunk, 75-93% with 256 KiB, in noisy runs;
// bench/results/nvidia-h100/dtype-rates.md).
//! n/16 rounded down to a power of two, within [kSmallestChunk, most].
std::size_t chunk_size_within(std::size_t n, std::size_t most) { return std::clamp(std::bit_floor(n / 16), kSmallestChunk, most); }
template <class T>
std::size_t chunk_size(std::size_t n) {
  return chunk_size_within(n, sizeof(T) < 4 ? kChunkElements * (4 / sizeof(T)) : kChunkElements);
}
// Exact sums and moments take chunks of up to 2^18 elements: a call to ExactSum::add costs some
// 10 us beyond its elements where they go to the large accumulator (its 4096 f64 chunks made, then
// folded into the digits), 12% of a call of 2^16 f64 of random bits on the 2-core Xeon and 4% of
// one of 2^18; 2^24 elements still make 64 chunks for the threads.
std::size_t exact_chunk_size(std::size_t n) { return chunk_size_within(n, std::size_t{1} << 18); }
std::size_t chunk_count(std::size_t n, std::size_t chunk) { return (n + chunk - 1) / chunk; }
std::size_t chunk_length(std::size_t n, std::size_t chunk, std::size_t c) { return std::min(chunk, n - c * chunk); }

//! A wide partial of T's sum, product or sum of squares as the result: rounded to T, or for wide
//! results (Features::wide) a float's accumulator as it is, an f64.
template <class T>
Scalar narrow(ops::wide_t<T> wide, bool wide_result) {
  if constexpr (is_float_v<T>)
    if (wide_result) return Scalar(static_cast<double>(wide));
  return Scalar(ops::narrow<T>(wide));
}

template <class P, class T>
Scalar fold(const T* x, std::size_t n, const ChunkRunner* runner, bool wide) {
  const std::size_t chunk = chunk_size<T>(n);
  if (runner == nullptr || n <= chunk) return narrow<T>(reduce_pairwise<P>(x, n), wide);
  std::vector<typename P::acc> partial(chunk_count(n, chunk));
  runner->run(partial.size(), [&](std::size_t c) { partial[c] = reduce_pairwise<P>(x + c * chunk, chunk_length(n, chunk, c)); });
  return narrow<T>(combine_pairwise<P>(partial), wide);
}

template <bool kMax, class T>
Scalar fold_extreme(const T* x, std::size_t n, const ChunkRunner* runner) {
  const std::size_t chunk = chunk_size<T>(n);
  if (runner == nullptr || n <= chunk) return Scalar(extreme<kMax>(x, n));
  PerTask<T> partial(chunk_count(n, chunk));
  runner->run(partial.size(), [&](std::size_t c) { partial[c] = extreme<kMax>(x + c * chunk, chunk_length(n, chunk, c)); });
  T e = partial[0];
  for (std::size_t c = 1; c < partial.size(); ++c) e = ops::Extreme<T, kMax>{}(e, partial[c]);
  return Scalar(e);
}

template <bool kMax, class T>
Result fold_arg(const T* x, std::size_t n, const ChunkRunner* runner) {
  ops::ArgPair<T> a;
  const std::size_t chunk = chunk_size<T>(n);
  if (runner == nullptr || n <= chunk) {
    a = arg_extreme<kMax>(x, n, 0);
  } else {
    std::vector<ops::ArgPair<T>> partial(chunk_count(n, chunk));
    runner->run(partial.size(),
              [&](std::size_t c) { partial[c] = arg_extreme<kMax>(x + c * chunk, chunk_length(n, chunk, c), c * chunk); });
    a = partial[0];
    for (std::size_t c = 1; c < partial.size(); ++c) a = ops::Arg<T, kMax>{}(a, partial[c]);
  }
  return Result{Scalar(a.value), a.index, {}};
}

//! An exact sum of single values: one partial per chunk, added.
template <class T>
Result exact_sum_of(const T* x, std::size_t n, const ChunkRunner* runner) {
  Result r;
  r.exact.resize(1);
  const std::size_t chunk = exact_chunk_size(n);
  if (runner == nullptr || n <= chunk) {
    r.exact[0].add(x, n);
    return r;
  }
  std::vector<ExactSum> partial(chunk_count(n, chunk));
  runner->run(partial.size(), [&](std::size_t c) { partial[c].add(x + c * chunk, chunk_length(n, chunk, c)); });
  for (const ExactSum& p : partial) r.exact[0] += p;
  return r;
}

//! The exact partials of an exact mean (the sum of x) or var and std (and the sum of x squared),
//! one per chunk, added: Reducer::reduce rounds the statistic once from them. A square of an f32
//! or 16-bit float is a double exactly; of an f64 a double and its fma remainder, exact while
//! |x| is within [2^-480, 2^511] (else the square leaves the exact partial's range: refused).
template <class T>
Result exact_moments_of(const T* x, std::size_t n, const ChunkRunner* runner, bool squares) {
  struct Sums {
    ExactSum sum, squares;
  };
  auto add = [squares](Sums& s, const T* p, std::size_t len) {
    s.sum.add(p, len);
    if (!squares) return;
    double buffer[2 * kBlock];
    for (std::size_t start = 0; start < len; start += kBlock) {
      const std::size_t m = std::min(kBlock, len - start);
      std::size_t k = 0;
      for (std::size_t i = 0; i < m; ++i) {
        const double v = static_cast<double>(p[start + i]), square = v * v;
        buffer[k++] = square;
        if constexpr (std::is_same_v<T, double>) {
          const double a = std::fabs(v);
          if (a != 0 && std::isfinite(a) && (a < 0x1p-480 || a > 0x1p511))
            throw Error(ErrorCode::unsupported, "an exact var or std of f64 values below 2^-480 or above 2^511 in magnitude "
                                                "(their squares leave the exact partial's range): accuracy 'standard' takes them");
          if (std::isfinite(square)) buffer[k++] = std::fma(v, v, -square);
        }
      }
      s.squares.add(buffer, k);
    }
  };
  const std::size_t chunk = exact_chunk_size(n);
  Sums total;
  if (runner == nullptr || n <= chunk) {
    add(total, x, n);
  } else {
    std::vector<Sums> partial(chunk_count(n, chunk));
    runner->run(partial.size(), [&](std::size_t c) { add(partial[c], x + c * chunk, chunk_length(n, chunk, c)); });
    for (const Sums& p : partial) total.sum += p.sum, total.squares += p.squares;
  }
  Result r;
  r.exact.push_back(total.sum);
  if (squares) r.exact.push_back(total.squares);
  return r;
}

//! A flat array (layout all): one result, or several ops' one each.
Result reduce_flat(const Request& request, const ChunkRunner* runner, Accuracy accuracy, bool wide) {
  if (!request.ops.empty()) return reduce_host_stats(request, runner);
  if (accuracy == Accuracy::exact && exact_statistic(request.op) && is_floating(request.dtype)) {
    return visit_dtype(request.dtype, [&](auto tag) -> Result {
      using T = decltype(tag);
      if constexpr (is_float_v<T>)
        return exact_moments_of(static_cast<const T*>(request.data), request.count, runner, request.op != Op::mean);
      else throw Error(ErrorCode::internal, "an exact statistic of integers");
    });
  }
  if (!is_core_op(request.op)) return reduce_host_statistic(request, runner, wide);
  if (exact_sum(request.dtype, request.op, accuracy)) {
    return visit_dtype(request.dtype, [&](auto tag) -> Result {
      using T = decltype(tag);
      if constexpr (is_float_v<T>) return exact_sum_of(static_cast<const T*>(request.data), request.count, runner);
      else throw Error(ErrorCode::internal, "an exact sum of integers");  // exact_sum() is false for them
    });
  }
  return visit_dtype(request.dtype, [&](auto tag) -> Result {
    using T = decltype(tag);
    const T* x = static_cast<const T*>(request.data);
    const std::size_t n = request.count;
    switch (request.op) {
      case Op::sum: return Result{fold<SumPolicy<T>>(x, n, runner, wide), {}, {}};
      case Op::prod: return Result{fold<ProdPolicy<T>>(x, n, runner, wide), {}, {}};
      case Op::min: return Result{fold_extreme<false>(x, n, runner), {}, {}};
      case Op::max: return Result{fold_extreme<true>(x, n, runner), {}, {}};
      case Op::argmin: return fold_arg<false>(x, n, runner);
      case Op::argmax: return fold_arg<true>(x, n, runner);
      case Op::sumsq: return Result{fold<SquaresPolicy<T>>(x, n, runner, wide), {}, {}};
      default: break;
    }
    throw Error(ErrorCode::internal, "reduce_flat: unknown op");
  });
}

Result reduce_on_host(const Request& request, const ChunkRunner* runner, Accuracy accuracy, bool wide);

//! Runs at least this long make a strided float sum two steps (sum_in_two_steps).
constexpr std::int64_t kTwoStepRun = 256;

//! Whether canonical `q`, a strided view, is a float sum whose reduced axes end in a contiguous
//! run of kTwoStepRun elements or more, with other reduced axes beyond the kept ones: (256, 256,
//! 1024) over axes (0, 2).
bool sums_in_two_steps(const Request& q, Accuracy accuracy) {
  if (!q.ops.empty() || q.op != Op::sum || (q.dtype != DType::f32 && q.dtype != DType::f64) || exact_sum(q.dtype, q.op, accuracy))
    return false;
  const std::size_t last = q.view.rank - 1;  // a strided view has a dimension at least
  const bool reduces_others = (q.axes.bits() & ((std::uint32_t{1} << last) - 1)) != 0;
  return reduces_others && q.axes.contains(last) && q.view.strides[last] == 1 && q.view.shape[last] >= kTwoStepRun;
}

//! A sums_in_two_steps view: each run summed in place as a row, into an f64 partial, then the
//! partials summed as columns over the other reduced axes (compensated), rounded once to the
//! result. Gathered instead, each result's runs went through a buffer before they were added:
//! (256, 256, 1024) over axes (0, 2) read at 116 GB/s on the H200 host's 16 threads, against 142
//! for the rows of the same bytes. The partials are a run's length fewer than the elements.
Result sum_in_two_steps(const Request& q, const ChunkRunner* runner, Accuracy accuracy, bool wide) {
  const std::size_t last = q.view.rank - 1;
  std::uint64_t runs = 1;
  for (std::size_t k = 0; k < last; ++k) runs *= static_cast<std::uint64_t>(q.view.shape[k]);
  const std::unique_ptr<double[]> partial(new double[runs]);  // every one written: no zeros first
  Request rows = q;
  rows.axes = Axes{last};
  rows = canonical(rows);
  rows.out = partial.get();
  reduce_on_host(rows, runner, accuracy, true);

  Axes others;
  for (std::size_t k = 0; k < last; ++k)
    if (q.axes.contains(k)) others.add(k);
  Request columns = canonical(Request::over(partial.get(), DType::f64, View::of(q.view.shape, nullptr, last), others));
  std::vector<double> sums(static_cast<std::size_t>(result_count(columns)));
  columns.out = sums.data();
  const Result whole = reduce_on_host(columns, runner, accuracy, wide);
  // Every axis reduced: the partials are one flat array, whose sum the flat path returns rather
  // than writes to `out`.
  if (layout_of(columns) == Layout::all) sums.at(0) = whole.value.to_double();
  if (q.dtype == DType::f64 || wide) std::copy(sums.begin(), sums.end(), static_cast<double*>(q.out));
  else std::transform(sums.begin(), sums.end(), static_cast<float*>(q.out), [](double s) { return static_cast<float>(s); });
  return Result{};
}

//! Each layout to its family: flat arrays; rows of consecutive elements (segments, equal rows,
//! strided views gathered by rows); columns (records, batches of them, strided views whose
//! results run along the smallest stride); float sums of strided views whose reduced axes end in
//! long runs, as rows and then columns.
Result reduce_on_host(const Request& request, const ChunkRunner* runner, Accuracy accuracy, bool wide) {
  switch (layout_of(request)) {
    case Layout::all: return reduce_flat(request, runner, accuracy, wide);
    case Layout::inner:
    case Layout::ragged: return reduce_host_segments(request, runner, accuracy, wide);
    case Layout::outer:
    case Layout::middle: return reduce_host_columns(request, runner, accuracy, wide);
    case Layout::strided: break;
  }
  if (sums_in_two_steps(request, accuracy)) return sum_in_two_steps(request, runner, accuracy, wide);
  return runs_along_columns(request) ? reduce_host_columns(request, runner, accuracy, wide)
                                     : reduce_host_segments(request, runner, accuracy, wide);
}

}  // namespace

Result reduce_host_chunks(const Request& request, Reducer* scheduler, const Options& options) {
  const Accuracy accuracy = options.accuracy.value_or(Accuracy::standard);
  const bool wide = wide_results(options);
  if (!scheduler) return reduce_on_host(request, nullptr, accuracy, wide);
  const int threads = options.threads;
  // The threads it runs on at most: those asked for, else the machine's (the schedulers' own
  // default, unless OMP_NUM_THREADS or an arena says fewer).
  const unsigned most = threads > 0 ? static_cast<unsigned>(threads) : std::max(1u, std::thread::hardware_concurrency());
  const ChunkRunner runner{[scheduler, threads](std::size_t chunks, const std::function<void(std::size_t)>& body) {
                             auto call = [](void* f, std::size_t c) { (*static_cast<const std::function<void(std::size_t)>*>(f))(c); };
                             if (!scheduler->run_chunks(chunks, call, const_cast<std::function<void(std::size_t)>*>(&body), threads))
                               throw Error(ErrorCode::internal, "backend '" + std::string(scheduler->name()) + "' runs no chunks of host code");
                           },
                           most};
  return reduce_on_host(request, &runner, accuracy, wide);
}

}  // namespace xreduce::backend
