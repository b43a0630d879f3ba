// Segmented reductions on the CPU, balanced whatever the segments' lengths: the elements are cut
// into tiles of kChunkElements, the same for every thread count, and each tile reduces the
// segments that start in it. A segment that runs on past its tile leaves a partial there (its
// tail), and a partial in every later tile it covers (their carries); a second, short pass
// combines those in order. So a million rows of 16 and one row of 2^30 keep every thread busy
// alike, and the result is the same bits on every CPU backend and thread count.

#include "host_segments.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "view_walk.hpp"
#include "xreduce/backend/chunk_driver.hpp"
#include "xreduce/backend/features.hpp"
#include "cpu_kernels.hpp"
#include "exact_digits.hpp"
#include "exact_in_double.hpp"
#include "statistic_kernels.hpp"
#include "xreduce/error.hpp"
#include "xreduce/exact.hpp"

namespace xreduce::backend {
namespace {

using namespace xreduce::detail;  // the blocked kernels

constexpr std::size_t kTile = kChunkElements;

//! Where segment s begins: equal rows or offsets. begin(count) is where the last one ends.
struct Bounds {
  const std::uint64_t* offsets;
  std::uint64_t row_length;
  std::size_t count;
  std::uint64_t begin(std::size_t s) const { return offsets ? offsets[s] : s * row_length; }
  //! The first segment that begins at or after element p (count if none), for p <= begin(count).
  std::size_t first_from(std::uint64_t p) const {
    if (!offsets) return static_cast<std::size_t>((p + row_length - 1) / row_length);
    return static_cast<std::size_t>(std::lower_bound(offsets, offsets + count, p) - offsets);
  }
};

//! Checks that offsets never decrease and stay within the data, in parallel chunks.
void check_offsets(const Request& q, const ChunkRunner* runner) {
  const std::uint64_t* off = q.segments.offsets;
  const std::size_t n = q.segments.count;
  if (off[n] > q.count)
    throw Error(ErrorCode::invalid_argument, "segment offsets end at " + std::to_string(off[n]) + ", past the " +
                                                 std::to_string(q.count) + " elements");
  constexpr std::size_t kStep = kChunkElements;
  const std::size_t chunks = (n + kStep - 1) / kStep;
  std::vector<std::size_t> first_bad(chunks, n);
  run_each(runner, chunks, [&](std::size_t c) {
    for (std::size_t s = c * kStep, last = std::min(n, s + kStep); s < last; ++s)
      if (off[s + 1] < off[s]) {
        first_bad[c] = s;
        return;
      }
  });
  if (const std::size_t s = chunks ? *std::min_element(first_bad.begin(), first_bad.end()) : n; s < n)
    throw Error(ErrorCode::invalid_argument, "segment offsets decrease: offsets[" + std::to_string(s) + "] = " +
                                                 std::to_string(off[s]) + " > offsets[" + std::to_string(s + 1) +
                                                 "] = " + std::to_string(off[s + 1]));
}

//! Pieces up to this long take a plain loop: the blocked kernels' sixteen lanes and their tree
//! took more time than the loads of a row of 16 (9 against 22.8 GB/s flat on one core).
constexpr std::size_t kShortPiece = 32;

//! Where one op's per-segment results go: packed values of its result type, and indices
//! (argmin/argmax).
struct Outputs {
  void* values;
  std::uint64_t* indices;
};

//! What an op does with segments. Each provides acc (a piece's partial), piece(p, n, first) over
//! the n elements at p (element `first` of the request onwards), a Fold that combines pieces in
//! index order, write(out, s, acc, begin) and write_empty(out, s).
template <class T, class P>
struct FoldSegments {  // sums, products, sums of squares
  using acc = typename P::acc;
  bool wide = false;  //!< results as f64, the accumulator's value (Features::wide)
  static acc piece(const T* p, std::uint64_t n, std::uint64_t) {
    if (n <= kShortPiece) return short_piece(p, n);
    return whole_piece(p, n);
  }
  //! The flat kernel's partial (the same bits as the flat array's sum): a whole array's piece,
  //! where a short one too must give what the request of one op gives.
  static acc whole_piece(const T* p, std::uint64_t n) {
    // One leaf is what reduce_pairwise would return for it (the same bits), without its stack.
    return n <= kBlock ? reduce_leaf<P>(p, n) : reduce_pairwise<P>(p, n);
  }
  static acc short_piece(const T* x, std::size_t n) {
    using L = typename P::leaf;
    L lane[4] = {P::template identity<L>(), P::template identity<L>(), P::template identity<L>(), P::template identity<L>()};
    std::size_t i = 0;
    for (; i + 4 <= n; i += 4)
      for (std::size_t j = 0; j < 4; ++j) lane[j] = P::combine(lane[j], P::template lift<L>(x[i + j]));
    // The last one to three, each to its lane by a constant index: a variable one kept the lanes
    // in memory (rows of 7 cost 38 elements' time a row on the 2-core machine, 13-15 since).
    if (i < n) lane[0] = P::combine(lane[0], P::template lift<L>(x[i]));
    if (i + 1 < n) lane[1] = P::combine(lane[1], P::template lift<L>(x[i + 1]));
    if (i + 2 < n) lane[2] = P::combine(lane[2], P::template lift<L>(x[i + 2]));
    return static_cast<acc>(P::combine(P::combine(lane[0], lane[1]), P::combine(lane[2], lane[3])));
  }
  using Fold = PairwiseStack<P>;
  void write(const Outputs& o, std::size_t s, acc v, std::uint64_t) const { store_result<T, typename P::Op>(o.values, s, v, wide); }
  void write_empty(const Outputs& o, std::size_t s) const { write(o, s, P::identity(), 0); }
};

template <class T, bool kMax>
struct ExtremeSegments {
  using F = ops::Extreme<T, kMax>;
  using acc = T;
  static acc piece(const T* p, std::uint64_t n, std::uint64_t) {
    if (n > kShortPiece) return extreme<kMax>(p, n);
    RunningExtreme<kMax, T> e;  // short: a plain loop, not sixteen lanes to set up and fold
    for (std::uint64_t i = 0; i < n; ++i) e.add(p[i]);
    return e.result();
  }
  using Fold = Running<F>;
  static void write(const Outputs& o, std::size_t s, acc v, std::uint64_t) { static_cast<T*>(o.values)[s] = F::finish(v); }
  static void write_empty(const Outputs& o, std::size_t s) { write(o, s, F::identity(), 0); }
};

template <class T, bool kMax>
struct ArgSegments {
  using F = ops::Arg<T, kMax>;
  using acc = ops::ArgPair<T>;
  static acc piece(const T* p, std::uint64_t n, std::uint64_t first) {
    if (n > kShortPiece) return arg_extreme<kMax>(p, n, first);
    acc best{p[0], first};
    for (std::uint64_t i = 1; i < n; ++i) best = F{}(best, acc{p[i], first + i});
    return best;
  }
  using Fold = Running<F>;
  static void write(const Outputs& o, std::size_t s, acc v, std::uint64_t begin) {
    static_cast<T*>(o.values)[s] = F::finish(v);
    o.indices[s] = v.index - begin;
  }
  static void write_empty(const Outputs& o, std::size_t s) {
    static_cast<T*>(o.values)[s] = F::finish(F::identity());
    o.indices[s] = no_index;
  }
};

//! A statistic of the table (mean, var, the norms, the nan* ops, ...): each piece's partial by
//! statistic_run, folded pairwise in order, finished with the request's FinishArgs.
template <class T, class F>
struct StatisticSegments {
  using Policy = F;
  using acc = typename F::acc_t;
  ops::FinishArgs args;
  acc* kept = nullptr;  //!< where each result's partial goes too, if set (a flat var's Result::moments)
  bool wide = false;    //!< results as f64, unrounded (Features::wide)
  acc piece(const T* p, std::uint64_t n, std::uint64_t first) const { return statistic_run<F>(p, n, first); }
  using Fold = PairwiseStack<TablePolicy<F>>;
  void write(const Outputs& o, std::size_t s, const acc& v, std::uint64_t begin) const {
    if (kept) kept[s] = v;
    store_result<T, F>(o.values, s, v, wide, args);
    if constexpr (ops::has_index<F>) o.indices[s] = v.index == ops::no_element ? no_index : v.index - begin;
  }
  void write_empty(const Outputs& o, std::size_t s) const { write(o, s, F::identity(), 0); }
};

template <class T>
struct ExactSegments {  // Accuracy::exact sums: each segment's exact sum, rounded once
  //! A piece's exact sum: a double where that holds it exactly (f32, f16 and bf16 pieces whose
  //! elements' binades allow it: sum_in_double), or two (f64: sum_in_two_doubles), else the
  //! superaccumulator. (Short rows of f32 take ten digits rather than the superaccumulator:
  //! whole_rows. Pieces did too, in an acc of their own, but every row then paid for the larger
  //! acc: uniform f32 rows of 64 took 1.24x the time.)
  struct acc {
    double value = -0.0, rest = -0.0;  //!< the sum, value + rest (rest only for f64), while `sum` is empty
    //! On the heap, and only where the doubles do not hold the sum: an ExactSum in place (576
    //! bytes), though empty, was cleared for every row, and that was most of the time of rows of
    //! 4 (2^22 of f32, one thread: 81 ms with it, 23 without; a plain sum takes 3).
    std::unique_ptr<ExactSum> sum;
  };
  //! Pieces up to this long try the doubles first. Longer ones rarely fit them (a run of U(0, 1)
  //! spans about log2 n binades below 1, and the count adds log2 n bits), and they pay the
  //! superaccumulator's setup back: rows of 1024 f32 took 5.8 ms through the double and 7.2
  //! through the superaccumulator for 2^24 elements on one thread, rows of 4 110 and 924. f64's
  //! two doubles cost more an element (two passes, five additions): rows of 256 took the same
  //! time either way, rows of 1024 1.3 times as long through them.
  static constexpr std::uint64_t kMostInDouble = kMostWidened, kMostInTwoDoubles = 256;
  //! Rows up to this long that a double does not hold go to two doubles and their error bound,
  //! else ten digits (rounded_sum): from about here on the superaccumulator's runs take wide f32
  //! in less time where their fast path takes the binades (rows of 1024 of random sign, exponents
  //! 2^-60..2^60: 15.6 ms per 2^24 elements through it, 19.7 through two doubles, one thread of
  //! the 2-core Xeon; 0.6 ns an element on the 2-core EPYC, 1.4 through the digits). Where it does
  //! not (random bit patterns), rows of up to kMostInDouble take the two doubles first (rows of
  //! 4096: 17.4 ms, against 19.9 through the large accumulator), and the digits where those fail
  //! up to kMostInDigitsPastRuns (rows of 1024: 2.5 ns an element through the large accumulator,
  //! 1.4 through the digits on the EPYC; the two alike at 2048).
  static constexpr std::uint64_t kMostInDigits = 1023, kMostInDigitsPastRuns = 2047;
  //! f64 rows up to kMostInBoundedDoubles long that two doubles split around a power of two do not
  //! hold take two doubles and their error bound (round_by_error_bound) before the
  //! superaccumulator, and so do rows up to kMostInBoundedDoublesPastRuns whose binades span more
  //! than the superaccumulator's fast path takes. On one thread of the 2-core Xeon, 2^24 elements:
  //! uniform [0, 1) rows of 512 in 19 ms, against 61 through the superaccumulator; but rows of
  //! 1024 in 18.5 against 16 (its fast path), of 4096 18.6 against 14, so longer rows take the
  //! bound only past the fast path's binades: f64 of random sign over 2^-600..2^600, rows of 1024,
  //! 18 ms against 188 (the large accumulator's 32 KB of chunks, cleared and read back a row).
  static constexpr std::uint64_t kMostInBoundedDoubles = 512, kMostInBoundedDoublesPastRuns = 4096, kSampled = 64;
  static acc piece(const T* p, std::uint64_t n, std::uint64_t) {
    acc a;
    if constexpr (sums_in_double<T>) {
      if (n <= kMostInDouble && sum_in_double(p, n, a.value)) return a;
    } else if constexpr (std::is_same_v<T, double>) {
      if (n <= kMostInTwoDoubles && sum_in_two_doubles(p, n, a.value, a.rest)) return a;
    }
    a.sum = std::make_unique<ExactSum>();
    a.sum->add(p, n);
    return a;
  }
  struct Fold {
    ExactSum sum;
    void push(const acc& a) {
      if (a.sum) return void(sum += *a.sum);
      sum.add(a.value), sum.add(a.rest);
    }
    acc result() const { return {0.0, -0.0, std::make_unique<ExactSum>(sum)}; }
  };
  static void write(const Outputs& o, std::size_t s, const acc& v, std::uint64_t) {
    T* const values = static_cast<T*>(o.values);
    // Rounded once, from the exact sum: value + rest is exact for the types that have only a value
    // (rest -0 leaves it, and its zero's sign, as it is), rounded for f64.
    values[s] = v.sum ? v.sum->template round<T>() : T(v.value + v.rest);
  }
  static void write_empty(const Outputs& o, std::size_t s) { static_cast<T*>(o.values)[s] = ExactSum{}.round<T>(); }
  //! A segment that a tile holds whole (writes_whole_pieces): its exact sum written at once, with
  //! no acc (whose ExactSum, where the doubles do not hold the sum, is on the heap).
  static void write_whole(const Outputs& o, std::size_t s, const T* p, std::uint64_t n) {
    static_cast<T*>(o.values)[s] = rounded_sum(p, n);
  }
  //! The exact sum of x[0..n) (n >= 1), rounded once, as a piece's (in a double or two where they
  //! hold it, else the superaccumulator), but on the stack, and for f32 and bf16 (widened to f32,
  //! exactly) with one pass over the binades first. Where a double does not hold the sum but the
  //! elements are finite (hi 255: an infinity or a NaN, which the superaccumulator counts): two
  //! doubles, where the bound on their error settles the rounding (round_by_error_bound: all but
  //! sums within the bound of a tie or of zero); else, where fewer elements than the
  //! superaccumulator's runs pay back, ten digits (F32Digits: random-bit f32 rows of 64 took 4.8
  //! ns an element through an ExactSum, one at a time, 2.0 so). f64 rows: one pass over the
  //! fields, two doubles split around a power of two where they hold the sum, else two doubles
  //! and their bound (see kMostInBoundedDoubles), else the superaccumulator.
  static T rounded_sum(const T* x, std::uint64_t n) {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, bf16>) {
      if (n <= kMostInDouble) {
        [[maybe_unused]] float wide[std::is_same_v<T, float> ? 1 : kMostWidened];
        const float* const at = as_f32(x, n, wide);
        const F32Binades binades = binades_of<T>(at, n);
        if (binades.template fit<T>(n)) return T(n >= 64 ? sum_in_lanes<8>(at, n) : sum_in_lanes<4>(at, n));
        if (binades.hi == 255) return exact_sum(x, n);  // an infinity or a NaN: the superaccumulator counts them
        const bool past_runs = binades.hi - binades.lo > kMostBinadesOfFastRuns;  // (not all zeros: they fit)
        if (n <= kMostInDigits || past_runs) {
          if (T y; round_by_error_bound(at, n, binades.hi, y)) return y;
          if (n <= kMostInDigitsPastRuns) {  // (past kMostInDigits only rows past the runs get here)
            F32Digits digits;
            digits.add(at, n);
            return digits.template round<T>();
          }
        }
      }
    } else if constexpr (sums_in_double<T>) {
      double sum;
      if (n <= kMostInDouble && sum_in_double(x, n, sum)) return T(sum);
    } else if (n <= kMostInBoundedDoublesPastRuns) {
      std::uint32_t lowest, highest;
      auto past_runs = [&] { return lowest <= highest && highest - lowest > kMostBinadesOfFastF64Runs; };  // (lowest > highest: zeros)
      // Past kMostInBoundedDoubles, the first kSampled elements' span decides first, so that rows
      // that the fast path takes are not read once more for their fields (2^24 uniform f64, one
      // thread of the 2-core Xeon, rows of 1024: 21 ms with that pass, 16 without).
      if (n > kMostInBoundedDoubles) {
        f64_fields_of(x, kSampled, lowest, highest);
        if (highest == 2047 || !past_runs()) return exact_sum(x, n);
      }
      f64_fields_of(x, n, lowest, highest);
      if (highest == 2047) return exact_sum(x, n);  // an infinity or a NaN: the superaccumulator counts them
      double hi, lo, rounded;
      if (n <= kMostInTwoDoubles && two_doubles_given(x, n, lowest, highest, hi, lo)) return hi + lo;  // rounded once, as write's
      if ((n <= kMostInBoundedDoubles || past_runs()) && round_by_error_bound(x, n, highest, rounded)) return rounded;
    }
    return exact_sum(x, n);
  }
  static T exact_sum(const T* x, std::uint64_t n) {
    ExactSum sum;
    sum.add(x, n);
    return sum.template round<T>();
  }

