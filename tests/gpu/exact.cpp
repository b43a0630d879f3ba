// Exact sums on the GPU (Accuracy::exact): device-resident and pinned data, every block size, the
// MPFR reference's very bits; beyond 2^30 elements (several launches) too; the columns of device
// records; rows and segments, each segment's bits; the exact mean, var and std. Pageable host data
// goes through the conformance suite too. Skips without a GPU.

#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "support/exact_data.hpp"
#include "support/mpfr_reference.hpp"
#include "support/test_data.hpp"
#include "xreduce/pinned.hpp"
#include "xreduce/backend/registry.hpp"
#include "xreduce/xreduce.hpp"

namespace xr = xreduce;
using xr::test::ExactShape;

namespace {

//! The GPU backends that sum exactly; `device`: those of them that read device memory too
//! (cuda.multi_gpu reads host data only).
std::vector<xr::Reducer*> exact_gpu_backends(bool device = false) {
  std::vector<xr::Reducer*> v;
  for (const auto& e : xr::default_context().registry().entries()) {
    const xr::Capabilities c = e.reducer->capabilities();
    if (c.engine() == xr::Engine::gpu && c.takes_exact_sums() && e.reducer->available() && (!device || c.reads(xr::Memory::device)))
      v.push_back(e.reducer);
  }
  if (v.empty()) MESSAGE("no GPU backend that sums exactly can run here: exact GPU tests skipped");
  return v;
}

template <class T>
void check_on_gpu(xr::Reducer& r, const std::vector<T>& host, std::size_t byte_offset, std::mt19937_64& rng) {
  const T expected = xr::test::mpfr_sum(host.data(), host.size());
  void* base = nullptr;
  REQUIRE(cudaMalloc(&base, host.size() * sizeof(T) + 16) == cudaSuccess);
  T* dev = reinterpret_cast<T*>(static_cast<unsigned char*>(base) + byte_offset);
  REQUIRE(cudaMemcpy(dev, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice) == cudaSuccess);
  xr::PinnedBuffer pinned(host.size() * sizeof(T) + 1);
  std::memcpy(pinned.data(), host.data(), host.size() * sizeof(T));
  const int block = std::array{128, 256, 512, 1024}[rng() % 4];
  // Device memory, pinned host memory, and pageable host memory staged by three copy threads in
  // chunks of 64 KiB (the vector's own, not at byte_offset: host data is realigned by the core).
  for (const void* data : {static_cast<const void*>(dev), static_cast<const void*>(pinned.data()), static_cast<const void*>(host.data())}) {
    if (data == dev && !r.capabilities().reads(xr::Memory::device)) continue;
    const xr::Request q{data, host.size(), xr::dtype_of<T>(), xr::Op::sum, xr::Memory::automatic};
    xr::Options o{.accuracy = xr::Accuracy::exact};
    o.settings.set("block_size", std::to_string(block));
    if (data == host.data()) o.settings.set("stage_bytes", "65536").set("copy_threads", "3");
    const xr::Result res = r.reduce(q, o);
    INFO("backend " << r.name() << ", n " << host.size() << ", byte offset " << byte_offset << ", block " << block
                    << (data == dev ? ", device" : data == host.data() ? ", pageable host" : ", pinned host") << ": got "
                    << std::hexfloat << res.value.get<T>() << ", MPFR " << expected << std::defaultfloat);
    CHECK(xr::test::same_bits(res.value.get<T>(), expected));
  }
  cudaFree(base);
}

//! Values that fill a digit of the f64 digit form: seven in eight positive, of exponent 723 and a
//! significand of at least 1.875 * 2^52, which lands at bit 31 of its digit and adds more than
//! 1.875 * 2^51 to the digit above; the rest any value of either sign below 2^701, where the
//! sum's last bits are.
std::vector<double> digit_filling_period(std::size_t n, std::mt19937_64& rng) {
  std::vector<double> period(n);
  for (double& v : period) {
    const std::uint64_t r = rng();
    std::uint64_t bits = (std::uint64_t{723 + 1023} << 52) | (std::uint64_t{7} << 49) | (r & ((std::uint64_t{1} << 49) - 1));
    if (r >> 61 == 0) {
      const std::uint64_t b = rng();
      bits = (b & ~(std::uint64_t{0x7ff} << 52)) | (((b >> 20) % (700 + 1023)) << 52);
    }
    std::memcpy(&v, &bits, sizeof v);
  }
  return period;
}

//! n values of T (f32 or bf16) that all lie in the top binade of one exponent bin (fields 128 to
//! 143: [2, 2^17)), random significands, one sign: the largest a bin's units grow with each element
//! (each below 2^39 of them), every round of a column lane added in one register.
template <class T>
std::vector<T> bin_filling_period(std::size_t n, std::mt19937_64& rng) {
  std::vector<T> period(n);
  std::uniform_real_distribution<double> significand(1.0, 1.99);  // below 2 once rounded to bf16's 8 bits
  for (T& v : period) v = static_cast<T>(std::ldexp(significand(rng), 16));
  return period;
}

//! f16 of the top binade, [2^15, 65504], in pairs x and -x at random places, and one value below
//! 1: the lanes of a column add thousands of the largest f16 (near 2^40 units of 2^-24 each), and
//! the period sums to the small value, so that a column's sum stays finite.
std::vector<xr::f16> top_binade_pairs_f16(std::size_t n, std::mt19937_64& rng) {
  std::vector<xr::f16> period(n);
  std::uniform_real_distribution<double> significand(1.0, 1.99);
  for (std::size_t i = 0; i + 1 < n; i += 2) {
    const double x = std::ldexp(significand(rng), 15);
    period[i] = xr::f16(x), period[i + 1] = xr::f16(-x);
  }
  if (n % 2) period[n - 1] = xr::f16(std::ldexp(significand(rng), -static_cast<int>(rng() % 20) - 1));
  std::shuffle(period.begin(), period.end(), rng);
  return period;
}

}  // namespace

TEST_CASE("gpu exact sums: device and pinned data, f32, f64, f16 and bf16, every shape and block size, MPFR's bits") {
  std::mt19937_64 rng(xr::test::run_seed() ^ 0x6e8au);
  const bool quick = std::getenv("XREDUCE_TEST_QUICK") != nullptr;
  for (xr::Reducer* r : exact_gpu_backends())
    for (std::size_t n : {std::size_t{1}, std::size_t{33}, std::size_t{4097}, std::size_t{(1 << 20) + 7}, std::size_t{3 << 21}})
      for (ExactShape shape : xr::test::all_exact_shapes) {
        if (quick && n > 5000) continue;
        INFO("seed " << xr::test::run_seed() << " (replay with XREDUCE_TEST_SEED), data " << std::string(name(shape)));
        check_on_gpu(*r, xr::test::make_exact_data<float>(shape, n, rng), rng() % 2 ? 4 : 0, rng);
        check_on_gpu(*r, xr::test::make_exact_data<double>(shape, n, rng), rng() % 2 ? 8 : 1, rng);
        check_on_gpu(*r, xr::test::make_exact_data16<xr::f16>(shape, n, rng), rng() % 2 ? 2 : 0, rng);
        check_on_gpu(*r, xr::test::make_exact_data16<xr::bf16>(shape, n, rng), rng() % 2 ? 6 : 1, rng);
      }
}

