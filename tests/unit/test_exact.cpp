// The exact partial (xreduce/exact.hpp) on its own, against MPFR, and the exact accuracy as the
// library's users meet it: the config key, "auto", refusals, the plugin ABI, the template API.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>
#include <random>

#include "support/exact_data.hpp"
#include "support/mpfr_reference.hpp"
#include "support/test_data.hpp"
#include "xreduce/custom.hpp"
#include "xreduce/backend/registry.hpp"
#include "xreduce/xreduce.hpp"

namespace xr = xreduce;
using xr::test::ExactShape;

namespace {

//! Whether two partials hold the same sum: every word equal but the not-negative-zero flag, whose
//! size means nothing (a fast-path run counts each nonzero bin, and a tie in a bin's cut, which
//! depends on the lane's running value, can move a bit from one bin to the next), so only whether
//! it is zero.
bool same_partial(const xr::ExactSum& a, const xr::ExactSum& b) {
  for (int i = 0; i < xr::ExactSum::kWords; ++i)
    if (i == xr::ExactSum::kNotNegativeZero ? (a.words[i] != 0) != (b.words[i] != 0) : a.words[i] != b.words[i]) return false;
  return true;
}

//! Every vector width of the fast path this processor has, not only its widest: x summed at each
//! holds the same sum as `widest`.
template <class T>
void check_every_width(const std::vector<T>& x, const xr::ExactSum& widest) {
  for (int width = 2; width < xr::detail::exact_vector_width(); width *= 2) {
    xr::ExactSum narrower;
    xr::detail::add_with_width(narrower, x.data(), x.size(), width);
    INFO("vector width " << width);
    CHECK(same_partial(narrower, widest));
  }
}

//! The partials of x cut at random places, in random order.
template <class T>
std::vector<xr::ExactSum> pieces(const std::vector<T>& x, std::mt19937_64& rng) {
  std::vector<xr::ExactSum> parts;
  for (std::size_t begin = 0; begin < x.size();) {
    const std::size_t len = std::min<std::size_t>(x.size() - begin, 1 + rng() % 5000);
    xr::ExactSum s;
    if (rng() % 4 == 0)
      for (std::size_t i = begin; i < begin + len; ++i) s.add(static_cast<double>(x[i]));  // one by one
    else
      s.add(x.data() + begin, len);
    parts.push_back(s);
    begin += len;
  }
  std::shuffle(parts.begin(), parts.end(), rng);
  return parts;
}

template <class T>
void check_combination(ExactShape shape, std::size_t n, std::mt19937_64& rng) {
  const std::vector<T> x = xr::test::make_exact_data<T>(shape, n, rng);
  const T expected = xr::test::mpfr_sum(x.data(), n);
  xr::ExactSum whole;
  whole.add(x.data(), x.size());
  INFO("seed " << xr::test::run_seed() << ", " << std::string(name(shape)) << ", n = " << n);
  CHECK(xr::test::same_bits(whole.round<T>(), expected));
  CHECK(whole.count() == static_cast<std::int64_t>(n));
  check_every_width(x, whole);

  // Combined with +=, in any order: the same digits, the same bits.
  const std::vector<xr::ExactSum> parts = pieces(x, rng);
  xr::ExactSum combined;
  for (const xr::ExactSum& p : parts) combined += p;
  CHECK(xr::test::same_bits(combined.round<T>(), expected));
  for (int i = 0; i < xr::ExactSum::kDigits; ++i) CHECK(combined.words[i] == whole.words[i]);

  // As MPI_SUM over int64 words combines normalized partials: a plain word-by-word sum.
  xr::ExactSum by_words;
  for (xr::ExactSum p : parts) {
    p.normalize();
    for (int i = 0; i < xr::ExactSum::kWords; ++i) by_words.words[i] += p.words[i];
  }
  CHECK(xr::test::same_bits(by_words.round<T>(), expected));
}

}  // namespace

