#include "xreduce/backend/chunk_driver.hpp"

#include <algorithm>
#include <bit>
#include <functional>
#include <string>
#include <cmath>
#include <limits>
#include <vector>

#include "chunk_runner.hpp"
#include "host_segments.hpp"
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

std::size_t chunk_size(std::size_t n) { return std::clamp(std::bit_floor(n / 16), kSmallestChunk, kChunkElements); }
std::size_t chunk_count(std::size_t n, std::size_t chunk) { return (n + chunk - 1) / chunk; }
std::size_t chunk_length(std::size_t n, std::size_t chunk, std::size_t c) { return std::min(chunk, n - c * chunk); }

//! A wide partial of T's sum, product or sum of squares as the result.
template <class T>
Scalar narrow(ops::wide_t<T> wide) {
  return Scalar(ops::narrow<T>(wide));
}

template <class P, class T>
Scalar fold(const T* x, std::size_t n, const ChunkRunner* runner) {
  const std::size_t chunk = chunk_size(n);
  if (runner == nullptr || n <= chunk) return narrow<T>(reduce_pairwise<P>(x, n));
  std::vector<typename P::acc> partial(chunk_count(n, chunk));
  (*runner)(partial.size(), [&](std::size_t c) { partial[c] = reduce_pairwise<P>(x + c * chunk, chunk_length(n, chunk, c)); });
  return narrow<T>(combine_pairwise<P>(partial));
}

template <bool kMax, class T>
Scalar fold_extreme(const T* x, std::size_t n, const ChunkRunner* runner) {
  const std::size_t chunk = chunk_size(n);
  if (runner == nullptr || n <= chunk) return Scalar(extreme<kMax>(x, n));
  std::vector<T> partial(chunk_count(n, chunk));
  (*runner)(partial.size(), [&](std::size_t c) { partial[c] = extreme<kMax>(x + c * chunk, chunk_length(n, chunk, c)); });
  T e = partial[0];
  for (std::size_t c = 1; c < partial.size(); ++c) e = ops::Extreme<T, kMax>{}(e, partial[c]);
  return Scalar(e);
}

template <bool kMax, class T>
Result fold_arg(const T* x, std::size_t n, const ChunkRunner* runner) {
  ops::ArgPair<T> a;
  const std::size_t chunk = chunk_size(n);
  if (runner == nullptr || n <= chunk) {
    a = arg_extreme<kMax>(x, n, 0);
  } else {
    std::vector<ops::ArgPair<T>> partial(chunk_count(n, chunk));
    (*runner)(partial.size(),
              [&](std::size_t c) { partial[c] = arg_extreme<kMax>(x + c * chunk, chunk_length(n, chunk, c), c * chunk); });
    a = partial[0];
    for (std::size_t c = 1; c < partial.size(); ++c) a = ops::Arg<T, kMax>{}(a, partial[c]);
  }
  return Result{Scalar(a.value), a.index, {}};
}

// Records (width k > 1): every record adds its k values to k column accumulators. The records are
// cut into at most kRecordChunks chunks, a fixed number, so the partials (chunks x k) stay small
// for any width and the result is the same bits on every backend and for every thread count.
constexpr std::size_t kRecordChunks = 256;

//! One column's sum: floats in double, f64 compensated (a column may hold millions of values in
//! sequence), integers in uint64.
template <class T>
struct ColumnSum {
  using P = SumPolicy<T>;
  typename P::acc s = 0;
  double c = 0;
  void add(T x) {
    if constexpr (std::is_same_v<T, double>) {
      const double t = s + x;
      c += std::fabs(s) >= std::fabs(x) ? (s - t) + x : (x - t) + s;
      s = t;
    } else {
      s += static_cast<typename P::acc>(x);
    }
  }
  typename P::acc value() const {
    if constexpr (std::is_same_v<T, double>) return std::isfinite(s) ? s + c : s;
    else return s;
  }
};