TEST_CASE("gpu exact sums: beyond 2^30 elements, in several launches") {
  if (std::getenv("XREDUCE_TEST_QUICK")) return;
  // 2^30 + 5 copies of one f32 value v (every byte 0x3f): the exact sum n * v needs 55 bits, which a
  // long double holds, so rounding it to float once is the reference.
  const std::size_t n = (std::size_t{1} << 30) + 5;
  for (xr::Reducer* r : exact_gpu_backends(/*device=*/true)) {
    void* dev = nullptr;
    if (cudaMalloc(&dev, n * sizeof(float)) != cudaSuccess) {
      MESSAGE("cannot allocate 4 GiB on the GPU: skipped");
      return;
    }
    REQUIRE(cudaMemset(dev, 0x3f, n * sizeof(float)) == cudaSuccess);
    float v;
    std::memset(&v, 0x3f, sizeof v);
    const float expected = static_cast<float>(static_cast<long double>(v) * static_cast<long double>(n));
    const xr::Result res = r->reduce(xr::Request{dev, n, xr::DType::f32, xr::Op::sum, xr::Memory::device},
                                     {.accuracy = xr::Accuracy::exact});
    INFO("backend " << r->name());
    CHECK(xr::test::same_bits(res.value.get<float>(), expected));
    CHECK(res.exact.at(0).count() == static_cast<std::int64_t>(n));
    cudaFree(dev);
  }
}

TEST_CASE("gpu exact f64 sums: lanes that each add more elements than a digit has room for between carries") {
  if (std::getenv("XREDUCE_TEST_QUICK")) return;
  // 2^28 elements (2 GiB), a digit_filling_period of 4099 repeated. A lane of the digit form
  // (50688 of them on 132 SMs) adds some 4600 of them, past 2^63, unless it propagates its carries
  // as it goes.
  std::mt19937_64 rng(xr::test::run_seed() ^ 0x5d1au);
  constexpr std::size_t kPeriod = 4099, kRepeats = (std::size_t{1} << 28) / kPeriod;
  const std::vector<double> period = digit_filling_period(kPeriod, rng);
  if (exact_gpu_backends(/*device=*/true).empty()) return;
  const double expected = xr::test::mpfr_sum(period.data(), kPeriod, kRepeats);
  std::vector<double> host(kPeriod * kRepeats);
  for (std::size_t k = 0; k < kRepeats; ++k) std::copy(period.begin(), period.end(), host.begin() + k * kPeriod);
  void* dev = nullptr;
  REQUIRE(cudaMalloc(&dev, host.size() * sizeof(double)) == cudaSuccess);
  REQUIRE(cudaMemcpy(dev, host.data(), host.size() * sizeof(double), cudaMemcpyHostToDevice) == cudaSuccess);
  for (xr::Reducer* r : exact_gpu_backends(/*device=*/true)) {
    const xr::Result res = r->reduce(xr::Request{dev, host.size(), xr::DType::f64, xr::Op::sum, xr::Memory::device},
                                     {.accuracy = xr::Accuracy::exact});
    INFO("seed " << xr::test::run_seed() << ", backend " << r->name() << ": got " << std::hexfloat << res.value.get<double>()
                 << ", MPFR " << expected);
    CHECK(xr::test::same_bits(res.value.get<double>(), expected));
  }
  cudaFree(dev);
}

namespace {

//! Device records: `rows` of `width` values at `dev`, summed column by column.
xr::Request device_records(const void* dev, std::size_t rows, std::size_t width, xr::DType dtype) {
  xr::Request q = xr::Request::records(dev, rows, width, dtype, xr::Op::sum);
  q.memory = xr::Memory::device;
  return q;
}

//! The GPU backends that sum device records' columns exactly.
std::vector<xr::Reducer*> exact_column_backends(const xr::Request& q) {
  std::vector<xr::Reducer*> v;
  for (xr::Reducer* r : exact_gpu_backends(/*device=*/true))
    if (r->capabilities().support(xr::features_of(xr::canonical(q), xr::Accuracy::exact)) != xr::Support::none) v.push_back(r);
  return v;
}

//! Each column of `rows` records of `width` values (host copy `host`, on the GPU at `dev`)
//! against MPFR's sum of the column, on every backend that sums device columns exactly.
template <class T>
void check_columns(const std::vector<T>& host, const void* dev, std::size_t rows, std::size_t width) {
  const xr::Request q = device_records(dev, rows, width, xr::dtype_of<T>());
  const std::vector<xr::Reducer*> backends = exact_column_backends(q);
  CHECK(!backends.empty());
  std::vector<T> expected(width), column(rows);
  for (std::size_t j = 0; j < width; ++j) {
    for (std::size_t i = 0; i < rows; ++i) column[i] = host[i * width + j];
    expected[j] = xr::test::mpfr_sum(column.data(), rows);
  }
  for (xr::Reducer* r : backends) {
    const xr::Result res = r->reduce(q, {.accuracy = xr::Accuracy::exact});
    REQUIRE(res.values.size() == width);
    for (std::size_t j = 0; j < width; ++j) {
      INFO("backend " << r->name() << ", " << rows << " records of width " << width << ", column " << j << ": got "
                      << std::hexfloat << static_cast<double>(res.values[j].get<T>()) << ", MPFR "
                      << static_cast<double>(expected[j]) << std::defaultfloat);
      CHECK(xr::test::same_bits(res.values[j].get<T>(), expected[j]));
    }
  }
}

}  // namespace

TEST_CASE("gpu exact column sums of device records: f32, f64, f16 and bf16, narrow and wide, MPFR's bits for each column") {
  std::mt19937_64 rng(xr::test::run_seed() ^ 0xc01u);
  const bool quick = std::getenv("XREDUCE_TEST_QUICK") != nullptr;
  // Widths below, at and above a block's 128 lanes (and above the 2048 slots of an f16 block), one
  // a vector of f16, rows from one to many per lane. (Records of width 1 are one row, layout
  // inner: the rows and segments test below.) The data's shapes in turn from a random one, so
  // that every run has each of them.
  const std::pair<std::size_t, std::size_t> shapes[] = {{3, 70001}, {9, 1},     {9, 70001},  {2, 5000},  {33, 5000},
                                                        {128, 3000}, {130, 1000}, {300, 777}, {8, 4001}, {2053, 9}};
  if (exact_gpu_backends(/*device=*/true).empty()) return;
  const std::size_t first_shape = rng();
  for (std::size_t i = 0; i < std::size(shapes); ++i) {
    const auto [width, rows] = shapes[i];
    if (quick && width * rows > 20000) continue;
    const ExactShape shape = xr::test::all_exact_shapes[(first_shape + i) % std::size(xr::test::all_exact_shapes)];
    INFO("seed " << xr::test::run_seed() << " (replay with XREDUCE_TEST_SEED), data " << std::string(name(shape)));
    void* dev = nullptr;
    REQUIRE(cudaMalloc(&dev, width * rows * sizeof(double) + sizeof(double)) == cudaSuccess);
    auto run = [&](const auto& host) {
      // At the allocation's start, and one element on (records off a 16-byte boundary, as a
      // slice of a larger array is).
      for (const std::size_t offset : {std::size_t{0}, sizeof(host[0])}) {
        INFO("records at byte offset " << offset << " of the allocation");
        void* at = static_cast<unsigned char*>(dev) + offset;
        REQUIRE(cudaMemcpy(at, host.data(), host.size() * sizeof(host[0]), cudaMemcpyHostToDevice) == cudaSuccess);
        check_columns(host, at, rows, width);
      }
    };
    run(xr::test::make_exact_data<float>(shape, width * rows, rng));
    run(xr::test::make_exact_data<double>(shape, width * rows, rng));
    run(xr::test::make_exact_data16<xr::f16>(shape, width * rows, rng));
    run(xr::test::make_exact_data16<xr::bf16>(shape, width * rows, rng));
    cudaFree(dev);
  }
}

