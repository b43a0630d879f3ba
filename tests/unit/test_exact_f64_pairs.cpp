// The arithmetic of the GPU's exact f64 rows and segments (backends/cuda/kernels/exact_f64_pairs.hpp),
// on the host, where no GPU is needed: a segment's pairs, built as the kernels build them (each
// element to the pair its exponent field picks, in lanes, the lanes folded in a random order),
// settle its rounding only with MPFR's bits; and ExactSum's words, rounded as the second launch
// rounds them, are MPFR's sum. The GPU tests run the kernels themselves on the same shapes.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "../../backends/cuda/kernels/exact_f64_pairs.hpp"
#include "support/exact_data.hpp"
#include "support/mpfr_reference.hpp"
#include "support/test_data.hpp"

namespace xr = xreduce;
using xr::test::ExactShape;

namespace {

//! x's partial as the segments kernels build it (F64Partial::add, as Accumulator<ExactSegmentSumF64>
//! and the fold call it): each element to one of `lanes` lanes (at random), then the lanes folded
//! two at a time in a random order, as any tree of shuffles and chunks may fold them.
xr::cuda::F64Partial partial_of(const std::vector<double>& x, std::size_t lanes, std::mt19937_64& rng) {
  const xr::cuda::F64Partial identity{{-0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}, 0u};
  std::vector<xr::cuda::F64Partial> lane(lanes, identity);
  for (double v : x) lane[rng() % lanes].add(v);
  while (lane.size() > 1) {
    const std::size_t i = rng() % lane.size(), j = (i + 1 + rng() % (lane.size() - 1)) % lane.size();
    lane[i].add(lane[j]);
    lane.erase(lane.begin() + static_cast<std::ptrdiff_t>(j));
  }
  return lane[0];
}

//! Values of the top binades (2^1016 to 2^1024) of random sign: a pair that held them unscaled
//! would pass 2^1024 on the way in most segments; their exact sum often does too.
std::vector<double> top_binades(std::size_t n, std::mt19937_64& rng) {
  std::vector<double> v(n);
  for (double& x : v) x = (rng() % 2 ? 1.0 : -1.0) * std::ldexp(1.0 + static_cast<double>(rng() >> 12) * 0x1p-52, 1016 + static_cast<int>(rng() % 8));
  return v;
}

//! T (double, float, bf16) as the double it is, exactly (bf16 through the float it widens to).
template <class T>
double as_double(T x) {
  if constexpr (std::is_same_v<T, double>) return x;
  else return static_cast<double>(static_cast<float>(x));
}

//! Values of T whose exact sum lies near T's threshold of overflow (the largest T plus half its
//! ulp, 2^h: 2^970, 2^103 or 2^119), on either side: the largest T, elements of random sign from
//! 2^(h - 70) to 2^(h - 2) (double) or 2^(h - 44) to 2^(h - 3) (float, bf16), and 2^h less their
//! sum, rounded to T (so that its rounding error is left).
template <class T>
std::vector<T> at_overflow(std::size_t n, std::mt19937_64& rng) {
  constexpr int kHalfUlp = std::is_same_v<T, double> ? 970 : std::is_same_v<T, float> ? 103 : 119;
  constexpr int kLowest = std::is_same_v<T, double> ? kHalfUlp - 70 : kHalfUlp - 44, kSpan = std::is_same_v<T, double> ? 69 : 42;
  std::vector<T> v(n < 3 ? 3 : n);
  double rest = 0;
  for (std::size_t i = 2; i < v.size(); ++i) {
    v[i] = T((rng() % 2 ? 1.0 : -1.0) * std::ldexp(1.0 + static_cast<double>(rng() >> 12) * 0x1p-52, kLowest + static_cast<int>(rng() % kSpan)));
    rest += as_double(v[i]);
  }
  v[0] = std::numeric_limits<T>::max();
  v[1] = T(std::ldexp(1.0, kHalfUlp) - as_double(T(rest)));
  std::shuffle(v.begin(), v.end(), rng);
  return v;
}

//! Values of T of its precision's bits at most (multiples of 2^-p in (-1, 1): p = 53, 24 or 8):
//! their sums are often ties of T, which only a bound of 0 (no rounding of the pair's errors)
//! settles.
template <class T>
std::vector<T> few_bits(std::size_t n, std::mt19937_64& rng) {
  constexpr int p = std::is_same_v<T, double> ? 53 : xr::cuda::kNarrowPrecision<T>;
  std::vector<T> v(n);
  for (T& x : v) x = T(std::ldexp(static_cast<double>(rng() >> (64 - p)), -p) * (rng() % 2 ? 1.0 : -1.0));
  return v;
}

template <class T>
std::vector<T> exact_data_of(ExactShape shape, std::size_t n, std::mt19937_64& rng) {
  if constexpr (sizeof(T) >= 4) return xr::test::make_exact_data<T>(shape, n, rng);
  else return xr::test::make_exact_data16<T>(shape, n, rng);
}

//! The pairs' rounding to T (rounded_by_pairs: of double, rounded_by_error_bound), against MPFR,
//! on every data shape, the top binades (double), few-bit data (ties) and sums at T's threshold of
//! overflow, each element to one of up to 40 lanes folded in a random order; and, for float and
//! bf16, the digits' rounding to T (round_exact_words_as, the views' second launch).
template <class T>
void check_pairs_rounding(std::uint64_t salt) {
  std::mt19937_64 rng(xr::test::run_seed() ^ salt);
  const bool quick = std::getenv("XREDUCE_TEST_QUICK") != nullptr;
  const std::size_t cases = quick ? 1500 : 6000;
  constexpr bool kDouble = std::is_same_v<T, double>;
  constexpr std::size_t kShapes = std::size(xr::test::all_exact_shapes), kTop = kShapes, kFewBits = kTop + (kDouble ? 1 : 0),
                        kAtOverflow = kFewBits + 1;
  std::size_t settled_ordinary = 0, ordinary = 0, overflowed = 0, below_overflow = 0, unsettled_at_overflow = 0;
  auto one_case = [&](std::size_t c, std::size_t kind) {
    const std::size_t n = 1 + (rng() % 4 == 0 ? rng() % 1500 : rng() % 40);
    ExactShape shape = ExactShape::uniform;
    std::vector<T> x;
    if (kind < kShapes) shape = xr::test::all_exact_shapes[kind], x = exact_data_of<T>(shape, n, rng);
    else if constexpr (kDouble) x = kind == kTop ? top_binades(n, rng) : kind == kFewBits ? few_bits<T>(n, rng) : at_overflow<T>(n, rng);
    else x = kind == kFewBits ? few_bits<T>(n, rng) : at_overflow<T>(n, rng);
    std::vector<double> wide(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) wide[i] = as_double(x[i]);
    const std::size_t lanes = 1 + rng() % 40;
    const xr::cuda::F64Partial p = partial_of(wide, lanes, rng);
    const T expected = xr::test::mpfr_sum(x.data(), x.size());
    T got{};
    const bool settled = xr::cuda::rounded_by_pairs(p, x.size(), got);
    const char* what = kind == kAtOverflow ? "at overflow" : kind == kFewBits ? "few bits" : kind == kTop ? "top binades" : "";
    INFO("seed " << xr::test::run_seed() << " (replay with XREDUCE_TEST_SEED), case " << c << ", "
                 << (kind < kShapes ? std::string(name(shape)) : std::string(what)) << ", n = " << x.size() << ", " << lanes
                 << " lanes: got " << as_double(got) << ", MPFR " << as_double(expected));
    if (settled) CHECK(xr::test::same_bits(got, expected));
    if (kind == kAtOverflow) ++(!settled ? unsettled_at_overflow : std::isinf(as_double(got)) ? overflowed : below_overflow);
    // Uniform, wide and few-bit data must mostly be settled here, or the GPU would sum them twice.
    if ((kind < kShapes && (shape == ExactShape::uniform || shape == ExactShape::wide)) || kind == kFewBits) {
      ++ordinary;
      settled_ordinary += settled;
    }
    if constexpr (!kDouble) {  // the digits' rounding to T, whatever the pairs did
      xr::ExactSum sum;
      sum.add(wide.data(), wide.size());
      long long words[xr::ExactSum::kWords];
      std::memcpy(words, sum.words, sizeof words);
      CHECK(xr::test::same_bits(xr::cuda::round_exact_words_as<T>(words), expected));
    }
  };
  for (std::size_t c = 0; c < cases; ++c) one_case(c, c % (kAtOverflow + 1));
  // Sums at the threshold of overflow that the pairs leave to the digits are few: of float's 136 in
  // a quick run, 4 seeds of 401 left none. So more are drawn, until each way out has been seen (at
  // most 2^16): a seed that happened not to reach one does not fail the test.
  constexpr bool kLeavesSome = !std::is_same_v<T, xr::bf16>;
  auto each_way_seen = [&] { return overflowed > 0 && below_overflow > 0 && (!kLeavesSome || unsettled_at_overflow > 0); };
  for (std::size_t c = cases; c < cases + (1u << 16) && !each_way_seen(); ++c) one_case(c, kAtOverflow);
  INFO("settled " << settled_ordinary << " of " << ordinary << " results of uniform, wide and few-bit data");
  CHECK(settled_ordinary * 10 >= ordinary * 9);
  // Sums at the threshold of overflow are settled on both sides of it (an infinity, or the
  // largest T), and some of double's and float's are left to the digits: the check is neither
  // skipped nor taken blind. (bf16's, 8 bits, lie too far from the threshold for the bound.)
  INFO("at the threshold of overflow: settled as an infinity " << overflowed << ", as a finite sum " << below_overflow << ", left "
                                                                 << unsettled_at_overflow);
  CHECK(overflowed > 0);
  CHECK(below_overflow > 0);
  if constexpr (kLeavesSome) CHECK(unsettled_at_overflow > 0);
}

}  // namespace