TEST_CASE("ExactSum: the documented layout") {
  static_assert(sizeof(xr::ExactSum) == 576 && std::is_standard_layout_v<xr::ExactSum>);
  xr::ExactSum s;
  s.add(1.0);
  s.add(std::numeric_limits<double>::quiet_NaN());
  s.add(-std::numeric_limits<double>::infinity());
  s.add(-std::numeric_limits<double>::infinity());
  s.normalize();
  // 1.0 = 2^1088 * 2^-1088: digit 34 (2^(32*34)) holds it.
  CHECK(s.words[34] == 1);
  CHECK(s.words[xr::ExactSum::kNaN] == 1);
  CHECK(s.words[xr::ExactSum::kNegInf] == 2);
  CHECK(s.words[xr::ExactSum::kPosInf] == 0);
  CHECK(s.count() == 4);
  CHECK(std::isnan(s.round<double>()));
  CHECK(xr::test::same_bits(xr::ExactSum{}.round<double>(), 0.0));  // nothing added: +0
}

namespace {

//! The value of a partial's digits, sum of words[i] * 2^(32 i + kLowestExponent), exactly.
void digits_value(const xr::ExactSum& s, mpfr_t out) {
  mpfr_set_zero(out, 1);
  mpfr_t term;
  mpfr_init2(term, 64);
  for (int i = 0; i < xr::ExactSum::kDigits; ++i) {
    mpfr_set_si_2exp(term, s.words[i], 32 * i + xr::ExactSum::kLowestExponent, MPFR_RNDN);  // exact: 64 bits
    mpfr_add(out, out, term, MPFR_RNDN);  // exact: out has the precision of every digit and carry
  }
  mpfr_clear(term);
}

}  // namespace

TEST_CASE("ExactSum: normalize keeps the value and brings the digits into range; round rounds it once") {
  // Words as partials hold them between normalizations: a few digits in use, anywhere, of either
  // sign and up to 2^62 (so a sum of several, or a borrow through every digit above, turns up).
  std::mt19937_64 rng(xr::test::run_seed() ^ 0x6e0f);
  mpfr_t before, after;
  mpfr_init2(before, 2400);
  mpfr_init2(after, 2400);
  for (int trial = 0; trial < 3000; ++trial) {
    xr::ExactSum s;
    const int used = 1 + static_cast<int>(rng() % 6), spread = 1 + static_cast<int>(rng() % 8);
    const int first = static_cast<int>(rng() % (xr::ExactSum::kDigits - spread));
    for (int k = 0; k < used; ++k) {
      const int i = first + static_cast<int>(rng() % spread);
      const int bits = 1 + static_cast<int>(rng() % 62);
      const auto magnitude = static_cast<std::int64_t>(rng() >> (64 - bits));
      s.words[i] = (rng() & 1) ? -magnitude : magnitude;
    }
    s.words[xr::ExactSum::kCount] = used;
    s.words[xr::ExactSum::kNotNegativeZero] = 1;
    digits_value(s, before);
    const double expected = xr::test::round_mpfr_to<double>(before);
    const float expected_f32 = xr::test::round_mpfr_to<float>(before);
    INFO("seed " << xr::test::run_seed() << ", trial " << trial);
    CHECK(xr::test::same_bits(s.round<double>(), expected));  // round works on a copy, unnormalized here
    CHECK(xr::test::same_bits(s.round<float>(), expected_f32));
    s.normalize();
    digits_value(s, after);
    CHECK(mpfr_equal_p(before, after));
    bool in_range = true;
    for (int i = 0; i + 1 < xr::ExactSum::kDigits; ++i) in_range &= s.words[i] >= 0 && s.words[i] < (std::int64_t{1} << 32);
    CHECK(in_range);
    CHECK(xr::test::same_bits(s.round<double>(), expected));
  }
  mpfr_clear(before);
  mpfr_clear(after);
}

TEST_CASE("ExactSum: exact against MPFR, and the same whatever the cut and order of the partials") {
  std::mt19937_64 rng(xr::test::run_seed() ^ 0xac5u);
  for (ExactShape shape : xr::test::all_exact_shapes)
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{5000}, std::size_t{40000}}) {
      check_combination<float>(shape, n, rng);
      check_combination<double>(shape, n, rng);
    }
}