TEST_CASE("gpu exact column sums: lanes that each add more elements than a digit has room for between carries") {
  if (std::getenv("XREDUCE_TEST_QUICK")) return;
  if (exact_gpu_backends(/*device=*/true).empty()) return;
  // 3 columns of 4099 * 2^14 rows, a period of 4099 repeated through the flat array, so that each
  // column runs through the period 2^14 times over (4099 is prime to 3). f64: a
  // digit_filling_period, which pushes one digit of a lane past 2^63 within some 2^11 of them; a
  // lane here adds some 4000 (42 lanes a column in each of 396 blocks on 132 SMs). f32: random finite
  // values, some 2000 a lane into its bins; and f32 and bf16 values in the top binade of one bin,
  // one sign, each round of a lane added in a register first and the bin filled as far as it goes.
  // f16: its largest values, cancelling in pairs, through each lane's double and its carries.
  std::mt19937_64 rng(xr::test::run_seed() ^ 0x3c01u);
  constexpr std::size_t kPeriod = 4099, kRepeats = std::size_t{1} << 14, kWidth = 3, kRows = kPeriod * kRepeats;
  auto check = [&](const auto& period) {
    using T = typename std::decay_t<decltype(period)>::value_type;
    const T expected = xr::test::mpfr_sum(period.data(), kPeriod, kRepeats);  // every column's
    std::vector<T> host(kRows * kWidth);
    for (std::size_t i = 0; i < host.size(); ++i) host[i] = period[i % kPeriod];
    void* dev = nullptr;
    REQUIRE(cudaMalloc(&dev, host.size() * sizeof(T)) == cudaSuccess);
    REQUIRE(cudaMemcpy(dev, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice) == cudaSuccess);
    const xr::Request q = device_records(dev, kRows, kWidth, xr::dtype_of<T>());
    for (xr::Reducer* r : exact_column_backends(q)) {
      const xr::Result res = r->reduce(q, {.accuracy = xr::Accuracy::exact});
      REQUIRE(res.values.size() == kWidth);
      for (std::size_t j = 0; j < kWidth; ++j) {
        INFO("seed " << xr::test::run_seed() << ", backend " << r->name() << ", " << sizeof(T) * 8 << "-bit, column " << j
                     << ": got " << std::hexfloat << static_cast<double>(res.values[j].get<T>()) << ", MPFR "
                     << static_cast<double>(expected));
        CHECK(xr::test::same_bits(res.values[j].get<T>(), expected));
      }
    }
    cudaFree(dev);
  };
  check(digit_filling_period(kPeriod, rng));
  check(xr::test::make_exact_data<float>(ExactShape::wide, kPeriod, rng));
  check(bin_filling_period<float>(kPeriod, rng));
  check(bin_filling_period<xr::bf16>(kPeriod, rng));
  check(top_binade_pairs_f16(kPeriod, rng));
}

TEST_CASE("gpu: result_dtype of device data: sums run exactly and round once to the type asked") {
  // Device data hands on exact partials, not f64 accumulators: a float sum asked in a wider type
  // runs as an exact sum (docs/semantics.md), whatever the accuracy asked; other ops refuse.
  std::mt19937_64 rng(xr::test::run_seed() ^ 0x2e5u);
  for (xr::Reducer* r : exact_gpu_backends(/*device=*/true)) {
    for (std::size_t n : {std::size_t{1}, std::size_t{4097}, std::size_t{(1 << 20) + 3}}) {
      const std::vector<xr::f16> h = xr::test::make_exact_data16<xr::f16>(ExactShape::uniform, n, rng);
      const std::vector<xr::bf16> b = xr::test::make_exact_data16<xr::bf16>(ExactShape::wide, n, rng);
      void* dev = nullptr;
      REQUIRE(cudaMalloc(&dev, n * 2) == cudaSuccess);
      INFO("seed " << xr::test::run_seed() << ", backend " << r->name() << ", n " << n);
      REQUIRE(cudaMemcpy(dev, h.data(), n * 2, cudaMemcpyHostToDevice) == cudaSuccess);
      const xr::Request qh{dev, n, xr::DType::f16, xr::Op::sum, xr::Memory::device};
      CHECK(xr::test::same_bits(r->reduce(qh, {.result_dtype = xr::DType::f32}).value.get<float>(),
                                xr::test::mpfr_sum<xr::f16, float>(h.data(), n)));
      REQUIRE(cudaMemcpy(dev, b.data(), n * 2, cudaMemcpyHostToDevice) == cudaSuccess);
      const xr::Request qb{dev, n, xr::DType::bf16, xr::Op::sum, xr::Memory::device};
      CHECK(xr::test::same_bits(r->reduce(qb, {.result_dtype = xr::DType::f64}).value.get<double>(),
                                xr::test::mpfr_sum<xr::bf16, double>(b.data(), n)));
      const xr::Request prod{dev, n, xr::DType::bf16, xr::Op::prod, xr::Memory::device};
      CHECK_THROWS_WITH_AS(r->reduce(prod, {.result_dtype = xr::DType::f32}), doctest::Contains("results in f64"), xr::Error);
      cudaFree(dev);
    }
  }
}

namespace {

//! The GPU backends with an exact var of data in `memory`.
std::vector<xr::Reducer*> exact_variance_backends(xr::Memory memory) {
  std::vector<xr::Reducer*> v;
  const xr::Request q{nullptr, 1, xr::DType::f32, xr::Op::var, memory};
  for (xr::Reducer* r : exact_gpu_backends())
    if (r->capabilities().support(xr::features_of(q, xr::Accuracy::exact)) != xr::Support::none) v.push_back(r);
  return v;
}

//! The exact mean, var and std (corrections 0 and 1) of `host`, a period of `period` elements
//! repeated, on every GPU backend that has them: of device memory, and unless `device_only` of
//! pinned host memory and of pageable host memory staged in small chunks; MPFR's bits each.
template <class T>
void check_moments(const std::vector<T>& host, std::size_t period, bool device_only = false) {
  const std::size_t n = host.size();
  void* dev = nullptr;
  REQUIRE(cudaMalloc(&dev, n * sizeof(T) + 1) == cudaSuccess);
  REQUIRE(cudaMemcpy(dev, host.data(), n * sizeof(T), cudaMemcpyHostToDevice) == cudaSuccess);
  xr::PinnedBuffer pinned(device_only ? 1 : n * sizeof(T) + 1);
  if (!device_only) std::memcpy(pinned.data(), host.data(), n * sizeof(T));
  for (double correction : {0.0, 1.0}) {
    const xr::test::MpfrMoments<T> want = xr::test::mpfr_moments(host.data(), period, correction, n / period);
    for (const void* data : {static_cast<const void*>(dev), static_cast<const void*>(pinned.data()), static_cast<const void*>(host.data())}) {
      if (device_only && data != dev) continue;
      const xr::Memory memory = data == dev ? xr::Memory::device : xr::Memory::host;
      for (xr::Reducer* r : exact_variance_backends(memory)) {
        xr::Options o{.accuracy = xr::Accuracy::exact};
        if (data == host.data()) o.settings.set("stage_bytes", "65536").set("copy_threads", "3");
        for (xr::Op op : {xr::Op::mean, xr::Op::var, xr::Op::std}) {
          xr::Request q{data, n, xr::dtype_of<T>(), op, memory};
          q.correction = correction;
          const T got = r->reduce(q, o).value.get<T>();
          const T expected = op == xr::Op::mean ? want.mean : op == xr::Op::var ? want.var : want.std;
          INFO("seed " << xr::test::run_seed() << ", backend " << r->name() << ", " << to_string(xr::dtype_of<T>()) << ", n " << n
                       << (data == dev ? ", device" : data == host.data() ? ", pageable host" : ", pinned host") << ", "
                       << to_string(op) << ", correction " << correction << ": got " << std::hexfloat
                       << static_cast<double>(got) << ", MPFR " << static_cast<double>(expected) << std::defaultfloat);
          if (op != xr::Op::mean && static_cast<double>(n) <= correction) CHECK(std::isnan(static_cast<double>(got)));
          else CHECK(xr::test::same_bits(got, expected));
        }
      }
    }
  }
  cudaFree(dev);
}

//! f64 values of either sign with magnitudes 2^-400 to 2^400 (squares within the exact partial's
//! range), or offset ones: mean 1e4, spread 1e-3.
std::vector<double> moments_f64(std::size_t n, bool offset, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> unit(-1, 1);
  std::uniform_int_distribution<int> exponent(-400, 400);
  std::vector<double> v(n);
  for (double& x : v) x = offset ? 1e4 + 1e-3 * unit(rng) : std::ldexp(unit(rng), exponent(rng));
  return v;
}

//! Values whose squares fill a digit of the squares' partial: seven in eight of magnitude about
//! 2^105.5, whose squares have a significand of 1.875 to 1.99 and exponent 211, the place where a
//! square adds more than 1.875 * 2^51 to one digit (as digit_filling_period); the rest any value
//! below 2^40 (their squares set the result's last bits).
template <class T>
std::vector<T> square_filling_period(std::size_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> unit(0, 1);
  std::vector<T> period(n);
  for (T& v : period) {
    v = static_cast<T>(rng() % 8 ? std::sqrt((1.88 + 0.1 * unit(rng)) * 0x1p211) : std::ldexp(unit(rng), static_cast<int>(rng() % 40)));
    if (rng() % 2) v = -v;
  }
  return period;
}

}  // namespace