  //! Rows s..stop-1 of `length` elements at p (f32 and f64: writes_whole_rows), whose elements'
  //! binades, taken together, let every row's sum be exact in a double (f32) or two (f64): each
  //! row's sum written, and true; false, writing nothing, where they do not (each row then tries
  //! on its own, piece). One check for a step of rows: a short row checked on its own cost more
  //! than its sum (2^24 elements, one thread of the 2-core EPYC: rows of 4 took 7.6x a plain
  //! sum's time for f32 and 7.2x for f64; 1.6-2.1x and 1.8x so, and rows of 16 2.5x and 3.8x, now
  //! 1.9x and 1.5x). The lengths users have most are constants, so that each row's loop unrolls.
  static bool whole_rows(const T* p, std::size_t s, std::size_t stop, std::size_t length, const Outputs& o) {
    switch (length) {
      case 2: return whole_rows_of<2>(p, s, stop, length, o);
      case 4: return whole_rows_of<4>(p, s, stop, length, o);
      case 8: return whole_rows_of<8>(p, s, stop, length, o);
      case 16: return whole_rows_of<16>(p, s, stop, length, o);
      default: return whole_rows_of<0>(p, s, stop, length, o);
    }
  }
  //! whole_rows for rows of kLength elements (0: `length`).
  template <std::size_t kLength>
  static bool whole_rows_of(const T* p, std::size_t s, std::size_t stop, std::size_t length, const Outputs& o) {
    const std::size_t L = kLength ? kLength : length, rows = stop - s, n = rows * L;
    T* const values = static_cast<T*>(o.values) + s;
    if constexpr (std::is_same_v<T, float>) {
      if (binades_of<float>(p, n).template fit<float>(L)) {
        for (std::size_t r = 0; r < rows; ++r, p += L) values[r] = static_cast<float>(sum_in_lanes<4>(p, L));
        return true;
      }
      for (std::size_t r = 0; r < rows; ++r, p += L) values[r] = rounded_sum(p, L);  // row by row
      return true;
    } else {
      static_assert(std::is_same_v<T, double>, "writes_whole_rows names the types whole_rows takes");
      std::uint32_t lowest, highest;
      f64_fields_of(p, n, lowest, highest);
      const int c = static_cast<int>(std::bit_width(L - 1));
      if (highest == 2047 || lowest > highest || !two_doubles_fit(highest, lowest, c)) return false;
      two_doubles_rows<kLength>(p, rows, L, two_doubles_sigma(highest, c), values);  // the step's sigma bounds every row's
      return true;
    }
  }
};

//! Whether Seg writes a step of short rows at once where it can (whole_rows).
template <class Seg>
inline constexpr bool writes_whole_rows = false;
template <class T>
inline constexpr bool writes_whole_rows<ExactSegments<T>> = std::is_same_v<T, float> || std::is_same_v<T, double>;
//! Whether Seg writes a segment that a tile holds whole at once (write_whole), with no acc.
template <class Seg>
inline constexpr bool writes_whole_pieces = false;
template <class T>
inline constexpr bool writes_whole_pieces<ExactSegments<T>> = true;

//! One statistic's partial among several ops: its op and the bytes of its acc_t. Each statistic
//! has a partial type of its own, and which ones a request names is known at run time only.
//! `present` is false for no partial yet (the identity of every op at once).
struct StatisticPartial {
  alignas(8) unsigned char bytes[24];
  Op op;
  bool present;
};

template <class F>
StatisticPartial pack(const typename F::acc_t& a) {
  static_assert(sizeof a <= sizeof(StatisticPartial::bytes) && std::is_trivially_copyable_v<typename F::acc_t>);
  StatisticPartial p{{}, F::op, true};
  std::memcpy(p.bytes, &a, sizeof a);
  return p;
}
template <class F>
typename F::acc_t unpack(const StatisticPartial& p) {
  typename F::acc_t a;
  std::memcpy(&a, p.bytes, sizeof a);
  return a;
}

//! StatisticPartial as an accumulation policy (PairwiseStack): each op's own combine, so that a
//! fold of them gives the bits of StatisticSegments' fold of that op alone.
template <class T>
struct StatisticPartialPolicy {
  using acc = StatisticPartial;
  static acc identity() { return {{}, Op::mean, false}; }
  static acc combine(const acc& a, const acc& b) {
    if (!a.present) return b;
    if (!b.present) return a;
    return ops::visit_statistic<T>(a.op, [&](auto f) {
      using F = decltype(f);
      return pack<F>(F{}(unpack<F>(a), unpack<F>(b)));
    });
  }
};

//! The statistics (ops past the core ones) a request of several ops can name.
inline constexpr std::size_t kStatisticOps = all_ops.size() - core_ops.size();
struct NoStatistics {};

//! Whether `ops` names a statistic (mean, var, the norms, the nan* ops, ...).
constexpr bool names_statistic(OpSet ops) {
  for (Op op : all_ops)
    if (ops.contains(op) && !is_core_op(op)) return true;
  return false;
}

//! Several ops in one read (Request::ops): each tile's piece of a segment is read from memory
//! once, by the first op's kernel; the others run over it in the cache. Each op is its own Seg
//! (the statistics StatisticSegments), so it gives the same bits as that op alone, and writes to
//! its own Request::ops_out. kStatistics: whether the request names statistics, whose partials
//! (StatisticPartial, one for mean, var and std together) the core ops' requests do without.
template <class T, bool kStatistics>
class SeveralSegments {
 public:
  using Sum = FoldSegments<T, SumPolicy<T>>;
  using Squares = FoldSegments<T, SquaresPolicy<T>>;
  using Min = ExtremeSegments<T, false>;
  using Max = ExtremeSegments<T, true>;
  using ArgMin = ArgSegments<T, false>;
  using ArgMax = ArgSegments<T, true>;
  using Statistics = std::conditional_t<kStatistics, std::array<StatisticPartial, kStatisticOps>, NoStatistics>;
  using StatisticFolds =
      std::conditional_t<kStatistics, std::array<PairwiseStack<StatisticPartialPolicy<T>>, kStatisticOps>, NoStatistics>;
  struct acc {
    typename Sum::acc sum{};
    typename Min::acc min{};
    typename Max::acc max{};
    typename ArgMin::acc argmin{};
    typename ArgMax::acc argmax{};
    typename Squares::acc squares{};
    [[no_unique_address]] Statistics statistics{};  // the k-th partial computed (computed_) at k
  };