TEST_CASE("ExactSum: ties to even, subnormals and overflow, by hand") {
  auto sum = [](std::initializer_list<double> v) {
    xr::ExactSum s;
    s.add(v.begin(), v.size());
    return s.round<double>();
  };
  CHECK(sum({1.0, 0x1p-53}) == 1.0);                                    // a tie: to even
  CHECK(sum({1.0 + 0x1p-52, 0x1p-53}) == 1.0 + 0x1p-51);                // a tie: to even, upwards
  CHECK(sum({1.0, 0x1p-53, 0x1p-1074}) == 1.0 + 0x1p-52);               // just past the tie
  CHECK(sum({0x1p-1074, 0x1p-1074, -0x1p-1073}) == 0.0);                // subnormals cancel
  CHECK(sum({0x1.fffffffffffffp1023, 0x1p970}) == INFINITY);            // the tie past the largest: overflow
  CHECK(sum({0x1.fffffffffffffp1023, 0x1p969}) == 0x1.fffffffffffffp1023);
  CHECK(sum({0x1.fffffffffffffp1023, 0x1.fffffffffffffp1023, -0x1.fffffffffffffp1023}) == 0x1.fffffffffffffp1023);
  CHECK(std::signbit(sum({-0.0, -0.0})));
  CHECK(!std::signbit(sum({-0.0, 0.0})));
  CHECK(!std::signbit(sum({1.0, -1.0})));
  xr::ExactSum f;  // an f64 sum rounded to f32: once, not twice
  f.add(1.0);
  f.add(0x1p-24);
  f.add(0x1p-60);
  CHECK(f.round<float>() == 1.0f + 0x1p-23f);
}

TEST_CASE("ExactSum: runs whose magnitudes jump between runs (the fast path guesses each run's window from the last)") {
  std::mt19937_64 rng(xr::test::run_seed() ^ 0x3a9u);
  for (int draw = 0; draw < 20; ++draw) {
    std::vector<double> x;
    for (int run = 0; run < 12; ++run) {  // runs of 2048 at scales far apart, zeros and NaN-free
      const int scale = static_cast<int>(rng() % 400) - 200;
      const bool zeros = rng() % 5 == 0;
      for (int i = 0; i < 2048; ++i)
        x.push_back(zeros ? -0.0 : std::ldexp(std::uniform_real_distribution<double>(-1, 1)(rng), scale));
    }
    if (rng() % 2) x.resize(x.size() - rng() % 3000);
    xr::ExactSum s;
    s.add(x.data(), x.size());
    INFO("seed " << xr::test::run_seed() << ", draw " << draw);
    CHECK(xr::test::same_bits(s.round<double>(), xr::test::mpfr_sum(x.data(), x.size())));
    std::vector<float> f(x.begin(), x.end());
    xr::ExactSum sf;
    sf.add(f.data(), f.size());
    CHECK(xr::test::same_bits(sf.round<float>(), xr::test::mpfr_sum(f.data(), f.size())));
  }
}

TEST_CASE("ExactSum: f32 and f64 runs of every span of exponents (each of the fast path's bin counts)") {
  // Runs of 2048 whose exponents span 2^10 to 2^250 (f32: one, two and four bins; f64: two and
  // three; then the large accumulator), in random order, so that a run also starts from the last
  // one's count.
  std::mt19937_64 rng(xr::test::run_seed() ^ 0x5b1cu);
  for (int draw = 0; draw < 10; ++draw) {
    std::vector<float> f;
    std::vector<double> d;
    for (int run = 0; run < 16; ++run) {
      const int span = 10 + static_cast<int>(rng() % 240), low = -static_cast<int>(rng() % 100) - span / 2;
      for (int i = 0; i < 2048; ++i) {
        const int e = low + static_cast<int>(rng() % static_cast<unsigned>(span));
        const double v = std::ldexp(std::uniform_real_distribution<double>(-1, 1)(rng), e);
        f.push_back(static_cast<float>(std::ldexp(v, -std::max(0, low + span - 120))));  // within f32's range
        d.push_back(v);
      }
    }
    INFO("seed " << xr::test::run_seed() << ", draw " << draw);
    xr::ExactSum sf, sd;
    sf.add(f.data(), f.size());
    sd.add(d.data(), d.size());
    CHECK(xr::test::same_bits(sf.round<float>(), xr::test::mpfr_sum(f.data(), f.size())));
    CHECK(xr::test::same_bits(sd.round<double>(), xr::test::mpfr_sum(d.data(), d.size())));
  }
}