template <class T>
struct ColumnProd {
  using P = ProdPolicy<T>;
  typename P::acc p = P::identity();
  void add(T x) { p *= static_cast<typename P::acc>(x); }
  typename P::acc value() const { return p; }
};

template <class T>
struct ColumnSquares {
  using P = SquaresPolicy<T>;
  typename P::acc s = P::identity();
  void add(T x) { s += P::template lift<typename P::acc>(x); }
  typename P::acc value() const { return s; }
};

template <bool kMax, class T>
struct ColumnExtreme : RunningExtreme<kMax, T> {
  T value() const { return this->result(); }
};

//! The column accumulators of every chunk of records (at most `max_chunks` chunks): a row of
//! `width` columns per chunk.
template <class Column, class T>
std::vector<Column> record_partials(const Request& q, const ChunkRunner* runner, std::size_t max_chunks = kRecordChunks) {
  const T* x = static_cast<const T*>(q.data);
  const std::size_t k = q.width;
  const std::size_t per_chunk_min = std::max<std::size_t>(1, kChunkElements / k);
  const std::size_t chunks = std::min(max_chunks, (q.count + per_chunk_min - 1) / per_chunk_min);
  const std::size_t per_chunk = (q.count + chunks - 1) / chunks;
  std::vector<Column> partial(chunks * k);
  auto body = [&](std::size_t c) {
    Column* cols = partial.data() + c * k;
    const std::size_t first = std::min(q.count, c * per_chunk), last = std::min(q.count, first + per_chunk);
    const T* row = x + first * k;  // the last chunks may be empty: ceil(count / chunks) rounds up
    for (std::size_t r = first; r < last; ++r, row += k)
      for (std::size_t j = 0; j < k; ++j) cols[j].add(row[j]);
  };
  run_each(runner, chunks, body);
  return partial;
}

//! Sums and products: each column's chunk values combined pairwise.
template <class Column, class T>
Result fold_record_columns(const Request& q, const ChunkRunner* runner) {
  const std::vector<Column> partial = record_partials<Column, T>(q, runner);
  const std::size_t k = q.width, chunks = partial.size() / k;
  Result r;
  for (std::size_t j = 0; j < k; ++j) {
    PairwiseStack<typename Column::P> stack;
    for (std::size_t c = 0; c < chunks; ++c) stack.push(partial[c * k + j].value());
    r.values.push_back(narrow<T>(stack.result()));
  }
  return r;
}

template <bool kMax, class T>
Result fold_record_extremes(const Request& q, const ChunkRunner* runner) {
  const std::vector<ColumnExtreme<kMax, T>> partial = record_partials<ColumnExtreme<kMax, T>, T>(q, runner);
  const std::size_t k = q.width, chunks = partial.size() / k;
  Result r;
  for (std::size_t j = 0; j < k; ++j) {
    T e = partial[j].value();
    for (std::size_t c = 1; c < chunks; ++c) e = ops::Extreme<T, kMax>{}(e, partial[c * k + j].value());
    r.values.push_back(Scalar(e));
  }
  return r;
}

//! One column's exact sum (Accuracy::exact).
template <class T>
struct ColumnExact {
  ExactSum s;
  void add(T x) { s.add(static_cast<double>(x)); }
};

//! Exact sums of records: the columns' partials of every chunk, added. Any split gives the same
//! bits, so the chunks are only as many as 64 MiB of partials hold.
template <class T>
Result exact_record_sums(const Request& q, const ChunkRunner* runner) {
  const std::size_t k = q.width;
  const std::size_t most = std::clamp<std::size_t>((std::size_t{64} << 20) / (k * sizeof(ExactSum)), 1, kRecordChunks);
  const std::vector<ColumnExact<T>> partial = record_partials<ColumnExact<T>, T>(q, runner, most);
  Result r;
  r.exact.resize(k);
  for (std::size_t c = 0; c < partial.size() / k; ++c)
    for (std::size_t j = 0; j < k; ++j) r.exact[j] += partial[c * k + j].s;
  return r;
}