  //! `whole`: the request is a flat array, one segment of it all.
  SeveralSegments(OpSet ops, const OpsOut& out, double correction, bool whole) : ops_(ops), args_{correction}, whole_(whole) {
    for (Op op : all_ops) {
      out_[static_cast<int>(op)] = {out.values[static_cast<int>(op)], out.indices[static_cast<int>(op)]};
      if (!ops.contains(op) || is_core_op(op)) continue;
      const Op source = partial_of(op, ops);
      std::size_t k = 0;
      while (k < computed_count_ && computed_[k] != source) ++k;
      if (k == computed_count_) computed_[computed_count_++] = source;
      named_[named_count_++] = {op, k};
    }
  }

  acc piece(const T* p, std::uint64_t n, std::uint64_t first) const {
    acc r;
    if (whole_ && n <= kShortPiece) {  // a short flat array: its sums as the flat kernel's
      if (ops_.contains(Op::sum)) r.sum = Sum::whole_piece(p, n);
      if (ops_.contains(Op::sumsq)) r.squares = Squares::whole_piece(p, n);
    } else {
      if (ops_.contains(Op::sum)) r.sum = Sum::piece(p, n, first);
      if (ops_.contains(Op::sumsq)) r.squares = Squares::piece(p, n, first);
    }
    if (ops_.contains(Op::min)) r.min = Min::piece(p, n, first);
    if (ops_.contains(Op::max)) r.max = Max::piece(p, n, first);
    if (ops_.contains(Op::argmin)) r.argmin = ArgMin::piece(p, n, first);
    if (ops_.contains(Op::argmax)) r.argmax = ArgMax::piece(p, n, first);
    if constexpr (kStatistics)
      for (std::size_t k = 0; k < computed_count_; ++k)
        r.statistics[k] = with_statistic(computed_[k], [&](auto seg) { return pack<typename decltype(seg)::Policy>(seg.piece(p, n, first)); });
    return r;
  }
  struct Fold {  // every op's fold; those not asked for fold their zeros
    typename Sum::Fold sum;
    typename Min::Fold min;
    typename Max::Fold max;
    typename ArgMin::Fold argmin;
    typename ArgMax::Fold argmax;
    typename Squares::Fold squares;
    StatisticFolds statistics;
    void push(const acc& v) {
      sum.push(v.sum), min.push(v.min), max.push(v.max), argmin.push(v.argmin), argmax.push(v.argmax), squares.push(v.squares);
      if constexpr (kStatistics)
        for (std::size_t k = 0; k < kStatisticOps && v.statistics[k].present; ++k) statistics[k].push(v.statistics[k]);
    }
    acc result() const {
      acc r;
      r.sum = sum.result(), r.min = min.result(), r.max = max.result();
      r.argmin = argmin.result(), r.argmax = argmax.result(), r.squares = squares.result();
      if constexpr (kStatistics)
        for (std::size_t k = 0; k < kStatisticOps; ++k) r.statistics[k] = statistics[k].result();
      return r;
    }
  };
  void write(const Outputs&, std::size_t s, const acc& v, std::uint64_t begin) const {
    if (ops_.contains(Op::sum)) Sum{}.write(of(Op::sum), s, v.sum, begin);
    if (ops_.contains(Op::min)) Min::write(of(Op::min), s, v.min, begin);
    if (ops_.contains(Op::max)) Max::write(of(Op::max), s, v.max, begin);
    if (ops_.contains(Op::argmin)) ArgMin::write(of(Op::argmin), s, v.argmin, begin);
    if (ops_.contains(Op::argmax)) ArgMax::write(of(Op::argmax), s, v.argmax, begin);
    if (ops_.contains(Op::sumsq)) Squares{}.write(of(Op::sumsq), s, v.squares, begin);
    if constexpr (kStatistics)
      for (std::size_t j = 0; j < named_count_; ++j) {
        const Op op = named_[j].first;  // not a structured binding: lambdas capture those from C++20 (Clang 16) on
        const std::size_t k = named_[j].second;
        with_statistic(op, [&](auto seg) { seg.write(of(op), s, unpack<typename decltype(seg)::Policy>(v.statistics[k]), begin); });
      }
  }
  void write_empty(const Outputs&, std::size_t s) const {
    if (ops_.contains(Op::sum)) Sum{}.write_empty(of(Op::sum), s);
    if (ops_.contains(Op::min)) Min::write_empty(of(Op::min), s);
    if (ops_.contains(Op::max)) Max::write_empty(of(Op::max), s);
    if (ops_.contains(Op::argmin)) ArgMin::write_empty(of(Op::argmin), s);
    if (ops_.contains(Op::argmax)) ArgMax::write_empty(of(Op::argmax), s);
    if (ops_.contains(Op::sumsq)) Squares{}.write_empty(of(Op::sumsq), s);
    if constexpr (kStatistics)
      for (std::size_t j = 0; j < named_count_; ++j) {
        const Op op = named_[j].first;
        with_statistic(op, [&](auto seg) { seg.write_empty(of(op), s); });
      }
  }