//! A run of 2048 odd significands (every bit of the mantissa used, so that each element's lowest
//! bit is where its exponent puts it) of random sign, with exponents spread over [low, high].
template <class T>
std::vector<T> run_with_exponents(int low, int high, std::mt19937_64& rng) {
  constexpr int kDigits = std::numeric_limits<T>::digits;
  std::vector<T> x(2048);
  for (T& v : x) {
    const int e = low + static_cast<int>(rng() % static_cast<unsigned>(high - low + 1));
    const auto odd = static_cast<double>((rng() >> (64 - kDigits)) | 1 | (std::uint64_t{1} << (kDigits - 1)));
    v = static_cast<T>(std::ldexp(rng() % 2 ? odd : -odd, e - (kDigits - 1)));  // in [2^e, 2^(e+1))
  }
  x[rng() % x.size()] = static_cast<T>(std::ldexp(1.0, high)) * T(rng() % 2 ? 1.9375 : -1.9375);  // the top
  x[rng() % x.size()] = static_cast<T>(std::ldexp(1.0, low));                                      // the bottom
  return x;
}

TEST_CASE("ExactSum: runs whose smallest element sits at a bin count's limit, and one binade past it") {
  // The fast path takes a run with the fewest bins whose last ulp is at or under every element's
  // lowest bit, and cuts nothing from the last bin. Spans of exponents around each count's limit
  // (f32: 18, 60 and 144 binades for one, two and four bins; f64: 31 and 73), one binade either
  // side, put that choice on its edge: one binade too generous would round an element.
  std::mt19937_64 rng(xr::test::run_seed() ^ 0xb1du);
  auto check = [&](auto zero, std::initializer_list<int> limits) {
    using T = decltype(zero);
    for (const int limit : limits)
      for (int span = limit - 2; span <= limit + 2; ++span)
        for (int draw = 0; draw < 4; ++draw) {
          const int high = static_cast<int>(rng() % 40) - 20, low = std::max(high - span, std::numeric_limits<T>::min_exponent - 1);
          std::vector<T> x;
          for (int run = 0; run < 3; ++run) {  // the later runs start from the first one's window and count
            const std::vector<T> r = run_with_exponents<T>(low, high, rng);
            x.insert(x.end(), r.begin(), r.end());
          }
          INFO("seed " << xr::test::run_seed() << ", " << sizeof(T) * 8 << "-bit, exponents " << low << ".." << high);
          xr::ExactSum s;
          s.add(x.data(), x.size());
          CHECK(xr::test::same_bits(s.round<T>(), xr::test::mpfr_sum(x.data(), x.size())));
          check_every_width(x, s);
        }
  };
  check(0.0f, {18, 60, 144});
  check(0.0, {31, 73});
}

TEST_CASE("ExactSum: bf16 through f32's runs, every shape of data and every vector width") {
  // bf16 is widened a run at a time and summed by f32's fast path and large accumulator, one
  // call's state kept across runs: the same digits at every width, MPFR's bits rounded.
  std::mt19937_64 rng(xr::test::run_seed() ^ 0xbf16u);
  for (ExactShape shape : xr::test::all_exact_shapes) {
    const std::size_t n = 1 + rng() % 40000;
    const std::vector<xr::bf16> x = xr::test::make_exact_data16<xr::bf16>(shape, n, rng);
    INFO("seed " << xr::test::run_seed() << ", " << std::string(name(shape)) << ", n = " << n);
    xr::ExactSum s;
    s.add(x.data(), x.size());
    CHECK(xr::test::same_bits(s.round<xr::bf16>(), xr::test::mpfr_sum(x.data(), x.size())));
    CHECK(s.count() == static_cast<std::int64_t>(n));
    check_every_width(x, s);
  }
}

