// Exact sums (Accuracy::exact): every backend that declares them returns the bits of an
// independent reference (MPFR, tests/support/mpfr_reference.hpp) for every size class, thread
// count, block size, misaligned start and adversarial shape; the others refuse with
// `unsupported`, never a rounded answer.

#include <algorithm>
#include <doctest/doctest.h>

#include <string>
#include <thread>

#include "conformance/backends.hpp"
#include "support/exact_data.hpp"
#include "support/mpfr_reference.hpp"
#include "support/test_data.hpp"
#include "xreduce/xreduce.hpp"

namespace xr = xreduce;
using xr::test::backends, xr::test::memory_for, xr::test::quick;
using xr::test::ExactShape;

namespace {

const xr::Options kExact{.accuracy = xr::Accuracy::exact};

//! The option sets a backend is tried with: thread counts 1..cores+1 for a CPU-parallel one,
//! every block size for one that reads the setting (the CUDA backends), the defaults for the rest.
std::vector<xr::Options> variants(const xr::Reducer& r) {
  std::vector<xr::Options> v{kExact};
  const xr::Engine engine = r.capabilities().engine();
  if (engine == xr::Engine::cpu_parallel) {
    const int most = quick() ? 2 : static_cast<int>(std::thread::hardware_concurrency()) + 1;
    for (int t = 1; t <= most; ++t) v.push_back({.threads = t, .accuracy = xr::Accuracy::exact});
  } else if (std::ranges::any_of(r.settings(), [](const xr::SettingInfo& s) { return s.key == "block_size"; })) {
    for (int b : {128, 512, 1024}) {
      v.push_back({.accuracy = xr::Accuracy::exact});
      v.back().settings.set("block_size", std::to_string(b));
    }
  }
  return v;
}

//! Puts `data` `byte_offset` bytes past a 64-byte boundary inside `storage`.
template <class T>
const T* placed(const std::vector<T>& data, std::size_t byte_offset, std::vector<std::uint64_t>& storage) {
  storage.assign((data.size() * sizeof(T) + byte_offset) / 8 + 16, 0);
  auto* base = reinterpret_cast<unsigned char*>(storage.data());
  base += (64 - reinterpret_cast<std::uintptr_t>(base) % 64) % 64 + byte_offset;
  if (!data.empty()) std::memcpy(base, data.data(), data.size() * sizeof(T));
  return reinterpret_cast<const T*>(base);
}

template <class T>
void check_exact(const std::vector<T>& data, std::size_t byte_offset) {
  std::vector<std::uint64_t> storage;
  const T* x = placed(data, byte_offset, storage);
  const T expected = xr::test::mpfr_sum(data.data(), data.size());
  const xr::Request q{data.empty() ? nullptr : x, data.size(), xr::dtype_of<T>(), xr::Op::sum, xr::Memory::host};
  for (xr::Reducer* r : backends()) {
    if (memory_for(*r) != xr::Memory::host) continue;  // device-only backends: tests/gpu
    INFO("backend " << r->name());
    if (xr::test::support_of(*r, q, xr::Accuracy::exact) == xr::Support::none) {
      try {
        r->reduce(q, kExact);
        FAIL("an exact sum from a backend that does not declare them");
      } catch (const xr::Error& e) {
        CHECK(e.code() == xr::ErrorCode::unsupported);
      }
      continue;
    }
    for (const xr::Options& o : variants(*r)) {
      INFO("threads " << o.threads << ", settings " << o.settings.to_text());
      const xr::Result result = r->reduce(q, o);
      const T got = result.value.get<T>();
      INFO("got " << result.value.to_string() << " (" << std::hexfloat << got << "), MPFR " << expected << std::defaultfloat);
      CHECK(xr::test::same_bits(got, expected));
      REQUIRE(result.exact.size() == 1);
      CHECK(result.exact[0].count() == static_cast<std::int64_t>(data.size()));
    }
  }
}

template <class T>
void exact_for_type() {
  std::mt19937_64 rng(xr::test::run_seed() ^ (0xe8ac7ull + static_cast<std::uint64_t>(xr::dtype_of<T>())));
  static const std::vector<std::size_t> full{0, 1, 2, 31, 32, 33, 1023, 1024, 1025, 2047, 2048, 2049, 65535, 65537,
                                             (std::size_t{1} << 20) + 7};
  static const std::vector<std::size_t> few{0, 1, 33, 2049, 65537};
  for (std::size_t n : quick() ? few : full)
    for (ExactShape shape : xr::test::all_exact_shapes) {
      std::vector<T> data;
      if constexpr (xr::is_float16_v<T>) data = xr::test::make_exact_data16<T>(shape, n, rng);
      else data = xr::test::make_exact_data<T>(shape, n, rng);
      for (std::size_t offset : {std::size_t{0}, sizeof(T), std::size_t{1}}) {
        if (n > 65537 && offset == sizeof(T)) continue;  // the small sizes cover it
        INFO("seed " << xr::test::run_seed() << " (replay with XREDUCE_TEST_SEED), exact sum of " << to_string(xr::dtype_of<T>())
                     << ", n = " << n << ", data " << std::string(name(shape)) << ", byte offset " << offset);
        check_exact(data, offset);
      }
    }
}

}  // namespace