 private:
  //! Calls `fn` with the StatisticSegments of statistic `op`, finished with the request's correction.
  template <class Fn>
  decltype(auto) with_statistic(Op op, Fn&& fn) const {
    return ops::visit_statistic<T>(op, [&](auto f) { return fn(StatisticSegments<T, decltype(f)>{args_, nullptr, false}); });
  }
  //! The statistic whose partial gives `op`'s result: mean, var and std share the moments (a
  //! var's, with the squares, if var or std is named: its count and sum, which the mean reads,
  //! are the bits of the mean's own), as nanmean, nanvar and nanstd do; the others their own.
  static Op partial_of(Op op, OpSet ops) {
    const Op base = without_nan(op);
    if (base != Op::mean && base != Op::var && base != Op::std) return op;
    const bool nan = op != base;
    const bool squares = ops.contains(nan ? Op::nanvar : Op::var) || ops.contains(nan ? Op::nanstd : Op::std);
    return squares ? (nan ? Op::nanvar : Op::var) : op;
  }
  const Outputs& of(Op op) const { return out_[static_cast<int>(op)]; }
  OpSet ops_;
  ops::FinishArgs args_;
  bool whole_;
  Outputs out_[all_ops.size()];
  std::array<Op, kStatisticOps> computed_{};  // the partials computed, each once: k-th in acc::statistics[k]
  std::size_t computed_count_ = 0;
  std::array<std::pair<Op, std::size_t>, kStatisticOps> named_{};  // each statistic named, and its partial's k
  std::size_t named_count_ = 0;
};

//! Calls `fn` with the SeveralSegments of request q (of elements T): with the statistics' partials
//! only where it names a statistic.
template <class T, class Fn>
decltype(auto) with_several(const Request& q, bool whole, Fn&& fn) {
  if (names_statistic(q.ops)) return fn(SeveralSegments<T, true>(q.ops, *q.ops_out, q.correction, whole));
  return fn(SeveralSegments<T, false>(q.ops, *q.ops_out, q.correction, whole));
}

//! A strided view's elements in the order of its results' rows (one row of `per_result` elements
//! each), gathered a tile at a time into a buffer the tile then reads as memory.
class Gather {
 public:
  explicit Gather(const Request& q) : split_(q), x_(q.data) {}
  const SplitView& split() const { return split_; }
  //! Row-order elements [lo, hi) into `out`: runs along the last reduced axis at a time.
  template <class T>
  void fill(T* out, std::uint64_t lo, std::uint64_t hi) const {
    const T* x = static_cast<const T*>(x_);
    const std::uint64_t n = split_.per_result;
    const std::int64_t step = split_.reduced.back().stride;
    Odometer result(split_.kept, lo / n), row(split_.reduced, lo % n);
    std::uint64_t r = lo % n;
    for (std::uint64_t i = lo; i < hi;) {
      const auto run = static_cast<std::uint64_t>(std::min<std::int64_t>(row.left_along_last(), static_cast<std::int64_t>(hi - i)));
      const T* from = x + result.offset() + row.offset();
      if (step == 1) std::memcpy(out, from, run * sizeof(T));
      else
        for (std::uint64_t j = 0; j < run; ++j) out[j] = from[static_cast<std::int64_t>(j) * step];
      out += run, i += run, r += run;
      row.advance(static_cast<std::int64_t>(run));
      if (r == n) r = 0, result.next();  // the row is done: on to the next result's
    }
  }