TEST_CASE("ExactSum: f64 runs of subnormals only (summed as integers), with a NaN, an infinity or a normal among them") {
  std::mt19937_64 rng(xr::test::run_seed() ^ 0x50bu);
  for (int draw = 0; draw < 20; ++draw) {
    std::vector<double> x(2048 * (1 + rng() % 4) + rng() % 2048);
    for (double& v : x) {
      const std::uint64_t bits = rng() & 0x800fffffffffffffull;  // a random sign and significand, field 0
      std::memcpy(&v, &bits, sizeof v);
    }
    const std::size_t at = rng() % x.size();
    switch (draw % 4) {
      case 1: x[at] = std::numeric_limits<double>::quiet_NaN(); break;
      case 2: x[at] = -std::numeric_limits<double>::infinity(); break;
      case 3: x[at] = std::numeric_limits<double>::min() * (rng() % 2 ? 1 : -1); break;
    }
    xr::ExactSum s;
    s.add(x.data(), x.size());
    INFO("seed " << xr::test::run_seed() << ", draw " << draw);
    CHECK(xr::test::same_bits(s.round<double>(), xr::test::mpfr_sum(x.data(), x.size())));
    CHECK(s.count() == static_cast<std::int64_t>(x.size()));
  }
}

TEST_CASE("exact accuracy: the config key, auto's choice, and backends that refuse") {
  auto file = std::filesystem::temp_directory_path() / ("xreduce-exact-" + std::to_string(::getpid()) + ".toml");
  std::ofstream(file) << "accuracy = \"exact\"\n";
  xr::Config config = xr::Config::from_file(file);
  CHECK(config.accuracy == xr::Accuracy::exact);
  std::ofstream(file) << "accuracy = \"precise\"\n";
  CHECK_THROWS_WITH_AS(xr::Config::from_file(file), doctest::Contains("'accuracy' must be"), xr::Error);
  std::filesystem::remove(file);

  std::mt19937_64 rng(xr::test::run_seed() ^ 0xc0f1u);
  const std::vector<float> x = xr::test::make_exact_data<float>(ExactShape::wide, 100000, rng);
  config.dispatch.parallel_min_count = 1000;
  xr::Context context(config);
  const xr::Request q{x.data(), x.size(), xr::DType::f32, xr::Op::sum, xr::Memory::host};
  INFO("seed " << xr::test::run_seed());
  const xr::Result r = context.reduce(q);  // the config's accuracy: exact
  CHECK(context.registry().get(r.backend).capabilities().takes_exact_sums());
  CHECK(xr::test::same_bits(r.value.get<float>(), xr::test::mpfr_sum(x.data(), x.size())));
  CHECK(r.exact.size() == 1);
  CHECK(context.reduce(q, {.accuracy = xr::Accuracy::standard}).exact.empty());

  xr::Reducer& naive = context.registry().get("sequential.naive");
  CHECK(!naive.capabilities().takes_exact_sums());
  try {
    naive.reduce(q, {.accuracy = xr::Accuracy::exact});
    FAIL("naive summed exactly");
  } catch (const xr::Error& e) {
    CHECK(e.code() == xr::ErrorCode::unsupported);
    CHECK(std::string(e.what()).find("sequential.naive") != std::string::npos);
  }
  CHECK_THROWS_AS(context.reduce(q, {.backend = "sequential.naive"}), xr::Error);  // the config's exact, named
}