TEST_CASE("gpu exact mean, var and std: device and host data, f32, f64, f16 and bf16, MPFR's bits") {
  std::mt19937_64 rng(xr::test::run_seed() ^ 0x7a55u);
  const bool quick = std::getenv("XREDUCE_TEST_QUICK") != nullptr;
  if (exact_variance_backends(xr::Memory::device).empty()) {
    MESSAGE("no GPU backend with exact variances can run here: skipped");
    return;
  }
  for (std::size_t n : {std::size_t{1}, std::size_t{2}, std::size_t{33}, std::size_t{4097}, std::size_t{(1 << 20) + 7}}) {
    if (quick && n > 5000) continue;
    INFO("seed " << xr::test::run_seed() << " (replay with XREDUCE_TEST_SEED), n " << n);
    for (ExactShape shape : {ExactShape::uniform, ExactShape::wide, ExactShape::cancellation, ExactShape::subnormal}) {
      INFO("data " << std::string(name(shape)));
      check_moments(xr::test::make_exact_data<float>(shape, n, rng), n);
      check_moments(xr::test::make_exact_data16<xr::f16>(shape, n, rng), n);
      check_moments(xr::test::make_exact_data16<xr::bf16>(shape, n, rng), n);
    }
    check_moments(moments_f64(n, false, rng), n);
    check_moments(moments_f64(n, true, rng), n);
    std::vector<float> offset(n);
    std::uniform_real_distribution<float> unit(-1, 1);
    for (float& x : offset) x = 1e4f + 1e-3f * unit(rng);
    check_moments(offset, n);
  }
}

TEST_CASE("gpu exact var: infinities and NaN, and f64 values whose squares leave the exact partial's range") {
  if (exact_variance_backends(xr::Memory::host).empty()) return;  // no GPU here
  std::vector<double> x(1000, 1.5);
  void* dev = nullptr;
  REQUIRE(cudaMalloc(&dev, x.size() * sizeof(double)) == cudaSuccess);
  // Device data, and pageable host data (cuda.multi_gpu's parts refuse as one GPU does).
  for (xr::Memory memory : {xr::Memory::device, xr::Memory::host})
    for (xr::Reducer* r : exact_variance_backends(memory)) {
      INFO("backend " << r->name() << ", " << to_string(memory) << " data");
      auto reduce = [&](xr::Op op) {
        if (memory == xr::Memory::device)
          REQUIRE(cudaMemcpy(dev, x.data(), x.size() * sizeof(double), cudaMemcpyHostToDevice) == cudaSuccess);
        const void* data = memory == xr::Memory::device ? dev : x.data();
        return r->reduce(xr::Request{data, x.size(), xr::DType::f64, op, memory}, {.accuracy = xr::Accuracy::exact}).value.get<double>();
      };
      std::fill(x.begin(), x.end(), 1.5);
      CHECK(reduce(xr::Op::var) == 0.0);
      x[17] = HUGE_VAL;
      CHECK(std::isnan(reduce(xr::Op::var)));
      CHECK(reduce(xr::Op::mean) == HUGE_VAL);
      x[900] = -HUGE_VAL;
      CHECK(std::isnan(reduce(xr::Op::mean)));
      x[17] = x[900] = std::nan("");
      CHECK(std::isnan(reduce(xr::Op::std)));
      for (double outside : {0x1p600, -0x1p-500}) {
        x[17] = x[900] = 1.5;
        x[333] = outside;
        CHECK_THROWS_WITH_AS(reduce(xr::Op::var), doctest::Contains("2^511"), xr::Error);
        CHECK_NOTHROW(reduce(xr::Op::mean));  // the mean needs no squares
      }
    }
  cudaFree(dev);
}

TEST_CASE("gpu exact var: lanes that each add more squares than a digit has room for between carries") {
  if (std::getenv("XREDUCE_TEST_QUICK")) return;
  if (exact_variance_backends(xr::Memory::device).empty()) return;
  // A lane of exact_moments_kernel (one block of 128 an SM for f64, four for f32: 132 SMs on an
  // H200) adds some 4000 f64 of 2^26, past where a digit of its squares would pass 2^63 (about
  // 2^11 of them) without its carries; and some 2000 f32 of 2^27, through its square bins and
  // their flushes (a bin would stay exact without them up to 2^14 values: a launch of 2^30 on an
  // H200 gives a lane fewer).
  std::mt19937_64 rng(xr::test::run_seed() ^ 0x5c4au);
  constexpr std::size_t kPeriod = 4099;
  auto check = [&](auto tag, std::size_t n) {
    using T = decltype(tag);
    const std::vector<T> period = square_filling_period<T>(kPeriod, rng);
    std::vector<T> host(n / kPeriod * kPeriod);
    for (std::size_t i = 0; i < host.size(); ++i) host[i] = period[i % kPeriod];
    check_moments(host, kPeriod, /*device_only=*/true);
  };
  check(float{}, std::size_t{1} << 27);
  check(double{}, std::size_t{1} << 26);
}

namespace {

//! A float of exponent group g (exponent field 16g to 16g + 15) and either sign: at the top of
//! the group (field 16g + 15, significand 1.99 to 2) where `top`, else any of it.
float float_of_group(int g, bool top, std::mt19937_64& rng) {
  const unsigned field = top ? 16u * g + 15 : 16u * g + static_cast<unsigned>(rng() % 16);
  const unsigned significand = top ? 0x7fffffu - static_cast<unsigned>(rng() % 0x20000) : static_cast<unsigned>(rng() & 0x7fffffu);
  return std::bit_cast<float>((rng() % 2 ? 0x80000000u : 0u) | std::min(field, 254u) << 23 | significand);
}

}  // namespace