 private:
  SplitView split_;
  const void* x_;
};

//! Whether rows of the lengths users have most get a loop of their own, the length a constant
//! (reduce_tiles): a core op's piece then unrolls to straight code. A statistic's piece ran no
//! faster so (rows of 4 and 16 of f32, one thread, the 2-core build machine: mean, var, nanmax
//! and norm2 within noise), and those copies of every statistic's loop, and of several ops'
//! and the exact sums', for every element type, were a third of this file's compile time (197 s
//! at -O3 with them, 130 s without).
template <class Seg>
inline constexpr bool unrolls_short_rows = false;
template <class T, class P>
inline constexpr bool unrolls_short_rows<FoldSegments<T, P>> = true;
template <class T, bool kMax>
inline constexpr bool unrolls_short_rows<ExtremeSegments<T, kMax>> = true;
template <class T, bool kMax>
inline constexpr bool unrolls_short_rows<ArgSegments<T, kMax>> = true;

template <class T, class Seg>
void reduce_tiles(const T* x, const Bounds& b, const Outputs& out, const ChunkRunner* runner, const Seg& seg = {},
                  const Gather* gather = nullptr) {
  const std::size_t count = b.count;
  const std::uint64_t first = b.begin(0), end = b.begin(count);
  const std::size_t tiles = static_cast<std::size_t>((end - first + kTile - 1) / kTile);
  if (tiles == 0) {  // every segment is empty
    run_each(runner, (count + kTile - 1) / kTile, [&](std::size_t c) {
      for (std::size_t s = c * kTile, last = std::min(count, s + kTile); s < last; ++s) seg.write_empty(out, s);
    });
    return;
  }
  constexpr std::size_t none = std::numeric_limits<std::size_t>::max();
  PerTask<typename Seg::acc> carry(tiles), tail(tiles);
  std::vector<std::size_t> carried(tiles, none), tail_of(tiles, none);  // the segment each partial belongs to
  run_each(runner, tiles, [&](std::size_t t) {
    const std::uint64_t lo = first + t * kTile, hi = std::min(end, lo + kTile);
    // Element i of the tile is at tile[i - base]: in memory, or gathered into this thread's buffer.
    const T* tile = x;
    std::uint64_t base = 0;
    if (gather) {
      thread_local const std::unique_ptr<T[]> buffer(new T[kTile]);  // not a vector: vector<bool> has no data()
      gather->fill(buffer.get(), lo, hi);
      tile = buffer.get();
      base = lo;
    }
    auto piece = [&](std::uint64_t a, std::uint64_t e) { return seg.piece(tile + (a - base), e - a, a); };
    auto write_whole = [&](std::size_t s, std::uint64_t a, std::uint64_t e) {  // segment s = [a, e), in the tile
      if constexpr (writes_whole_pieces<Seg>) seg.write_whole(out, s, tile + (a - base), e - a);
      else seg.write(out, s, piece(a, e), a);
    };
    const std::size_t own = b.first_from(lo), own_end = t + 1 < tiles ? b.first_from(hi) : count;
    if (own > 0 && b.begin(own) > lo) {  // the segment before the first it owns runs into this tile
      carry[t] = piece(lo, std::min<std::uint64_t>(b.begin(own), hi));
      carried[t] = own - 1;
    }
    std::size_t s = own;
    // Short equal rows the tile holds whole: no lookups, no checks for a tail or an empty row
    // (rows of 16 on one thread: 72% of the flat sum's rate with them, 77-79% without).
    // The lengths users have most (1, 2, 4, 8, 16) as constants, so that each row's loop unrolls
    // to straight code: a row's setup, not its loads, is what short rows cost (2^20 rows of 1 on
    // one thread: 4.4 ms with the length a variable, 0.11-0.18 ms as a constant; rows of 4 3x).
    auto short_rows = [&](auto length) {
      const std::uint64_t L = length;
      const std::size_t whole_end = std::min<std::size_t>(own_end, static_cast<std::size_t>((hi - first) / L));
      // Prefetched 4 KB ahead, for a step of rows (about 512 bytes) at a time: the rows' short
      // loops leave the core too few loads in flight to keep up with memory on their own (rows of
      // 16 on one thread: 77% of the flat sum's rate without, 83-93% with).
      constexpr std::size_t kAhead = 4096, kStep = 512;
      const std::size_t step = std::max<std::size_t>(1, kStep / (L * sizeof(T)));
      // Addresses as integers: the lines ahead may lie past the data (a prefetch never faults).
      // (A gathered tile is in the cache already.)
      std::uintptr_t line = reinterpret_cast<std::uintptr_t>(x + s * L) + kAhead;
      while (s < whole_end) {
        const std::size_t stop = std::min(whole_end, s + step);
        if (!gather)
          for (const std::uintptr_t end = reinterpret_cast<std::uintptr_t>(x + stop * L) + kAhead; line < end; line += 64)
            __builtin_prefetch(reinterpret_cast<const void*>(line));
        if constexpr (writes_whole_rows<Seg>)
          if (seg.whole_rows(tile + (s * L - base), s, stop, length, out)) {
            s = stop;
            continue;
          }
        for (; s < stop; ++s) write_whole(s, s * L, s * L + L);
      }
    };
    if (!b.offsets && b.row_length > 0 && b.row_length <= kShortPiece) {
      if constexpr (!unrolls_short_rows<Seg>) short_rows(b.row_length);
      else switch (b.row_length) {
        case 1: short_rows(std::integral_constant<std::uint64_t, 1>{}); break;
        case 2: short_rows(std::integral_constant<std::uint64_t, 2>{}); break;
        case 4: short_rows(std::integral_constant<std::uint64_t, 4>{}); break;
        case 8: short_rows(std::integral_constant<std::uint64_t, 8>{}); break;
        case 16: short_rows(std::integral_constant<std::uint64_t, 16>{}); break;
        default: short_rows(b.row_length);
      }
    }
    for (; s < own_end; ++s) {
      const std::uint64_t bs = b.begin(s), es = b.begin(s + 1);
      if (es > hi) {  // only the last it owns can run on
        tail[t] = piece(bs, hi);
        tail_of[t] = s;
      } else if (es == bs) {
        seg.write_empty(out, s);
      } else {
        write_whole(s, bs, es);
      }
    }
  });
  run_each(runner, (tiles + 63) / 64, [&](std::size_t c) {
    for (std::size_t t = c * 64, last = std::min(tiles, t + 64); t < last; ++t) {
      const std::size_t s = tail_of[t];
      if (s == none) continue;
      typename Seg::Fold fold;
      fold.push(tail[t]);
      for (std::size_t u = t + 1; u < tiles && carried[u] == s; ++u) fold.push(carry[u]);
      seg.write(out, s, fold.result(), b.begin(s));
    }
  });
}

}  // namespace