TEST_CASE("exact f64 segments (the GPU's pairs): a settled rounding is MPFR's, on every shape and order of folds") {
  check_pairs_rounding<double>(0xf64a1u);
}

TEST_CASE("exact f64 segments (the GPU's second launch): ExactSum's words rounded once are MPFR's sum") {
  std::mt19937_64 rng(xr::test::run_seed() ^ 0xf64a2u);
  const std::size_t cases = std::getenv("XREDUCE_TEST_QUICK") ? 300 : 1200;
  for (std::size_t c = 0; c < cases; ++c) {
    const ExactShape shape = xr::test::all_exact_shapes[c % std::size(xr::test::all_exact_shapes)];
    const std::size_t n = 1 + (rng() % 4 == 0 ? rng() % 3000 : rng() % 40);
    const std::vector<double> x = c % 5 == 4 ? top_binades(n, rng) : xr::test::make_exact_data<double>(shape, n, rng);
    xr::ExactSum sum;
    sum.add(x.data(), x.size());
    long long words[xr::ExactSum::kWords];
    static_assert(sizeof words == sizeof sum.words);
    std::memcpy(words, sum.words, sizeof words);
    const double expected = xr::test::mpfr_sum(x.data(), x.size());
    const double got = xr::cuda::round_exact_words(words);
    INFO("seed " << xr::test::run_seed() << ", case " << c << ", " << std::string(name(shape)) << ", n = " << n << ": got " << got
                 << ", MPFR " << expected);
    CHECK(xr::test::same_bits(got, expected));
  }
}

TEST_CASE("exact f32 and bf16 views (the GPU's pairs of doubles): a settled rounding is MPFR's; words round as MPFR") {
  check_pairs_rounding<float>(0xf32a1u);
  check_pairs_rounding<xr::bf16>(0xbf16a1u);
}