//! `period` elements made by `draw`, repeated to about n (checked by check_moments on the device).
template <class Draw>
void check_periodic_moments(std::size_t n, std::size_t period, Draw draw) {
  std::vector<float> one(period);
  for (std::size_t i = 0; i < period; ++i) one[i] = draw(i);
  std::vector<float> x(n / period * period);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = one[i % period];
  check_moments(x, period, /*device_only=*/true);
}

TEST_CASE("gpu exact var: f32 at the top of one exponent group, where a lane's sums of the group reach their bound") {
  if (exact_variance_backends(xr::Memory::device).empty()) return;
  // A lane of exact_moments_kernel keeps the elements of its exponent group in registers between
  // carries (2^10 elements a lane; 2^27 elements give a lane of an H200 some 2000): here 7 in 8
  // elements are as large as their group allows, all of one sign, so that the sums and the
  // squares' grow as far as they can, and a warp's 32 lanes add them as integers first.
  std::mt19937_64 rng(xr::test::run_seed() ^ 0x9e01u);
  const bool quick = std::getenv("XREDUCE_TEST_QUICK") != nullptr;
  for (int g : {0, 7, 8, 15}) {
    INFO("seed " << xr::test::run_seed() << ", group " << g);
    const std::size_t n = quick ? (std::size_t{1} << 16) + 3 : std::size_t{1} << 27;
    check_periodic_moments(n, quick ? n : 4099, [&](std::size_t) { return std::fabs(float_of_group(g, rng() % 8 != 0, rng)); });
  }
}

TEST_CASE("gpu exact var: f32 whose vectors lie in one of two exponent groups at random, and elements of any group") {
  if (exact_variance_backends(xr::Memory::device).empty()) return;
  // A lane's exponent group moves at a carry when more of its vectors lay outside it than in it
  // since the last: with each 16-byte vector of one of two groups at random, lanes move at about
  // half their carries (2^29 elements give a lane of an H200 some eight), a warp's lanes often
  // lie in different groups when they flush, one element in 64 of any group goes to the bins, and
  // one in 16 is a zero of either sign (of every group: a tile with one stays in the registers).
  std::mt19937_64 rng(xr::test::run_seed() ^ 0x6a7bu);
  const bool quick = std::getenv("XREDUCE_TEST_QUICK") != nullptr;
  const int a = static_cast<int>(rng() % 15), b = (a + 1 + static_cast<int>(rng() % 14)) % 15;
  INFO("seed " << xr::test::run_seed() << ", groups " << a << " and " << b);
  const std::size_t n = quick ? (std::size_t{1} << 16) + 5 : std::size_t{1} << 29;
  int g = a;
  check_periodic_moments(n, quick ? n : 4 * 4099, [&](std::size_t i) {
    if (i % 4 == 0) g = rng() % 2 ? a : b;
    if (rng() % 16 == 0) return rng() % 2 ? 0.0f : -0.0f;
    return float_of_group(rng() % 64 ? g : static_cast<int>(rng() % 15), false, rng);
  });
}

TEST_CASE("gpu exact bf16 sums: vectors of one exponent group or of another, at the groups' top, with zeros among them") {
  // A bf16 lane adds a vector whose elements all lie in its exponent group to one double in a
  // register, and moves between groups at its flushes (every 2^10 elements a lane: 2^29 elements
  // give a lane of an H200 some 2000). Here each 16-byte vector lies in one of two groups at
  // random, 7 in 8 of its elements at the top of the group, all positive where the sum grows
  // fastest, and one element in 32 is a zero (of every group) or any bf16 of another group.
  std::mt19937_64 rng(xr::test::run_seed() ^ 0xbf16u);
  const bool quick = std::getenv("XREDUCE_TEST_QUICK") != nullptr;
  const int a = static_cast<int>(rng() % 15), b = (a + 1 + static_cast<int>(rng() % 14)) % 15;
  const std::size_t period = quick ? (std::size_t{1} << 16) + 3 : 8 * 4099, repeats = quick ? 1 : (std::size_t{1} << 29) / period;
  std::vector<xr::bf16> one(period);
  int g = a;
  for (std::size_t i = 0; i < period; ++i) {
    if (i % 8 == 0) g = rng() % 2 ? a : b;
    const std::uint64_t pick = rng() % 32;
    const float f = pick == 0 ? (rng() % 2 ? 0.0f : -0.0f) : pick == 1 ? float_of_group(static_cast<int>(rng() % 15), false, rng)
                                                                       : std::fabs(float_of_group(g, rng() % 8 != 0, rng));
    one[i].bits = static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(f) >> 16);  // truncated: the same exponent
  }
  if (exact_gpu_backends(/*device=*/true).empty()) return;
  const double expected = xr::test::mpfr_sum<xr::bf16, double>(one.data(), period, repeats);
  std::vector<xr::bf16> host(period * repeats);
  for (std::size_t k = 0; k < repeats; ++k) std::copy(one.begin(), one.end(), host.begin() + k * period);
  void* dev = nullptr;
  REQUIRE(cudaMalloc(&dev, host.size() * sizeof(xr::bf16)) == cudaSuccess);
  REQUIRE(cudaMemcpy(dev, host.data(), host.size() * sizeof(xr::bf16), cudaMemcpyHostToDevice) == cudaSuccess);
  for (xr::Reducer* r : exact_gpu_backends(/*device=*/true)) {
    const xr::Request q{dev, host.size(), xr::DType::bf16, xr::Op::sum, xr::Memory::device};
    const double got = r->reduce(q, {.accuracy = xr::Accuracy::exact, .result_dtype = xr::DType::f64}).value.get<double>();
    INFO("seed " << xr::test::run_seed() << ", backend " << r->name() << ", groups " << a << " and " << b << ": got " << std::hexfloat
                 << got << ", MPFR " << expected);
    CHECK(xr::test::same_bits(got, expected));
  }
  cudaFree(dev);
}