Result reduce_host_stats(const Request& q, const ChunkRunner* runner) {
  // One array is one segment of it all: its tiles' partials fold in order, as the flat sum's do.
  const Bounds whole{nullptr, q.count, 1};
  visit_dtype(q.dtype, [&](auto tag) {
    using T = decltype(tag);
    with_several<T>(q, true, [&](const auto& several) { reduce_tiles<T>(static_cast<const T*>(q.data), whole, Outputs{}, runner, several); });
  });
  return Result{};  // the values are in q.ops_out; Reducer::reduce fills the rest
}

namespace {

//! Statistic q.op of rows `b` (a whole array: one row) into `out`; the moments of a mean, var or
//! std go to `moments` too, one a row, if it is set.
template <class T>
void statistic_rows(const Request& q, const Bounds& b, const Outputs& out, const ChunkRunner* runner, bool wide, const Gather* g,
                    Moments* moments = nullptr) {
  const ops::FinishArgs args{q.correction};
  ops::visit_statistic<T>(q.op, [&](auto f) {
    using F = decltype(f);
    typename F::acc_t* kept = nullptr;
    if constexpr (std::is_same_v<typename F::acc_t, Moments>) kept = moments;
    reduce_tiles<T>(static_cast<const T*>(q.data), b, out, runner, StatisticSegments<T, F>{args, kept, wide}, g);
  });
}

}  // namespace

