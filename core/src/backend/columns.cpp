// Column-wise reductions on the CPU. The results are columns along the kept axis of smallest
// stride (a row-major matrix's columns, records' fields); the other kept axes make batches of
// them. A task takes a block of neighbouring columns of one batch and adds, row by row of the
// reduced axes, each element to its column's accumulator. The reduced rows are cut into at most
// kChunks chunks, a number fixed by the shape alone, and the chunks' partials are folded in order:
// the same bits on every CPU backend and thread count.

#include "columns.hpp"

#include <algorithm>
#include <memory>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "cpu_kernels.hpp"
#include "exact_in_double.hpp"
#include "statistic_kernels.hpp"
#include "view_walk.hpp"
#include "xreduce/backend/chunk_driver.hpp"
#include "xreduce/backend/features.hpp"
#include "xreduce/error.hpp"
#include "xreduce/exact.hpp"

namespace xreduce::backend {
namespace {

using namespace xreduce::detail;  // the kernels' accumulation policies

constexpr std::size_t kChunks = 256;
//! Elements a chunk of rows holds at least: a task's columns start from zero and end in a partial
//! per column, a cost the rows it adds must outweigh (at the flat path's 2^16 elements, a
//! (4096, 4096) f32 matrix's column sums were chunks of 16 rows, and the setup and the partials
//! cost more than the reads; at 2^20, the partials are 2% of the bytes read at most, for f32).
constexpr std::uint64_t kColumnChunkElements = std::uint64_t{1} << 20;
//! Partials of every chunk kept for the fold take at most this much memory: a wide shape gets
//! fewer chunks rather than gigabytes of partials.
constexpr std::size_t kPartialBytes = std::size_t{64} << 20;
//! The same for exact sums' partials (ExactSum, 576 bytes a column): allocating, clearing and
//! folding 64 MB of them took most of a (4096, 4096) f32 matrix's exact column sums' time on one
//! thread, where its blocks of columns alone make a task for each thread (run_columns).
constexpr std::size_t kExactPartialBytes = std::size_t{4} << 20;
//! Tasks a table is cut into at least, where its columns allow (see run_columns).
constexpr std::uint64_t kFewestTasks = 16;

// A Column: one column's accumulator, its Partial and the Fold of its chunks' partials, and
// write(q, at, partial, wide), which puts result `at` in q.out (`wide`: as f64, store_result).

//! One column's sum: floats in double, f64 compensated (a column may hold millions of values in
//! sequence), integers in uint64.
template <class T>
struct SumColumn {
  using P = SumPolicy<T>;
  using Partial = typename P::acc;
  using Fold = PairwiseStack<P>;
  Partial s = 0;
  double c = 0;
  void add(T x, std::uint64_t) {
    if constexpr (std::is_same_v<T, double>) {
      const double t = s + x;
      c += std::fabs(s) >= std::fabs(x) ? (s - t) + x : (x - t) + s;
      s = t;
    } else {
      s += static_cast<Partial>(x);
    }
  }
  Partial partial() const {
    if constexpr (std::is_same_v<T, double>) return std::isfinite(s) ? s + c : s;
    else return s;
  }
  static void write(const Request& q, std::size_t at, Partial v, bool wide) { store_result<T, typename P::Op>(q.out, at, v, wide); }
};

//! Products and sums of squares: policy P's accumulator, added to in sequence.
template <class T, class P>
struct FoldColumn {
  using Partial = typename P::acc;
  using Fold = PairwiseStack<P>;
  Partial v = P::identity();
  void add(T x, std::uint64_t) { v = P::combine(v, P::template lift<Partial>(x)); }
  Partial partial() const { return v; }
  static void write(const Request& q, std::size_t at, Partial p, bool wide) { store_result<T, typename P::Op>(q.out, at, p, wide); }
};

template <bool kMax, class T>
struct ExtremeColumn {
  using Partial = T;
  using Fold = Running<ops::Extreme<T, kMax>>;
  RunningExtreme<kMax, T> e;
  void add(T x, std::uint64_t) { e.add(x); }
  Partial partial() const { return e.result(); }
  static void write(const Request& q, std::size_t at, Partial v, bool) { static_cast<T*>(q.out)[at] = v; }
};

//! argmin/argmax along the reduced axes: the index is the row's, in their C order.
template <bool kMax, class T>
struct ArgColumn {
  using F = ops::Arg<T, kMax>;
  using Partial = ops::ArgPair<T>;
  using Fold = Running<F>;
  Partial best = F::identity();
  void add(T x, std::uint64_t r) { best = F{}(best, Partial{x, r}); }
  Partial partial() const { return best; }
  static void write(const Request& q, std::size_t at, const Partial& v, bool) {
    static_cast<T*>(q.out)[at] = v.value;
    q.out_index[at] = v.index;
  }
};

//! A statistic of the table: its one-element-at-a-time accumulator (Accumulate), chunks folded
//! pairwise in order, finished with the request's correction.
template <class T, class F>
struct StatisticColumn {
  using Partial = typename F::acc_t;
  using Fold = PairwiseStack<TablePolicy<F>>;
  Accumulate<F> a;
  void add(T x, std::uint64_t r) { a.add(x, r); }
  Partial partial() const { return a.result(); }
  static void write(const Request& q, std::size_t at, const Partial& v, bool wide) {
    store_result<T, F>(q.out, at, v, wide, ops::FinishArgs{q.correction});
    if constexpr (ops::has_index<F>) q.out_index[at] = v.index == ops::no_element ? no_index : v.index;
  }
};

template <class T>
struct ExactColumn {
  using Partial = ExactSum;
  struct Fold {
    ExactSum sum;
    void push(const ExactSum& e) { sum += e; }
    const ExactSum& result() const { return sum; }
  };
  ExactSum s;
  std::int64_t summed_apart = 0;  //!< elements that came in through add_exact_sum, less one each
  void add(T x, std::uint64_t) { s.add(static_cast<double>(x)); }
  //! Adds the exact sum of `elements` of them, held in a double (add_contiguous_rows).
  void add_exact_sum(double sum, std::uint64_t elements) {
    s.add(sum);
    summed_apart += static_cast<std::int64_t>(elements) - 1;
  }
  //! The same for f64, the sum held as q + r (add_contiguous_rows): a q of zero is left out, so
  //! that r alone says whether every element was -0 (x - q keeps a -0, sigma + x - sigma does not).
  void add_exact_sum(double q, double r, std::uint64_t elements) {
    if (q != 0) s.add(q), --summed_apart;
    add_exact_sum(r, elements);
  }
  Partial partial() const {  // its count every element's, as adding them one by one gives it
    Partial p = s;
    p.words[ExactSum::kCount] += summed_apart;
    return p;
  }
  static void write(const Request& q, std::size_t at, const Partial& v, bool) { static_cast<T*>(q.out)[at] = v.round<T>(); }
};

//! Several ops in one read (Request::ops): the sum, the sum of squares, and the extremes with
//! their indices (min and max are those pairs' values), each as its own column would have it;
//! only the ops asked for are written.
template <class T>
struct SeveralColumn {
  using Sum = SumColumn<T>;
  using Squares = FoldColumn<T, SquaresPolicy<T>>;
  using Lo = ArgColumn<false, T>;
  using Hi = ArgColumn<true, T>;
  struct Partial {
    typename Sum::Partial sum;
    typename Squares::Partial squares;
    typename Lo::Partial lo;
    typename Hi::Partial hi;
  };
  struct Fold {
    typename Sum::Fold sum;
    typename Squares::Fold squares;
    typename Lo::Fold lo;
    typename Hi::Fold hi;
    void push(const Partial& p) { sum.push(p.sum), squares.push(p.squares), lo.push(p.lo), hi.push(p.hi); }
    Partial result() const { return {sum.result(), squares.result(), lo.result(), hi.result()}; }
  };
  Sum sum;
  Squares squares;
  Lo lo;
  Hi hi;
  void add(T x, std::uint64_t r) { sum.add(x, r), squares.add(x, r), lo.add(x, r), hi.add(x, r); }
  Partial partial() const { return {sum.partial(), squares.partial(), lo.partial(), hi.partial()}; }
  static void write(const Request& q, std::size_t at, const Partial& p, bool) {
    const OpsOut& o = *q.ops_out;
    auto values = [&](Op op) { return o.values[static_cast<int>(op)]; };
    if (q.ops.contains(Op::sum)) static_cast<typename ops::Sum<T>::result_t*>(values(Op::sum))[at] = ops::Sum<T>::finish(p.sum);
    if (q.ops.contains(Op::sumsq)) static_cast<typename ops::Sum<T>::result_t*>(values(Op::sumsq))[at] = ops::Sum<T>::finish(p.squares);
    if (q.ops.contains(Op::min)) static_cast<T*>(values(Op::min))[at] = p.lo.value;
    if (q.ops.contains(Op::max)) static_cast<T*>(values(Op::max))[at] = p.hi.value;
    if (q.ops.contains(Op::argmin)) static_cast<T*>(values(Op::argmin))[at] = p.lo.value, o.indices[static_cast<int>(Op::argmin)][at] = p.lo.index;
    if (q.ops.contains(Op::argmax)) static_cast<T*>(values(Op::argmax))[at] = p.hi.value, o.indices[static_cast<int>(Op::argmax)][at] = p.hi.index;
  }
};

//! The view as columns: the kept axis of smallest stride (its results' packed step), the other
//! kept axes as batches (their steps), and the reduced axes.
struct Plan {
  Axis column{1, 1};
  std::int64_t column_out = 1;
  std::vector<Axis> batch_in, batch_out;  // input strides, and the results' packed strides
  std::vector<Axis> reduced;
  std::uint64_t batches = 1, rows = 1;