namespace {

//! Segments for the exact segment sums: empty ones, short ones of every group size, some of a
//! block's (16 KB and more) and one of several blocks' chunks (more than 128 KB), in a shuffled
//! order; the offsets of `count` of them.
std::vector<std::uint64_t> mixed_offsets(std::size_t count, std::mt19937_64& rng) {
  std::vector<std::uint64_t> off{0};
  for (std::size_t s = 0; s < count; ++s) {
    const std::uint64_t pick = rng() % 100;
    const std::uint64_t length = pick < 10 ? 0 : pick < 80 ? rng() % 40 : pick < 97 ? 40 + rng() % 2000 : 4096 + rng() % 8000;
    off.push_back(off.back() + (s == count / 2 ? 70001 : length));
  }
  return off;
}

//! Each segment's exact sum from every exact GPU backend that declares them for segments, from
//! device and from pageable host memory, against MPFR's bits for that segment.
template <class T>
void check_exact_segments(const std::vector<T>& host, const std::vector<std::uint64_t>& offsets, std::size_t rows,
                          const std::string& what) {
  const std::size_t count = rows ? rows : offsets.size() - 1;
  std::vector<T> expected(count);
  for (std::size_t s = 0; s < count; ++s) {
    const std::size_t a = rows ? s * (host.size() / rows) : offsets[s], e = rows ? a + host.size() / rows : offsets[s + 1];
    expected[s] = xr::test::mpfr_sum(host.data() + a, e - a);
  }
  void* dev = nullptr;
  std::uint64_t* dev_offsets = nullptr;
  REQUIRE(cudaMalloc(&dev, host.size() * sizeof(T) + 16) == cudaSuccess);
  REQUIRE(cudaMalloc(&dev_offsets, offsets.size() * sizeof(std::uint64_t) + 8) == cudaSuccess);
  REQUIRE(cudaMemcpy(dev, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice) == cudaSuccess);
  REQUIRE(cudaMemcpy(dev_offsets, offsets.data(), offsets.size() * sizeof(std::uint64_t), cudaMemcpyHostToDevice) == cudaSuccess);
  for (xr::Reducer* backend : exact_gpu_backends()) {
    xr::Reducer& r = *backend;
    for (bool on_device : {true, false}) {
      xr::Request q = rows ? xr::Request::rows(on_device ? dev : host.data(), rows, host.size() / rows, xr::dtype_of<T>(), xr::Op::sum)
                           : xr::Request{on_device ? dev : host.data(), host.size(), xr::dtype_of<T>(), xr::Op::sum, xr::Memory::host};
      q.memory = on_device ? xr::Memory::device : xr::Memory::host;
      if (!rows) q.segments = xr::Segments::at(offsets.data(), count);  // the host copy: canonical() may read it
      if (r.capabilities().support(xr::features_of(xr::canonical(q), xr::Accuracy::exact)) == xr::Support::none) continue;
      if (!rows) q.segments = xr::Segments::at(on_device ? dev_offsets : offsets.data(), count);
      INFO("seed " << xr::test::run_seed() << " (replay with XREDUCE_TEST_SEED), backend " << r.name() << ", "
                   << to_string(xr::dtype_of<T>()) << ", " << what << (on_device ? ", device" : ", pageable host"));
      const xr::Result res = r.reduce(q, {.accuracy = xr::Accuracy::exact});
      REQUIRE(res.values.size() == count);
      std::size_t wrong = 0, first_wrong = count;
      for (std::size_t s = 0; s < count; ++s)
        if (!xr::test::same_bits(res.values[s].get<T>(), expected[s])) ++wrong, first_wrong = std::min(first_wrong, s);
      INFO(wrong << " of " << count << " segments wrong; the first, " << first_wrong << ": got "
                 << (wrong ? res.values[first_wrong].to_string() : std::string()) << ", MPFR "
                 << (wrong ? xr::Scalar(expected[first_wrong]).to_string() : std::string()));
      CHECK(wrong == 0);
    }
  }
  cudaFree(dev);
  cudaFree(dev_offsets);
}

//! f32 rows of 5, 40 and 300 elements (60000 elements or fewer each time), the data `make(offsets)`
//! draws for them, checked as check_exact_segments checks rows.
template <class Make>
void check_f32_rows(Make make, const std::string& what) {
  for (std::size_t length : {std::size_t{5}, std::size_t{40}, std::size_t{300}}) {
    const std::size_t rows = 60000 / length;
    std::vector<std::uint64_t> row_offsets(rows + 1);
    for (std::size_t r = 0; r <= rows; ++r) row_offsets[r] = r * length;
    check_exact_segments(make(row_offsets), {}, rows, std::to_string(rows) + " f32 rows of " + std::to_string(length) + ", " + what);
  }
}

}  // namespace

namespace {

//! A tie of T (f32 or bf16) at a random scale: b, of random sign and significand, about 2^e (e
//! from -40 to 40), and half b's ulp with b's sign, whose sum lies halfway between two values of T
//! (each a value of T itself: T(b) and T(half_ulp) are exact).
struct Tie {
  int e;
  double b, half_ulp;
};
template <class T>
Tie random_tie(std::mt19937_64& rng) {
  constexpr int kDigits = std::is_same_v<T, float> ? 24 : 8;
  const int e = static_cast<int>(rng() % 81) - 40;
  const double sign = rng() % 2 ? 1.0 : -1.0;
  const double b = sign * std::ldexp(1.0 + static_cast<double>(rng() % (1u << (kDigits - 1))) / (1u << (kDigits - 1)), e);
  return {e, b, sign * std::ldexp(1.0, e - kDigits)};
}

//! Rows of three 64 KB chunks, each nonzero element alone in its chunk: a value b of T in the
//! first, half b's ulp (of T) in the second, so that the two make a tie of T, and in the third
//! zero, one or a few tiny values of one sign, whose sum lies below half the double's ulp at b.
//! Every lane's elements then lie in one binade, and the chunks' partials combine to a pair of
//! doubles whose high part is the tie itself: the rounding must go by the low part, not to
//! even. Zeros of either sign elsewhere. The rows, and the same rows as segments.
template <class T>
void check_ties_in_a_window(std::size_t rows, std::mt19937_64& rng) {
  const std::size_t length = 3 * 65536 / sizeof(T), third = length / 3;
  std::vector<T> host(rows * length);
  for (T& x : host) x = T(rng() % 2 ? 0.0 : -0.0);
  for (std::size_t r = 0; r < rows; ++r) {
    T* row = host.data() + r * length;
    const Tie tie = random_tie<T>(rng);
    row[rng() % third] = T(tie.b);
    row[third + rng() % third] = T(tie.half_ulp);
    const double tiny = (rng() % 2 ? 1.0 : -1.0) * std::ldexp(1.0, tie.e - 60 - static_cast<int>(rng() % 8));
    for (std::uint64_t k = 0, count = rng() % 4; k < count; ++k) row[2 * third + rng() % third] = T(tiny);
  }
  std::vector<std::uint64_t> offsets(rows + 1);
  for (std::size_t r = 0; r <= rows; ++r) offsets[r] = r * length;
  check_exact_segments(host, {}, rows, std::to_string(rows) + " rows of " + std::to_string(length) + ", ties in a window");
  check_exact_segments(host, offsets, 0, std::to_string(rows) + " segments of " + std::to_string(length) + ", ties in a window");
}

}  // namespace

TEST_CASE("gpu exact sums of rows and segments: ties that a pair of doubles holds, rounded by their low part") {
  if (exact_gpu_backends(/*device=*/true).empty()) return;
  std::mt19937_64 rng(xr::test::run_seed() ^ 0x71e5u);
  const std::size_t rows = std::getenv("XREDUCE_TEST_QUICK") ? 8 : 128;
  check_ties_in_a_window<float>(rows, rng);
  check_ties_in_a_window<xr::bf16>(rows, rng);
}

namespace {

//! Segments (mixed_offsets' lengths) whose exact sums lie at a tie of T or near one: in each, a
//! value b of T and half b's ulp with b's sign (their sum a tie), and zero to three values of one
//! sign 2^21 to 2^80 times smaller than b, the rest zeros of either sign; each element in place
//! at random. A lane's elements then span more than 20 binades, so its segment goes through the
//! exponent bins and the digits, whose rounding must take a tie to even and a near-tie by the
//! small values, however far below b they lie. (A rounding of the bins' double sum, tried and
//! not kept, had to tell those apart within its error bound of 2^-48 of the magnitudes, which the
//! small values straddle: bench/results/nvidia-h200/logs/exact-segments-bins-rounding-experiment.md.)
template <class T>
std::vector<T> near_ties_in_the_bins(const std::vector<std::uint64_t>& offsets, std::mt19937_64& rng) {
  std::vector<T> v(offsets.back());
  for (T& x : v) x = T(rng() % 2 ? 0.0 : -0.0);
  for (std::size_t s = 0; s + 1 < offsets.size(); ++s) {
    const std::uint64_t a = offsets[s], length = offsets[s + 1] - a;
    if (length < 2) continue;
    const Tie tie = random_tie<T>(rng);
    const std::uint64_t at = rng() % length;
    v[a + at] = T(tie.b);
    v[a + (at + 1 + rng() % (length - 1)) % length] = T(tie.half_ulp);
    const double small = (rng() % 2 ? 1.0 : -1.0) * std::ldexp(1.0, tie.e - 21 - static_cast<int>(rng() % 60));
    for (std::uint64_t k = 0, count = rng() % 4; k < count; ++k) {
      T& x = v[a + rng() % length];
      if (std::abs(static_cast<double>(static_cast<float>(x))) < std::abs(tie.b) / 4) x = T(small);  // not over b or the half ulp
    }
  }
  return v;
}

}  // namespace