TEST_CASE("exact sums: f32, every size class, shape, alignment, thread count and block size") { exact_for_type<float>(); }
TEST_CASE("exact sums: f64, every size class, shape, alignment, thread count and block size") { exact_for_type<double>(); }
TEST_CASE("exact sums: f16, every size class, shape, alignment, thread count and block size") { exact_for_type<xr::f16>(); }
TEST_CASE("exact sums: bf16, every size class, shape, alignment, thread count and block size") { exact_for_type<xr::bf16>(); }

TEST_CASE("exact sums: random data of random shapes and sizes (a property test)") {
  std::mt19937_64 rng(xr::test::run_seed() ^ 0x9e0f5ull);
  for (int k = 0; k < (quick() ? 4 : 40); ++k) {
    const std::size_t n = rng() % (rng() % 2 ? 100 : 300000);
    const ExactShape shape = xr::test::all_exact_shapes[rng() % std::size(xr::test::all_exact_shapes)];
    INFO("seed " << xr::test::run_seed() << " (replay with XREDUCE_TEST_SEED), draw " << k << ", n = " << n << ", data "
                 << std::string(name(shape)));
    if (rng() % 2) check_exact(xr::test::make_exact_data<float>(shape, n, rng), 0);
    else check_exact(xr::test::make_exact_data<double>(shape, n, rng), 0);
  }
}

TEST_CASE("exact sums of records: each column's bits, on every backend that declares them") {
  std::mt19937_64 rng(xr::test::run_seed() ^ 0x4ec0dull);
  for (std::size_t width : {2, 7}) {
    for (std::size_t count : {std::size_t{1}, std::size_t{1000}, std::size_t{70001}}) {
      const ExactShape shape = xr::test::all_exact_shapes[rng() % std::size(xr::test::all_exact_shapes)];
      const std::vector<double> data = xr::test::make_exact_data<double>(shape, count * width, rng);
      const xr::Request q = xr::Request::records(data.data(), count, width, xr::DType::f64, xr::Op::sum);
      for (xr::Reducer* r : backends()) {
        if (memory_for(*r) != xr::Memory::host || xr::test::support_of(*r, q) == xr::Support::none) continue;
        INFO("seed " << xr::test::run_seed() << ", backend " << r->name() << ", " << count << " records of width " << width
                     << ", data " << std::string(name(shape)));
        if (xr::test::support_of(*r, q, xr::Accuracy::exact) == xr::Support::none) {
          CHECK_THROWS_AS(r->reduce(q, kExact), xr::Error);
          continue;
        }
        const xr::Result result = r->reduce(q, kExact);
        REQUIRE(result.values.size() == width);
        for (std::size_t j = 0; j < width; ++j) {
          std::vector<double> column(count);
          for (std::size_t i = 0; i < count; ++i) column[i] = data[i * width + j];
          INFO("column " << j);
          CHECK(xr::test::same_bits(result.values[j].get<double>(), xr::test::mpfr_sum(column.data(), count)));
        }
      }
    }
  }
}

TEST_CASE("exact sums: products and sums of squares of floats refuse the exact accuracy on every backend") {
  const float x[3] = {1, 2, 3};
  for (xr::Reducer* r : backends())
    for (xr::Op op : {xr::Op::prod, xr::Op::sumsq}) {
      if (r->capabilities().support(xr::DType::f32, op) == xr::Support::none) continue;
      INFO("backend " << r->name() << ", " << to_string(op));
      try {
        r->reduce(xr::Request{x, 3, xr::DType::f32, op, memory_for(*r)}, kExact);
        FAIL("no error");
      } catch (const xr::Error& e) {
        CHECK(e.code() == xr::ErrorCode::unsupported);
      }
    }
}