TEST_CASE("exact accuracy: a plugin without the capability bit refuses, through the ABI") {
  xr::Config config;
  config.plugin_path = {XREDUCE_TEST_EXAMPLE_PLUGIN};
  xr::Context context(config);
  const double x[3] = {1, 2, 3};
  xr::Reducer& neumaier = context.registry().get("example.neumaier");
  CHECK(!neumaier.capabilities().takes_exact_sums());
  try {
    neumaier.reduce(xr::Request{x, 3, xr::DType::f64, xr::Op::sum, xr::Memory::host}, {.accuracy = xr::Accuracy::exact});
    FAIL("no error");
  } catch (const xr::Error& e) {
    CHECK(e.code() == xr::ErrorCode::unsupported);
  }
  CHECK(neumaier.reduce(xr::Request{x, 3, xr::DType::f64, xr::Op::sum, xr::Memory::host}).value.get<double>() == 6);
}

TEST_CASE("exact accuracy: the template API's sums") {
  std::mt19937_64 rng(xr::test::run_seed() ^ 0x7e3u);
  const std::vector<double> x = xr::test::make_exact_data<double>(ExactShape::cancellation, 30001, rng);
  INFO("seed " << xr::test::run_seed());
  for (const char* backend : {"auto", "sequential"}) {
    xr::Policy policy{.backend = backend, .check_laws = false, .accuracy = xr::Accuracy::exact};
    CHECK(xr::test::same_bits(xr::reduce(policy, x, std::plus<>{}, 0.0), xr::test::mpfr_sum(x.data(), x.size())));
    CHECK_THROWS_AS(xr::reduce(policy, x, std::multiplies<>{}, 1.0), xr::Error);
    CHECK_THROWS_AS(xr::transform_reduce(policy, x, 0.0, std::plus<>{}, [](double v) { return v; }), xr::Error);
  }
}

TEST_CASE("ExactSum: wide data that cancels to zero, among negative zeros (the large accumulator's sign of zero)") {
  // Pairs x, -x over every finite exponent, shuffled, with negative zeros among them: every f64
  // run is too wide for the fast path, so the large accumulator takes them, whole blocks and the
  // rest of a run alike (f32 runs take the fast path's seven bins). The exact sum is +0 (an
  // element other than -0 was added): -0 would mean the elements it saw went uncounted.
  std::mt19937_64 rng(xr::test::run_seed() ^ 0x2e70u);
  // Half the draws are whole blocks of 256 (no element goes through the block's rest).
  auto check = [&](auto one, bool whole_blocks) {
    using T = decltype(one);
    using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
    constexpr Bits kSpecial = (~Bits{0} >> 1) & ~((Bits{1} << (std::numeric_limits<T>::digits - 1)) - 1);  // the exponent field
    const std::size_t size = whole_blocks ? 256 * (1 + rng() % 40) : 2 + rng() % 10000;
    const std::size_t pairs = 1 + rng() % (size / 2);
    std::vector<T> x;
    for (std::size_t i = 0; i < pairs; ++i) {
      Bits b;
      do b = static_cast<Bits>(rng());
      while ((b & kSpecial) == kSpecial);
      T v;
      std::memcpy(&v, &b, sizeof v);
      x.push_back(v);
      x.push_back(-v);
    }
    x.resize(size, T(-0.0));
    std::shuffle(x.begin(), x.end(), rng);
    xr::ExactSum s;
    s.add(x.data(), x.size());
    INFO("seed " << xr::test::run_seed() << ", " << sizeof(T) * 8 << "-bit, " << x.size() << " elements");
    CHECK(xr::test::same_bits(s.round<T>(), T(0)));
    CHECK(xr::test::same_bits(s.round<T>(), xr::test::mpfr_sum(x.data(), x.size())));
  };
  for (int draw = 0; draw < 20; ++draw) {
    check(1.0, draw % 2 == 0);
    check(1.0f, draw % 2 == 0);
  }
}