TEST_CASE("gpu exact sums of rows and segments: ties and near-ties of T through the exponent bins, short and long") {
  if (exact_gpu_backends(/*device=*/true).empty()) return;
  std::mt19937_64 rng(xr::test::run_seed() ^ 0x7e1eu);
  const std::vector<std::uint64_t> offsets = mixed_offsets(std::getenv("XREDUCE_TEST_QUICK") ? 300 : 3000, rng);
  check_exact_segments(near_ties_in_the_bins<float>(offsets, rng), offsets, 0, "f32 segments, near-ties");
  check_exact_segments(near_ties_in_the_bins<xr::bf16>(offsets, rng), offsets, 0, "bf16 segments, near-ties");
  check_f32_rows([&](const auto& row_offsets) { return near_ties_in_the_bins<float>(row_offsets, rng); }, "near-ties");
}

namespace {

//! Segments of small integers times 2^e (1 to 15 times it, e from -4 to 4, one a segment): pairs
//! of a value and its negation in a shuffled order, so that many segments sum to exactly 0 (+0
//! by the rules, unless every element was -0), others to one element left over; zeros of either
//! sign among them. A warp's elements, of one segment or several, span 12 binades at most: the
//! first pass folds its lanes' sums as plain doubles (fold_groups), which must keep them exact
//! and the zeros' sign right.
template <class T>
std::vector<T> cancelling_within_a_binade(const std::vector<std::uint64_t>& offsets, std::mt19937_64& rng) {
  std::vector<T> v(offsets.back());
  for (std::size_t s = 0; s + 1 < offsets.size(); ++s) {
    const std::uint64_t a = offsets[s], e = offsets[s + 1];
    const int exponent = static_cast<int>(rng() % 9) - 4;
    const bool leftover = rng() % 4 == 0, only_zeros = rng() % 8 == 0;
    for (std::uint64_t i = a; i + 1 < e; i += 2) {
      const double x = only_zeros ? 0.0 : std::ldexp(static_cast<double>(rng() % 15) + 1, exponent);
      v[i] = T(x), v[i + 1] = T(-x);
    }
    if ((e - a) % 2) v[e - 1] = T(leftover ? std::ldexp(3.0, exponent) : rng() % 2 ? 0.0 : -0.0);
    for (std::uint64_t i = a; i < e; ++i)
      if (rng() % 16 == 0) v[i] = T(only_zeros && rng() % 2 ? -0.0 : 0.0);  // breaks a pair: fine, MPFR says the sum
    std::shuffle(v.begin() + static_cast<std::ptrdiff_t>(a), v.begin() + static_cast<std::ptrdiff_t>(e), rng);
    if (only_zeros && rng() % 2)
      for (std::uint64_t i = a; i < e; ++i) v[i] = T(-0.0);  // every element -0: the sum is -0
  }
  return v;
}

}  // namespace

TEST_CASE("gpu exact f16 rows: a warp's threads' counts of 2^-24 adding past 2^53, odd, cancelled by the next warp's") {
  if (exact_gpu_backends(/*device=*/true).empty()) return;
  // One row of 65535 f16 (two chunks less one element): a block's 256 threads, thread t reading
  // vectors t, t + 256, ... and the seven lone elements after the last vector going to threads 0
  // to 6 (segmented.cuh's rows_kernel and group_partial). So the first warp holds 8199 elements:
  // 65504 each (2^40 - 2^29 units of 2^-24) but for one 2^-24, an odd count just past 2^53,
  // which its nearest double does not hold (fold_groups hands the rest on as a low part). The
  // second warp's 8192 and six of the third's are -65504: the row's sum is 2^-24. And negated.
  constexpr std::size_t kLength = 65535, kVec = 8, kThreads = 256;
  for (const double sign : {1.0, -1.0}) {
    std::vector<xr::f16> row(kLength, xr::f16(0.0));
    int third = 0;
    for (std::size_t i = 0; i < kLength; ++i) {
      const std::size_t thread = i < kLength / kVec * kVec ? i / kVec % kThreads : i - kLength / kVec * kVec;
      if (thread < 32) row[i] = xr::f16(sign * 65504.0);
      else if (thread < 64) row[i] = xr::f16(-sign * 65504.0);
      else if (thread < 96 && third < 6) row[i] = xr::f16(-sign * 65504.0), ++third;
    }
    row[3] = xr::f16(sign * 0x1p-24);  // the first warp's odd unit
    check_exact_segments(row, {}, 1, sign > 0 ? "a row of 65535 f16 summing to 2^-24" : "a row of 65535 f16 summing to -2^-24");
  }
}

TEST_CASE("gpu exact sums of rows and segments: sums that cancel to zero within a few binades, and their zeros' sign") {
  if (exact_gpu_backends(/*device=*/true).empty()) return;
  std::mt19937_64 rng(xr::test::run_seed() ^ 0xca9cu);
  const bool quick = std::getenv("XREDUCE_TEST_QUICK") != nullptr;
  const std::vector<std::uint64_t> offsets = mixed_offsets(quick ? 300 : 3000, rng);
  check_exact_segments(cancelling_within_a_binade<float>(offsets, rng), offsets, 0, "cancelling f32 segments");
  check_exact_segments(cancelling_within_a_binade<xr::f16>(offsets, rng), offsets, 0, "cancelling f16 segments");
  check_exact_segments(cancelling_within_a_binade<xr::bf16>(offsets, rng), offsets, 0, "cancelling bf16 segments");
  for (std::size_t length : {std::size_t{8}, std::size_t{256}, std::size_t{16384}}) {
    const std::size_t rows = (quick ? 65536 : 262144) / length;
    std::vector<std::uint64_t> row_offsets(rows + 1);
    for (std::size_t r = 0; r <= rows; ++r) row_offsets[r] = r * length;
    check_exact_segments(cancelling_within_a_binade<float>(row_offsets, rng), {}, rows,
                         std::to_string(rows) + " cancelling rows of " + std::to_string(length));
  }
}

namespace {

//! Segments each of one scale: elements of full significands (T's), mostly positive, within
//! three binades of 2^e for each segment's own e, anywhere from T's subnormals to its largest
//! binade. A warp's lanes then each hold their elements in one double, but a warp's segments
//! lie far apart, so the fold goes through the bins, each lane's double split into three parts
//! (near the top, a double past the floats' range; sums past T's largest round to infinity).
template <class T>
std::vector<T> one_scale_a_segment(const std::vector<std::uint64_t>& offsets, std::mt19937_64& rng) {
  using L = std::numeric_limits<T>;  // f16 and bf16 too (xreduce/float16.hpp)
  constexpr int kDigits = L::digits;
  const int lowest = L::min_exponent - kDigits, highest = L::max_exponent - 3;
  std::vector<T> v(offsets.back());
  for (std::size_t s = 0; s + 1 < offsets.size(); ++s) {
    const int e = lowest + static_cast<int>(rng() % static_cast<std::uint64_t>(highest - lowest + 1));
    for (std::uint64_t i = offsets[s]; i < offsets[s + 1]; ++i) {
      const double significand = static_cast<double>((1ull << (kDigits - 1)) + rng() % (1ull << (kDigits - 1)));
      const double x = std::ldexp(significand, e - kDigits + 1 + static_cast<int>(rng() % 3));
      v[i] = T(rng() % 4 ? x : -x);  // below T's smallest normal: rounded once to a subnormal
    }
  }
  return v;
}

}  // namespace