  explicit Plan(const SplitView& v) : reduced(v.reduced), rows(v.per_result) {
    const std::vector<std::int64_t> out = packed_strides(v.kept);
    std::size_t c = v.kept.size();  // the kept axis of smallest |stride| among those of extent above 1
    for (std::size_t k = 0; k < v.kept.size(); ++k)
      if (v.kept[k].extent > 1 && (c == v.kept.size() || std::llabs(v.kept[k].stride) <= std::llabs(v.kept[c].stride))) c = k;
    column = v.kept[c];
    column_out = out[c];
    for (std::size_t k = 0; k < v.kept.size(); ++k) {
      if (k == c) continue;
      batch_in.push_back(v.kept[k]);
      batch_out.push_back({v.kept[k].extent, out[k]});
      batches *= static_cast<std::uint64_t>(v.kept[k].extent);
    }
  }
  std::int64_t in_offset(std::uint64_t b) const { return Odometer(batch_in, b).offset(); }
  std::int64_t out_offset(std::uint64_t b) const { return Odometer(batch_out, b).offset(); }
};

template <class Column>
inline constexpr bool is_sum_column = false;
template <class T>
inline constexpr bool is_sum_column<SumColumn<T>> = true;
template <class Column>
inline constexpr bool is_extreme_column = false;
template <bool kMax, class T>
inline constexpr bool is_extreme_column<ExtremeColumn<kMax, T>> = true;
template <class Column>
inline constexpr bool is_exact_column = false;
template <class T>
inline constexpr bool is_exact_column<ExactColumn<T>> = true;

//! Rows of contiguous columns that the compiler vectorises across the columns: the running
//! values in plain arrays (one per column) instead of the columns' objects, each row added to
//! them element by element. Sums of f32 add kFloatRows rows in float lanes, four rows a pass
//! summed pairwise, then into double (16 elements in float, as the flat leaves do:
//! cpu_kernels.hpp, within the stated bound, and with the same price, a float partial that
//! overflows); f64 sums keep Neumaier's compensation, branch-free; extremes compare and select, a NaN absorbing as RunningExtreme's;
//! exact sums of f32, f16 and bf16 add into doubles while that is exact (exact_in_double.hpp). Element by
//! element through the objects, the column sums of a (4096, 4096) f32 matrix ran at 4% of its row
//! sums' rate on the H200 host's 16 threads (bench/results/nvidia-h200/views.md at 9bd358e).
template <class Column, class T>
void add_contiguous_rows(const T* x, const Plan& p, std::uint64_t r0, std::uint64_t r1, std::size_t j0, std::size_t n, Column* cols) {
  constexpr std::uint64_t kFloatRows = 16;
  Odometer row(p.reduced, r0);
  if constexpr (is_sum_column<Column> && std::is_same_v<T, float>) {
    auto next_row = [&] {
      const float* at = x + row.offset() + j0;
      row.next();
      return at;
    };
    std::vector<double> acc(n, 0.0);
    std::vector<float> lane(n);
    for (std::uint64_t r = r0; r < r1;) {
      std::fill(lane.begin(), lane.end(), 0.0f);
      const std::uint64_t end = std::min(r1, r + kFloatRows);
      for (; r + 4 <= end; r += 4) {  // four rows a pass: one load and store of the lanes per four elements
        const float *a = next_row(), *b = next_row(), *c = next_row(), *d = next_row();
        for (std::size_t j = 0; j < n; ++j) lane[j] += (a[j] + b[j]) + (c[j] + d[j]);
      }
      for (; r < end; ++r) {
        const float* at = next_row();
        for (std::size_t j = 0; j < n; ++j) lane[j] += at[j];
      }
      for (std::size_t j = 0; j < n; ++j) acc[j] += lane[j];
    }
    for (std::size_t j = 0; j < n; ++j) cols[j].s += acc[j];
  } else if constexpr (is_sum_column<Column> && std::is_same_v<T, double>) {
    std::vector<double> sum(n), carry(n);
    for (std::size_t j = 0; j < n; ++j) sum[j] = cols[j].s, carry[j] = cols[j].c;
    for (std::uint64_t r = r0; r < r1; ++r, row.next()) {
      const double* at = x + row.offset() + j0;
      for (std::size_t j = 0; j < n; ++j) {
        const double s = sum[j], v = at[j], t = s + v;
        carry[j] += std::fabs(s) >= std::fabs(v) ? (s - t) + v : (v - t) + s;
        sum[j] = t;
      }
    }
    for (std::size_t j = 0; j < n; ++j) cols[j].s = sum[j], cols[j].c = carry[j];
  } else if constexpr (is_exact_column<Column> && sums_in_double<T>) {  // exact sums of f32, f16 and bf16
    // Blocks of kExactRows rows go into one double a column while the binades seen since the
    // doubles last went into the columns' superaccumulators fit (F32Binades): a pass over the
    // block for its binades, then one adding it, both vectorised across the columns (the 16-bit
    // types widened to f32 first). A block that would break that sends the doubles on first; one
    // too wide on its own (or with an infinity or a NaN) is added element by element.
    constexpr std::uint64_t kExactRows = 16;
    constexpr bool kWidened = !std::is_same_v<T, float>;
    std::vector<double> sum(n, -0.0);  // -0: a column of -0s sums to -0, as the exact sum's rounding gives
    std::vector<float> wide(kWidened ? kExactRows * n : 0);
    F32Binades open;
    std::uint64_t open_rows = 0;
    auto send = [&] {
      for (std::size_t j = 0; j < n; ++j) cols[j].add_exact_sum(sum[j], open_rows), sum[j] = -0.0;
      open = {}, open_rows = 0;
    };
    const T* rows[kExactRows];
    const float* widened[kExactRows];
    for (std::uint64_t r = r0; r < r1;) {
      const std::uint64_t m = std::min<std::uint64_t>(kExactRows, r1 - r);
      for (std::uint64_t k = 0; k < m; ++k, row.next()) {
        rows[k] = x + row.offset() + j0;
        if constexpr (kWidened) {
          widen(rows[k], n, wide.data() + k * n);
          widened[k] = wide.data() + k * n;
        } else {
          widened[k] = rows[k];
        }
      }
      const F32Binades block = binades_of_rows<T>(widened, m, n);
      r += m;
      F32Binades with = open;
      with.add(block);
      if (!with.template fit<T>(open_rows + m)) {
        if (open_rows > 0) send();
        if (!block.template fit<T>(m)) {
          for (std::uint64_t k = 0; k < m; ++k)
            for (std::size_t j = 0; j < n; ++j) cols[j].add(rows[k][j], 0);
          continue;
        }
        with = block;
      }
      add_rows_in_double(sum.data(), widened, m, n);
      open = with, open_rows += m;
    }
    if (open_rows > 0) send();
  } else if constexpr (is_exact_column<Column>) {  // exact sums of f64
    // As for f32 above, but into two doubles a column (exact_in_double.hpp's sum_in_two_doubles):
    // while the blocks since the doubles last went into the columns' superaccumulators stay at or
    // below the first one's top binade, span at most 52 - 2c binades and number at most 2^c
    // rows (c = kOpenBits), each element x splits around sigma = 1.5 * 2^(top + 2 + c) into
    // q = fl(sigma + x) - sigma and r = x - q, and both columns' sums are exact.
    constexpr std::uint64_t kExactRows = 16;
    constexpr int kOpenBits = 10;
    std::vector<double> q_sum(n, 0.0), r_sum(n, -0.0);  // r starts at -0: a column of -0s keeps it
    bool open = false;
    std::uint32_t top = 0, bottom = 0;
    double sigma = 0;
    std::uint64_t open_rows = 0;
    auto send = [&] {
      for (std::size_t j = 0; j < n; ++j) cols[j].add_exact_sum(q_sum[j], r_sum[j], open_rows), q_sum[j] = 0.0, r_sum[j] = -0.0;
      open = false, open_rows = 0;
    };
    const double* rows[kExactRows];
    for (std::uint64_t r = r0; r < r1;) {
      const std::uint64_t m = std::min<std::uint64_t>(kExactRows, r1 - r);
      std::uint32_t lo = 2047, hi = 0;
      for (std::uint64_t k = 0; k < m; ++k, row.next()) {
        rows[k] = x + row.offset() + j0;
        std::uint32_t row_lo, row_hi;
        f64_fields(rows[k], n, row_lo, row_hi);
        lo = std::min(lo, row_lo), hi = std::max(hi, row_hi);
      }
      r += m;
      const bool usual = hi < 2047 && lo <= hi;  // no infinity or NaN, and not zeros only
      if (open && !(usual && hi <= top && two_doubles_fit(top, std::min(bottom, lo), kOpenBits) &&
                    open_rows + m <= (std::uint64_t{1} << kOpenBits)))
        send();
      if (!open && usual && two_doubles_fit(hi, lo, kOpenBits)) open = true, top = hi, bottom = lo, sigma = two_doubles_sigma(top, kOpenBits);
      if (!open) {  // an infinity, a NaN, zeros only or too wide a block: element by element
        for (std::uint64_t k = 0; k < m; ++k)
          for (std::size_t j = 0; j < n; ++j) cols[j].add(rows[k][j], 0);
        continue;
      }
      for (std::uint64_t k = 0; k < m; ++k) {
        const double* const from = rows[k];
        for (std::size_t j = 0; j < n; ++j) {
          const double q = (sigma + from[j]) - sigma;
          q_sum[j] += q;
          r_sum[j] += from[j] - q;
        }
      }
      bottom = std::min(bottom, lo), open_rows += m;
    }
    if (open) send();
  } else {  // extremes of floats and integers, sums of integers
    using V = std::conditional_t<is_sum_column<Column>, typename Column::Partial, T>;
    std::vector<V> v(n);
    for (std::size_t j = 0; j < n; ++j) {
      if constexpr (is_sum_column<Column>) v[j] = cols[j].s;
      else v[j] = cols[j].partial();
    }
    for (std::uint64_t r = r0; r < r1; ++r, row.next()) {
      const T* at = x + row.offset() + j0;
      for (std::size_t j = 0; j < n; ++j) {
        if constexpr (is_sum_column<Column>) {
          v[j] += static_cast<V>(at[j]);
        } else {
          const T e = at[j];
          constexpr bool kMax = std::is_same_v<Column, ExtremeColumn<true, T>>;
          // A NaN is taken, and then kept: no comparison with it is true.
          v[j] = (kMax ? e > v[j] : e < v[j]) || is_nan(e) ? e : v[j];
        }
      }
    }
    for (std::size_t j = 0; j < n; ++j) {
      if constexpr (is_sum_column<Column>) cols[j].s = v[j];
      else cols[j].e.add(v[j]);
    }
  }
}

//! Whether Column has a loop of its own for unit-stride columns (add_contiguous_rows).
template <class Column, class T>
inline constexpr bool adds_contiguous_rows =
    ((is_sum_column<Column> || is_extreme_column<Column>) && std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) ||
    is_exact_column<Column>;  // (exact sums are of the float types only)

//! Adds rows [r0, r1) of one batch (its elements at x) to columns [j0, j0 + n) of `cols`. The
//! other columns take one loop whatever the stride: with a stride of 1 as a constant, the
//! statistics and products of a (4096, 4096) f32 matrix's columns ran no faster (one thread,
//! the 2-core build machine), and that second copy of every statistic's loop, for every element
//! type, was compile time for nothing.
template <class Column, class T>
void add_rows(const T* x, const Plan& p, std::uint64_t r0, std::uint64_t r1, std::size_t j0, std::size_t n, Column* cols) {
  if constexpr (adds_contiguous_rows<Column, T>)
    if (p.column.stride == 1) return add_contiguous_rows(x, p, r0, r1, j0, n, cols);
  const std::int64_t step = p.column.stride;
  Odometer row(p.reduced, r0);
  for (std::uint64_t r = r0; r < r1; ++r, row.next()) {
    const T* at = x + row.offset() + static_cast<std::int64_t>(j0) * step;
    for (std::size_t j = 0; j < n; ++j) cols[j].add(at[static_cast<std::int64_t>(j) * step], r);
  }
}

//! Runs the plan with Column: results written to q.out / ops_out (`wide`: as f64), or kept in
//! `keep` (exact partials of layout outer) when it is not null.
template <class Column, class T>
void run_columns(const Request& q, const Plan& p, const ChunkRunner* runner, std::vector<typename Column::Partial>* keep,
                 bool wide = false) {
  const T* x = static_cast<const T*>(q.data);
  const auto width = static_cast<std::size_t>(p.column.extent);
  // Chunks of rows: as many as kColumnChunkElements a chunk make for sums (double, compensated or
  // exact: their error does not grow with a chunk's length) and extremes, kChunkElements for the
  // rest (products, sums of squares and the statistics add a chunk's rows in sequence, so its
  // length bounds their error); at most kChunks in all (a few per batch when there are many), and
  // no more than kPartialBytes of partials hold (kExactPartialBytes of exact ones).
  constexpr bool kLongChunks = is_sum_column<Column> || is_extreme_column<Column> || is_exact_column<Column>;
  constexpr std::size_t kMostPartialBytes = is_exact_column<Column> ? kExactPartialBytes : kPartialBytes;
  const std::uint64_t per_chunk_min = std::max<std::uint64_t>(1, (kLongChunks ? kColumnChunkElements : kChunkElements) / width);
  const std::uint64_t memory_cap = std::max<std::uint64_t>(1, kMostPartialBytes / (p.batches * width * sizeof(typename Column::Partial)));
  const std::uint64_t most = std::min<std::uint64_t>(memory_cap, std::max<std::uint64_t>(1, kChunks / p.batches));
  const std::uint64_t chunks = std::max<std::uint64_t>(1, std::min(most, (p.rows + per_chunk_min - 1) / per_chunk_min));
  const std::uint64_t per_chunk = (p.rows + chunks - 1) / chunks;
  // Blocks of columns whose accumulators stay in cache (64 where one is over 256 bytes); narrower,
  // down to 16 columns, where the batches and chunks would make fewer than kFewestTasks tasks, so
  // that a short table of many columns is not one thread's: the partials of a two-step sum
  // (chunk_driver.cpp), 64 rows of 256 doubles for a (64, 256, 1024) f32 view over axes (0, 2),
  // took 40 us of its 2.2 ms in one thread on the 2-core build machine.
  // Exact sums add in doubles first (exact_in_double.hpp) and touch their superaccumulators
  // seldom: blocks of up to 4096 columns, and of at least 1024 where the columns allow, not 64
  // (or 16, for more tasks). With 64, each of a (4096, 4096) f16 matrix's rows was read 128 bytes
  // at a time, a page apart, and its exact column sums took 2.9 times the plain ones on one
  // thread; with these blocks (and binades_of_rows) 1.0-1.3 times. Such a matrix makes 4 tasks,
  // which left 12 of the H200 host's 16 threads idle (6.9x the plain sums of f32 there): where
  // blocks of 1024 make fewer tasks than threads, they narrow to as many tasks as threads, down
  // to 256 columns (one thread took 1.23x as long with 256 as with 1024 for f32, 1.35x for f64).
  const std::size_t widest = std::min(width, sizeof(Column) > 256 && !is_exact_column<Column> ? std::size_t{64} : std::size_t{4096});
  const std::uint64_t row_tasks = p.batches * chunks;  // tasks before the columns are cut
  std::size_t narrowest = 16;
  if constexpr (is_exact_column<Column>) {
    const std::uint64_t per_thread = (threads_of(runner) + row_tasks - 1) / row_tasks;  // blocks for a task a thread
    narrowest = std::clamp<std::size_t>(((width + per_thread - 1) / per_thread + 15) / 16 * 16, 256, 1024);
  }
  std::size_t block = widest;
  if (row_tasks < kFewestTasks) {
    const std::size_t wanted = static_cast<std::size_t>((kFewestTasks + row_tasks - 1) / row_tasks);  // blocks
    block = std::clamp<std::size_t>(((width + wanted - 1) / wanted + 15) / 16 * 16, std::min(width, narrowest), widest);
  }
  const std::size_t blocks = (width + block - 1) / block;
  auto add = [&](std::uint64_t b, std::uint64_t r0, std::uint64_t r1, std::size_t j0, std::size_t n, Column* cols) {
    add_rows(x + p.in_offset(b), p, r0, r1, j0, n, cols);
  };
  auto finish = [&](std::uint64_t b, std::size_t j, const typename Column::Partial& v) {
    if (keep) (*keep)[b * width + j] = v;
    else Column::write(q, static_cast<std::size_t>(p.out_offset(b) + static_cast<std::int64_t>(j) * p.column_out), v, wide);
  };
  if (chunks == 1) {  // each task adds its columns' every row and writes them
    run_each(runner, p.batches * blocks, [&](std::size_t task) {
      const std::uint64_t b = task / blocks;
      const std::size_t j0 = task % blocks * block, n = std::min(block, width - j0);
      std::vector<Column> cols(n);
      add(b, 0, p.rows, j0, n, cols.data());
      for (std::size_t j = 0; j < n; ++j) finish(b, j0 + j, cols[j].partial());
    });
    return;
  }
  PerTask<typename Column::Partial> partial(p.batches * chunks * width);
  run_each(runner, p.batches * chunks * blocks, [&](std::size_t task) {
    const std::uint64_t b = task / (chunks * blocks), c = task / blocks % chunks;
    const std::size_t j0 = task % blocks * block, n = std::min(block, width - j0);
    const std::uint64_t r0 = std::min(p.rows, c * per_chunk), r1 = std::min(p.rows, r0 + per_chunk);
    std::vector<Column> cols(n);
    add(b, r0, r1, j0, n, cols.data());  // the last chunks may be empty: ceil(rows / chunks) rounds up
    for (std::size_t j = 0; j < n; ++j) partial[(b * chunks + c) * width + j0 + j] = cols[j].partial();
  });
  // Each column's chunks in order, as before, but the partials read row by row: column by
  // column, the reads went `width` partials apart and missed the cache each time. In blocks of
  // 256 columns at most, so that every thread folds: in the adding blocks (two for a (8192, 8192)
  // f32 matrix), two threads folded 64 chunks of 4096 columns each while the rest waited. On the
  // H200 host's 16 threads those column sums took 3.0 ms, and the same additions without the
  // fold 2.2 ms in a standalone test.
  const std::size_t fold_block = std::min<std::size_t>(block, 256), fold_blocks = (width + fold_block - 1) / fold_block;
  run_each(runner, p.batches * fold_blocks, [&](std::size_t task) {
    const std::uint64_t b = task / fold_blocks;
    const std::size_t j0 = task % fold_blocks * fold_block, n = std::min(fold_block, width - j0);
    std::vector<typename Column::Fold> folds(n);
    for (std::uint64_t c = 0; c < chunks; ++c)
      for (std::size_t j = 0; j < n; ++j) folds[j].push(partial[(b * chunks + c) * width + j0 + j]);
    for (std::size_t j = 0; j < n; ++j) finish(b, j0 + j, folds[j].result());
  });
}

template <class T>
Result columns_of(const Request& q, const ChunkRunner* runner, Accuracy accuracy, bool wide) {
  const Plan p{SplitView(q)};
  Result r;
  if (!q.ops.empty()) {
    // The core ops in one read; each statistic named among them in a read of its own, as if
    // alone: a column's accumulator is one type, fixed at compile time (SeveralColumn's four),
    // and the statistics a request names are known at run time only.
    for (Op op : all_ops) {
      if (!q.ops.contains(op) || is_core_op(op)) continue;
      Request one = q;
      one.ops = {};
      one.op = op;
      one.out = q.ops_out->values[static_cast<int>(op)];
      one.out_index = q.ops_out->indices[static_cast<int>(op)];
      columns_of<T>(one, runner, accuracy, wide);
    }
    if (std::any_of(core_ops.begin(), core_ops.end(), [&](Op op) { return q.ops.contains(op); }))
      run_columns<SeveralColumn<T>, T>(q, p, runner, nullptr);
    return r;
  }
  if (!is_core_op(q.op)) {
    ops::visit_statistic<T>(q.op, [&](auto f) { run_columns<StatisticColumn<T, decltype(f)>, T>(q, p, runner, nullptr, wide); });
    return r;
  }
  if constexpr (is_float_v<T>) {
    if (exact_sum(q.dtype, q.op, accuracy)) {
      // Layout outer hands its partials on (Reducer::reduce rounds them); the others round here.
      if (layout_of(q) != Layout::outer) {
        run_columns<ExactColumn<T>, T>(q, p, runner, nullptr);
        return r;
      }
      r.exact.resize(static_cast<std::size_t>(p.batches * static_cast<std::uint64_t>(p.column.extent)));
      run_columns<ExactColumn<T>, T>(q, p, runner, &r.exact);
      return r;
    }
  }
  switch (q.op) {  // wide: the sums' and products' accumulators, as f64
    case Op::sum: run_columns<SumColumn<T>, T>(q, p, runner, nullptr, wide); break;
    case Op::prod: run_columns<FoldColumn<T, ProdPolicy<T>>, T>(q, p, runner, nullptr, wide); break;
    case Op::sumsq: run_columns<FoldColumn<T, SquaresPolicy<T>>, T>(q, p, runner, nullptr, wide); break;
    case Op::min: run_columns<ExtremeColumn<false, T>, T>(q, p, runner, nullptr); break;
    case Op::max: run_columns<ExtremeColumn<true, T>, T>(q, p, runner, nullptr); break;
    case Op::argmin: run_columns<ArgColumn<false, T>, T>(q, p, runner, nullptr); break;
    case Op::argmax: run_columns<ArgColumn<true, T>, T>(q, p, runner, nullptr); break;
    default: break;
  }
  return r;
}

}  // namespace

bool runs_along_columns(const Request& q) {
  std::int64_t kept = -1, reduced = -1;  // the smallest |stride| of each kind, of extent above 1
  for (std::size_t k = 0; k < q.view.rank; ++k) {
    if (q.view.shape[k] <= 1) continue;
    std::int64_t& least = q.axes.contains(k) ? reduced : kept;
    const std::int64_t s = std::llabs(q.view.strides[k]);
    if (least < 0 || s < least) least = s;
  }
  return kept >= 0 && (reduced < 0 || kept < reduced);
}

Result reduce_host_columns(const Request& q, const ChunkRunner* runner, Accuracy accuracy, bool wide) {
  return visit_dtype(q.dtype, [&](auto tag) { return columns_of<decltype(tag)>(q, runner, accuracy, wide); });
}

}  // namespace xreduce::backend