TEST_CASE("ExactSum: wide runs whose partial sums pass 2^1024 before they cancel (the large accumulator's top chunks)") {
  // Thousands of the largest finite values of each sign among values near the smallest: every run
  // is too wide for the fast path, so the large accumulator sums them, and its f64 chunk for the
  // top exponent passes 2^63 (and goes into the digits) several times before the two signs meet.
  std::mt19937_64 rng(xr::test::run_seed() ^ 0x1a6eu);
  auto check = [&](auto largest, auto smallest) {
    using T = decltype(largest);
    std::vector<T> x;
    const int extra = static_cast<int>(rng() % 3);  // the whole: 0, 1 or 2 largest values, plus the small ones
    for (int i = 0; i < 5000 + extra; ++i) x.push_back(largest);
    for (int i = 0; i < 5000; ++i) x.push_back(-largest);
    for (int i = 0; i < 7000; ++i) x.push_back(smallest * static_cast<T>(1 + rng() % 1000) * (rng() % 2 ? 1 : -1));
    std::shuffle(x.begin(), x.end(), rng);
    xr::ExactSum s;
    s.add(x.data(), x.size());
    INFO("seed " << xr::test::run_seed() << ", " << sizeof(T) * 8 << "-bit, " << extra << " largest left");
    CHECK(xr::test::same_bits(s.round<T>(), xr::test::mpfr_sum(x.data(), x.size())));
  };
  for (int draw = 0; draw < 4; ++draw) {
    check(std::numeric_limits<double>::max(), std::numeric_limits<double>::denorm_min());
    check(std::numeric_limits<float>::max(), std::numeric_limits<float>::denorm_min());
  }
}

TEST_CASE("exact f64 rows near the threshold of overflow (the largest double and pieces near half its ulp), on each CPU backend") {
  // A row holding an element of 2^977 or more is summed scaled by 2^-64, where the threshold of
  // overflow (the largest double plus half its ulp) is checked against the two doubles' bound:
  // rows whose sums lie just below it, at it (a tie, to even: an infinity) or just past it.
  std::mt19937_64 rng(xr::test::run_seed() ^ 0x0f10u);
  constexpr std::size_t kRows = 400, kLength = 300;  // past 256: the two doubles and their bound, at once
  const double largest = std::numeric_limits<double>::max(), half_ulp = std::ldexp(1.0, 970);
  std::vector<double> x(kRows * kLength, 0.0);
  std::vector<double> expected(kRows);
  for (std::size_t r = 0; r < kRows; ++r) {
    double* row = x.data() + r * kLength;
    row[0] = largest;
    const double target = half_ulp * (rng() % 3 == 0 ? 1.0 : 1.0 + (static_cast<double>(rng() % 2001) - 1000) * 0x1p-40);
    const std::size_t pieces = 1 + rng() % 8;
    for (std::size_t j = 0; j < pieces; ++j) row[1 + j] = target / static_cast<double>(pieces);
    if (rng() % 3 == 0) row[pieces + 1] = std::ldexp(1.0, 1023), row[pieces + 2] = -std::ldexp(1.0, 1023);
    if (rng() % 4 == 0) row[pieces + 3] = (rng() % 2 ? 1.0 : -1.0) * std::ldexp(1.0, 1000 - static_cast<int>(rng() % 100));
    std::shuffle(row, row + kLength, rng);
    expected[r] = xr::test::mpfr_sum(row, kLength);
  }
  for (const char* name : {"sequential", "openmp", "tbb"}) {
    xr::Reducer& backend = xr::default_context().registry().get(name);
    if (!backend.available()) continue;
    const xr::Result got = backend.reduce(xr::Request::rows(x.data(), kRows, kLength, xr::DType::f64, xr::Op::sum),
                                          {.accuracy = xr::Accuracy::exact});
    REQUIRE(got.values.size() == kRows);
    std::size_t wrong = 0, first = kRows;
    for (std::size_t r = 0; r < kRows; ++r)
      if (!xr::test::same_bits(got.values[r].get<double>(), expected[r]) && wrong++ == 0) first = r;
    INFO("seed " << xr::test::run_seed() << " (replay with XREDUCE_TEST_SEED), " << name << ": " << wrong << " of " << kRows
                 << " rows wrong; the first, " << first << ": got " << (wrong ? got.values[first].to_string() : std::string())
                 << ", MPFR " << (wrong ? expected[first] : 0.0));
    CHECK(wrong == 0);
  }
}