TEST_CASE("gpu exact sums of rows and segments: each segment of one scale, a warp's segments far apart") {
  if (exact_gpu_backends(/*device=*/true).empty()) return;
  std::mt19937_64 rng(xr::test::run_seed() ^ 0x05ca1eu);
  const std::vector<std::uint64_t> offsets = mixed_offsets(std::getenv("XREDUCE_TEST_QUICK") ? 300 : 3000, rng);
  check_exact_segments(one_scale_a_segment<float>(offsets, rng), offsets, 0, "f32 segments of one scale each");
  check_exact_segments(one_scale_a_segment<xr::f16>(offsets, rng), offsets, 0, "f16 segments of one scale each");
  check_exact_segments(one_scale_a_segment<xr::bf16>(offsets, rng), offsets, 0, "bf16 segments of one scale each");
  check_f32_rows([&](const auto& row_offsets) { return one_scale_a_segment<float>(row_offsets, rng); }, "one scale each");
}

TEST_CASE("gpu exact sums of rows and segments: f32, f64, f16 and bf16, every shape of data, MPFR's bits for each segment") {
  if (exact_gpu_backends(/*device=*/true).empty()) return;
  std::mt19937_64 rng(xr::test::run_seed() ^ 0x5e95u);
  const bool quick = std::getenv("XREDUCE_TEST_QUICK") != nullptr;
  const std::vector<std::uint64_t> offsets = mixed_offsets(quick ? 300 : 3000, rng);
  const std::size_t n = offsets.back();
  // Quick (the sanitizers' runs): the shapes that reach every flag (NaN, infinities, -0) and the
  // widest spread of digits.
  const std::vector<ExactShape> shapes = quick ? std::vector<ExactShape>{ExactShape::wide, ExactShape::specials, ExactShape::zeros}
                                               : std::vector<ExactShape>(std::begin(xr::test::all_exact_shapes), std::end(xr::test::all_exact_shapes));
  for (ExactShape shape : shapes) {
    const std::string what = std::string("data ") + name(shape);
    check_exact_segments(xr::test::make_exact_data<float>(shape, n, rng), offsets, 0, what + ", segments");
    check_exact_segments(xr::test::make_exact_data<double>(shape, n, rng), offsets, 0, what + ", segments");
    check_exact_segments(xr::test::make_exact_data16<xr::f16>(shape, n, rng), offsets, 0, what + ", segments");
    check_exact_segments(xr::test::make_exact_data16<xr::bf16>(shape, n, rng), offsets, 0, what + ", segments");
    // Equal rows: a lane's few elements, a block's, and rows cut into chunks (160 KB).
    for (std::size_t length : {std::size_t{7}, std::size_t{300}, std::size_t{40000}}) {
      const std::size_t rows = std::max<std::size_t>(1, (quick ? 100000 : 400000) / length);
      check_exact_segments(xr::test::make_exact_data<float>(shape, rows * length, rng), {}, rows,
                           what + ", " + std::to_string(rows) + " rows of " + std::to_string(length));
      check_exact_segments(xr::test::make_exact_data<double>(shape, rows * length, rng), {}, rows,
                           what + ", " + std::to_string(rows) + " f64 rows of " + std::to_string(length));
    }
    // bf16 rows just under two of the second pass's 96 KB chunks: 384 elements a lane.
    check_exact_segments(xr::test::make_exact_data16<xr::bf16>(shape, 2 * 98303, rng), {}, 2, what + ", 2 rows of 98303 (bf16)");
  }
  // Rows of 98303 bf16 (just under two of the second pass's 96 KB chunks: a block each, 384
  // elements a lane, the most its kernels give a lane, of the 512 a lane's double is exact for)
  // of one value whose significand lands at bit 31 of its digit; and of 65535 (256 a lane, the
  // first pass's most).
  for (const std::size_t length : {std::size_t{98303}, std::size_t{65535}}) {
    const std::vector<xr::bf16> same(4 * length, xr::bf16::from_bits(0x407f));  // 3.984375
    check_exact_segments(same, {}, 4, "4 rows of " + std::to_string(length) + " times 3.984375 (bf16)");
  }
}

namespace {

//! f64 segments of values of the top binade and their negations, shuffled, so that a pair of
//! doubles holding them unscaled would pass 2^1024 on the way (exact_segments_f64.cuh takes them
//! in its large pair, times 2^-64), and a leftover of any scale (or none, or an infinity or a NaN
//! in one segment of eight) that the exact sum is. A leftover that is special, tiny, or small
//! next to the pair's bound sends the segment on to the digits of the second launch.
std::vector<double> top_binade_cancelling(const std::vector<std::uint64_t>& offsets, std::mt19937_64& rng) {
  std::vector<double> v(offsets.back());
  for (std::size_t s = 0; s + 1 < offsets.size(); ++s) {
    const std::uint64_t a = offsets[s], e = offsets[s + 1];
    for (std::uint64_t i = a; i + 1 < e; i += 2) {
      const double x = std::ldexp(1.0 + static_cast<double>(rng() >> 12) * 0x1p-52, 1023);
      v[i] = x, v[i + 1] = -x;
    }
    if ((e - a) % 2) {
      const std::uint64_t pick = rng() % 8;
      const double leftover = std::ldexp(1.0 + static_cast<double>(rng() >> 12) * 0x1p-52, static_cast<int>(rng() % 2098) - 1074);
      v[e - 1] = pick == 0 ? std::numeric_limits<double>::infinity() : pick == 1 ? std::numeric_limits<double>::quiet_NaN()
                 : pick == 2 ? -0.0 : rng() % 2 ? leftover : -leftover;
    }
    std::shuffle(v.begin() + static_cast<std::ptrdiff_t>(a), v.begin() + static_cast<std::ptrdiff_t>(e), rng);
  }
  return v;
}

}  // namespace

TEST_CASE("gpu exact f64 rows and segments: top-binade values cancelling past 2^1024 on the way, many summed again in digits") {
  if (exact_gpu_backends(/*device=*/true).empty()) return;
  std::mt19937_64 rng(xr::test::run_seed() ^ 0xf64fu);
  const bool quick = std::getenv("XREDUCE_TEST_QUICK") != nullptr;
  const std::vector<std::uint64_t> offsets = mixed_offsets(quick ? 300 : 3000, rng);
  check_exact_segments(top_binade_cancelling(offsets, rng), offsets, 0, "f64 segments past 2^1024 on the way");
  // Rows summed again by a warp (up to kWarpRetryMost = 1024 elements) or by blocks a chunk of
  // kRetryChunk = 65536 (exact_segments_f64.cuh), on either side of each: one chunk, two (the
  // second of one element), and five, each block's lanes carrying every 2^10 of their elements.
  for (std::size_t length : {std::size_t{5}, std::size_t{300}, std::size_t{1024}, std::size_t{1025}, std::size_t{65536},
                             std::size_t{65537}, std::size_t{300001}}) {
    const std::size_t rows = std::max<std::size_t>(2, (quick ? 100000 : 600000) / length);
    std::vector<std::uint64_t> row_offsets(rows + 1);
    for (std::size_t r = 0; r <= rows; ++r) row_offsets[r] = r * length;
    check_exact_segments(top_binade_cancelling(row_offsets, rng), {}, rows,
                         std::to_string(rows) + " f64 rows of " + std::to_string(length) + " past 2^1024 on the way");
  }
}