//! An exact sum of single values: one partial per chunk, added.
template <class T>
Result exact_sum_of(const T* x, std::size_t n, const ChunkRunner* runner) {
  Result r;
  r.exact.resize(1);
  const std::size_t chunk = chunk_size(n);
  if (runner == nullptr || n <= chunk) {
    r.exact[0].add(x, n);
    return r;
  }
  std::vector<ExactSum> partial(chunk_count(n, chunk));
  (*runner)(partial.size(), [&](std::size_t c) { partial[c].add(x + c * chunk, chunk_length(n, chunk, c)); });
  for (const ExactSum& p : partial) r.exact[0] += p;
  return r;
}

Result reduce_records(const Request& q, const ChunkRunner* runner) {
  return visit_dtype(q.dtype, [&](auto tag) -> Result {
    using T = decltype(tag);
    Result r;
    switch (q.op) {
      case Op::sum: r = fold_record_columns<ColumnSum<T>, T>(q, runner); break;
      case Op::prod: r = fold_record_columns<ColumnProd<T>, T>(q, runner); break;
      case Op::min: r = fold_record_extremes<false, T>(q, runner); break;
      case Op::max: r = fold_record_extremes<true, T>(q, runner); break;
      case Op::sumsq: r = fold_record_columns<ColumnSquares<T>, T>(q, runner); break;
      default: throw Error(ErrorCode::internal, "reduce_records: an op with an index");
    }
    r.value = r.values.front();
    return r;
  });
}

Result reduce_on_host(const Request& request, const ChunkRunner* runner, Accuracy accuracy) {
  if (request.segments.segmented()) return reduce_host_segments(request, runner, accuracy);
  if (!request.ops.empty()) return reduce_host_stats(request, runner);
  if (exact_sum(request.dtype, request.op, accuracy)) {
    if (request.dtype == DType::f32)
      return request.width > 1 ? exact_record_sums<float>(request, runner)
                               : exact_sum_of(static_cast<const float*>(request.data), request.count, runner);
    return request.width > 1 ? exact_record_sums<double>(request, runner)
                             : exact_sum_of(static_cast<const double*>(request.data), request.count, runner);
  }
  if (request.width > 1) return reduce_records(request, runner);
  return visit_dtype(request.dtype, [&](auto tag) -> Result {
    using T = decltype(tag);
    const T* x = static_cast<const T*>(request.data);
    const std::size_t n = request.count;
    switch (request.op) {
      case Op::sum: return Result{fold<SumPolicy<T>>(x, n, runner), {}, {}};
      case Op::prod: return Result{fold<ProdPolicy<T>>(x, n, runner), {}, {}};
      case Op::min: return Result{fold_extreme<false>(x, n, runner), {}, {}};
      case Op::max: return Result{fold_extreme<true>(x, n, runner), {}, {}};
      case Op::argmin: return fold_arg<false>(x, n, runner);
      case Op::argmax: return fold_arg<true>(x, n, runner);
      case Op::sumsq: return Result{fold<SquaresPolicy<T>>(x, n, runner), {}, {}};
    }
    throw Error(ErrorCode::internal, "reduce_on_cpu: unknown op");
  });
}

}  // namespace

Result reduce_host_chunks(const Request& request, Reducer* scheduler, const Options& options) {
  const Accuracy accuracy = options.accuracy.value_or(Accuracy::standard);
  if (!scheduler) return reduce_on_host(request, nullptr, accuracy);
  const int threads = options.threads;
  const ChunkRunner runner = [scheduler, threads](std::size_t chunks, const std::function<void(std::size_t)>& body) {
    auto call = [](void* f, std::size_t c) { (*static_cast<const std::function<void(std::size_t)>*>(f))(c); };
    if (!scheduler->run_chunks(chunks, call, const_cast<std::function<void(std::size_t)>*>(&body), threads))
      throw Error(ErrorCode::internal, "backend '" + std::string(scheduler->name()) + "' runs no chunks of host code");
  };
  return reduce_on_host(request, &runner, accuracy);
}

}  // namespace xreduce::backend