Result reduce_host_statistic(const Request& q, const ChunkRunner* runner, bool wide) {
  const Bounds whole{nullptr, q.count, 1};
  Result r;
  std::uint64_t index = no_index;
  return visit_dtype(q.dtype, [&](auto tag) {
    using T = decltype(tag);
    std::uint64_t value = 0;  // 8 bytes hold any result type
    // var and std hand on their moments (Result::moments): a combine of parts (MPI ranks) then
    // needs no second read for the mean.
    const bool keeps_moments = q.op == Op::var || q.op == Op::std;
    Moments moments{};
    statistic_rows<T>(q, whole, Outputs{&value, &index}, runner, wide, nullptr, keeps_moments ? &moments : nullptr);
    const DType type = wide ? DType::f64 : result_dtype(q.dtype, q.op);
    r.value = Scalar::from_bytes(type, &value);
    if (returns_index(q.op)) r.index = index;
    if (keeps_moments) r.moments = moments;
    return r;
  });
}

Result reduce_host_segments(const Request& q, const ChunkRunner* runner, Accuracy accuracy, bool wide) {
  // Ragged segments at their offsets; a view's rows: equal rows in memory (layout inner), or
  // each result's elements gathered (a strided view whose smallest stride is reduced).
  const Layout layout = layout_of(q);
  std::optional<Gather> gather;
  Bounds b{q.segments.offsets, 0, q.segments.count};
  if (layout == Layout::ragged) check_offsets(q, runner);
  else if (layout == Layout::inner) b = Bounds{nullptr, static_cast<std::uint64_t>(q.view.shape[1]), static_cast<std::size_t>(q.view.shape[0])};
  else gather.emplace(q), b = Bounds{nullptr, gather->split().per_result, static_cast<std::size_t>(gather->split().results)};
  const Gather* g = gather ? &*gather : nullptr;
  const Outputs out{q.out, q.out_index};
  visit_dtype(q.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* x = static_cast<const T*>(q.data);
    if (!q.ops.empty()) return with_several<T>(q, false, [&](const auto& several) { reduce_tiles<T>(x, b, out, runner, several, g); });
    if (!is_core_op(q.op)) return statistic_rows<T>(q, b, out, runner, wide, g);
    if constexpr (is_float_v<T>)
      if (exact_sum(q.dtype, q.op, accuracy)) return reduce_tiles<T, ExactSegments<T>>(x, b, out, runner, {}, g);
    switch (q.op) {  // wide: the sums' and products' accumulators, as f64
      case Op::sum: return reduce_tiles<T, FoldSegments<T, SumPolicy<T>>>(x, b, out, runner, {wide}, g);
      case Op::prod: return reduce_tiles<T, FoldSegments<T, ProdPolicy<T>>>(x, b, out, runner, {wide}, g);
      case Op::sumsq: return reduce_tiles<T, FoldSegments<T, SquaresPolicy<T>>>(x, b, out, runner, {wide}, g);
      case Op::min: return reduce_tiles<T, ExtremeSegments<T, false>>(x, b, out, runner, {}, g);
      case Op::max: return reduce_tiles<T, ExtremeSegments<T, true>>(x, b, out, runner, {}, g);
      case Op::argmin: return reduce_tiles<T, ArgSegments<T, false>>(x, b, out, runner, {}, g);
      case Op::argmax: return reduce_tiles<T, ArgSegments<T, true>>(x, b, out, runner, {}, g);
      default: break;
    }
  });
  return Result{};  // the values are in q.out; Reducer::reduce fills the rest
}

}  // namespace xreduce::backend
