// The contract: one body, run over every registered backend (built-in and plugins found beside
// the core library or on XREDUCE_PLUGIN_PATH), checking the semantics table of docs/semantics.md against
// exact references. XREDUCE_TEST_BACKENDS=a,b,prefix* narrows the run (scripts/gpu-check.sh
// uses it for the CUDA backends). Backends that cannot run here are skipped, saying why.

#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <sys/mman.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <thread>

#include "conformance/backends.hpp"
#include "support/test_data.hpp"
#include "xreduce/xreduce.hpp"
#include "xreduce/backend/reducer.hpp"

namespace xr = xreduce;
using xr::test::Pattern;
using xr::test::backends, xr::test::memory_for, xr::test::quick;

namespace {

//! Runs `q` on `r` and checks the result against `ref` (exact backends) or only its form (inexact).
void check_one(xr::Reducer& r, const xr::Request& q, const xr::Reference& ref) {
  const xr::Support support = r.capabilities().support(q.dtype, q.op);
  if (support == xr::Support::none) {
    CHECK_THROWS_WITH_AS(r.reduce(q), doctest::Contains(std::string(r.name()).c_str()), xr::Error);
    return;
  }
  xr::Result result = r.reduce(q);
  CHECK(result.backend == r.name());
  CHECK(result.value.dtype() == xr::result_dtype(q.dtype, q.op));
  if (support == xr::Support::inexact) return;
  double error = 0;
  const bool ok = xr::agrees(q, ref, result, &error);
  INFO("got " << result.value.to_string() << (result.index ? " @" + std::to_string(*result.index) : std::string()) << ", reference "
              << ref.value.to_string() << (ref.index ? " @" + std::to_string(*ref.index) : std::string()) << ", |error| "
              << error << " > tolerance " << xr::tolerance(q, ref));
  CHECK(ok);
}

//! Reduces `data` (copied to the requested misalignment) with every backend and op-compatible check.
template <class T>
void check_all_backends(const xr::test::Elements<T>& data, xr::Op op, std::size_t byte_offset) {
  // Place the elements `byte_offset` bytes past a 64-byte boundary: 0, one element (aligned to the
  // element but not to vectors), or 1 (not even aligned to the element).
  std::vector<std::uint64_t> storage((data.size() * sizeof(T) + byte_offset) / 8 + 16);
  unsigned char* base = reinterpret_cast<unsigned char*>(storage.data());
  base += (64 - reinterpret_cast<std::uintptr_t>(base) % 64) % 64 + byte_offset;
  if (!data.empty()) std::memcpy(base, data.data(), data.size() * sizeof(T));
  xr::Request q{data.empty() ? nullptr : base, data.size(), xr::dtype_of<T>(), op, xr::Memory::host};

  if (data.empty() && xr::OpSet{op}.needs_elements()) {
    for (xr::Reducer* r : backends()) {
      if (r->capabilities().support(q.dtype, op) == xr::Support::none) continue;
      INFO("backend " << r->name());
      CHECK_THROWS_WITH_AS(r->reduce(q), doctest::Contains("empty"), xr::Error);
      try {
        r->reduce(q);
      } catch (const xr::Error& e) {
        CHECK(e.code() == xr::ErrorCode::empty_input);
      }
    }
    return;
  }
  const xr::Reference ref = xr::exact_reference(q);
  for (xr::Reducer* r : backends()) {
    if (memory_for(*r) != xr::Memory::host) continue;  // device-only backends: tests/gpu
    INFO("backend " << r->name());
    check_one(*r, q, ref);
  }
}

const std::vector<std::size_t>& sizes() {
  static const std::vector<std::size_t> full{0,     1,     2,     31,    32,    33,    1023, 1024, 1025,
                                             65535, 65536, 65537, 3 * 65536 + 5, (std::size_t{1} << 20) + 7};
  static const std::vector<std::size_t> few{0, 1, 33, 1025, 65537, 3 * 65536 + 5};
  return quick() ? few : full;
}

template <class T>
void conformance_for_type() {
  const bool floating = xr::is_float_v<T>;
  std::mt19937_64 rng(xr::test::run_seed() ^ static_cast<std::uint64_t>(xr::dtype_of<T>()));
  for (xr::Op op : xr::all_ops) {
    std::vector<Pattern> patterns{Pattern::random};
    if (!quick()) patterns.push_back(Pattern::negative);
    if (!xr::accumulates(op)) patterns.push_back(Pattern::ties);
    if (floating) patterns.push_back(Pattern::nan);
    if (floating && !quick()) patterns.insert(patterns.end(), {Pattern::inf, Pattern::both_inf});
    for (std::size_t n : sizes()) {
      for (Pattern p : patterns) {
        xr::test::Elements<T> data = xr::test::make_data<T>(p, op, n, rng);
        for (std::size_t offset : {std::size_t{0}, sizeof(T), std::size_t{1}}) {
          if ((n > 65537 || quick()) && offset == sizeof(T)) continue;  // the small sizes already cover it
          INFO("seed " << xr::test::run_seed() << " (replay with XREDUCE_TEST_SEED), " << to_string(op) << " of "
                       << to_string(xr::dtype_of<T>()) << ", n = " << n << ", data " << std::string(xr::test::name(p))
                       << ", byte offset " << offset);
          check_all_backends(data, op, offset);
        }
      }
    }
  }
}

}  // namespace

TEST_CASE("every backend: f32") { conformance_for_type<float>(); }
TEST_CASE("every backend: f64") { conformance_for_type<double>(); }
TEST_CASE("every backend: i32") { conformance_for_type<std::int32_t>(); }
TEST_CASE("every backend: i64") { conformance_for_type<std::int64_t>(); }
TEST_CASE("every backend: u32") { conformance_for_type<std::uint32_t>(); }
TEST_CASE("every backend: u64") { conformance_for_type<std::uint64_t>(); }
TEST_CASE("every backend: f16") { conformance_for_type<xr::f16>(); }
TEST_CASE("every backend: bf16") { conformance_for_type<xr::bf16>(); }
TEST_CASE("every backend: i8") { conformance_for_type<std::int8_t>(); }
TEST_CASE("every backend: u8") { conformance_for_type<std::uint8_t>(); }
TEST_CASE("every backend: i16") { conformance_for_type<std::int16_t>(); }
TEST_CASE("every backend: u16") { conformance_for_type<std::uint16_t>(); }
TEST_CASE("every backend: bool") { conformance_for_type<bool>(); }

TEST_CASE("every backend: empty input gives the identity of sum, prod and sumsq, in the result type") {
  for (xr::Reducer* r : backends()) {
    INFO("backend " << r->name());
    for (xr::DType t : xr::all_dtypes) {
      for (xr::Op op : {xr::Op::sum, xr::Op::prod, xr::Op::sumsq}) {
        if (r->capabilities().support(t, op) == xr::Support::none) continue;
        xr::Result res = r->reduce(xr::Request{nullptr, 0, t, op, memory_for(*r)});
        CHECK(res.value.dtype() == xr::result_dtype(t, op));
        CHECK(res.value.to_double() == (op == xr::Op::prod ? 1.0 : 0.0));
      }
    }
  }
}

TEST_CASE("every backend: null data with a count is an error, not a crash") {
  for (xr::Reducer* r : backends()) {
    INFO("backend " << r->name());
    try {
      r->reduce(xr::Request{nullptr, 10, xr::DType::f32, xr::Op::sum, memory_for(*r)});
      FAIL("no error");
    } catch (const xr::Error& e) {
      CHECK(e.code() == xr::ErrorCode::invalid_argument);
    }
  }
}

TEST_CASE("every backend: unsupported combinations are refused, naming backend and combination") {
  for (xr::Reducer* r : backends()) {
    for (xr::DType t : xr::all_dtypes)
      for (xr::Op op : xr::all_ops) {
        if (r->capabilities().support(t, op) != xr::Support::none) continue;
        INFO("backend " << r->name() << ", " << to_string(op) << " of " << to_string(t));
        std::uint64_t one = 1;
        try {
          r->reduce(xr::Request{&one, 1, t, op, xr::Memory::host});
          FAIL("no error");
        } catch (const xr::Error& e) {
          CHECK(e.code() == xr::ErrorCode::unsupported);
          CHECK(std::string(e.what()).find(std::string(r->name())) != std::string::npos);
          CHECK(std::string(e.what()).find(std::string(to_string(op)) + " of " + std::string(to_string(t))) != std::string::npos);
        }
      }
  }
}

TEST_CASE("every backend: counts beyond 2^31 (64-bit indices and exact 64-bit sums)") {
  if (quick()) {
    MESSAGE("skipped under XREDUCE_TEST_QUICK");
    return;
  }
  // 2^31 + 4099 u32 elements (8.6 GB of address space) mapped from the kernel's zero page:
  // untouched pages cost no memory, so only the few we write are real.
  const std::size_t n = (std::size_t{1} << 31) + 4099;
  void* p = mmap(nullptr, n * 4, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  REQUIRE(p != MAP_FAILED);
  auto* x = static_cast<std::uint32_t*>(p);
  std::mt19937_64 rng(xr::test::run_seed());
  const std::size_t far = (std::size_t{1} << 31) + 1 + rng() % 4000;  // beyond 2^31
  x[5] = 7;
  x[far] = 0xFFFFFFFFu;
  x[n - 1] = 3;
  for (xr::Op op : {xr::Op::sum, xr::Op::argmax, xr::Op::min}) {
    xr::Request q{x, n, xr::DType::u32, op, xr::Memory::host};
    const xr::Reference ref = xr::exact_reference(q);
    for (xr::Reducer* r : backends()) {
      if (r->capabilities().support(q.dtype, op) != xr::Support::exact || !r->capabilities().reads(xr::Memory::host)) continue;
      INFO("backend " << r->name() << ", " << to_string(op) << ", extreme planted at " << far);
      check_one(*r, q, ref);
    }
  }
  CHECK(xr::exact_reference(xr::Request{x, n, xr::DType::u32, xr::Op::sum}).value.get<std::uint64_t>() == 7 + 0xFFFFFFFFull + 3);
  munmap(p, n * 4);
}

// Records: `count` rows of `width` values, reduced column by column (Request::records: axis 0
// of a count x width view). Every backend that declares them for the op is checked column by
// column against exact references; the others must refuse.
namespace {

template <class T>
void records_for_type() {
  std::mt19937_64 rng(xr::test::run_seed() ^ (0x5eedull + static_cast<std::uint64_t>(xr::dtype_of<T>())));
  struct Shape {
    std::size_t count, width;
  };
  std::vector<Shape> shapes{{0, 3}, {1, 2}, {7, 9}, {1000, 9}, {33, 16}, {5, 70001}, {65537, 3}, {4, 0}};
  if (!quick()) shapes.insert(shapes.end(), {{(std::size_t{1} << 18) + 3, 9}, {4097, 100}});
  for (xr::Op op : xr::all_ops) {
    std::vector<Pattern> patterns{Pattern::random};
    if (!xr::accumulates(op)) patterns.push_back(Pattern::ties);
    if (xr::is_float_v<T>) patterns.push_back(Pattern::nan);
    for (Shape s : shapes)
      for (Pattern p : patterns) {
        xr::test::Elements<T> data = xr::test::make_data<T>(p, op, s.count * s.width, rng);
        const xr::Request q = xr::Request::records(data.empty() ? nullptr : data.data(), s.count, s.width, xr::dtype_of<T>(), op);
        INFO("seed " << xr::test::run_seed() << " (replay with XREDUCE_TEST_SEED), " << to_string(op) << " of "
                     << to_string(xr::dtype_of<T>()) << ", " << s.count << " records of width " << s.width << ", data "
                     << std::string(xr::test::name(p)));
        if (s.count == 0 && s.width > 0 && xr::OpSet{op}.needs_elements()) continue;  // empty_input: the views' test checks it
        const xr::Reference ref = xr::exact_reference(q);
        REQUIRE(ref.results.size() == s.width);
        for (xr::Reducer* r : backends()) {
          if (memory_for(*r) != xr::Memory::host || r->capabilities().support(q.dtype, op) != xr::Support::exact) continue;
          INFO("backend " << r->name());
          if (xr::test::support_of(*r, q) == xr::Support::none) {
            CHECK_THROWS_WITH_AS(r->reduce(q), doctest::Contains("layout outer"), xr::Error);
            continue;
          }
          xr::Result result = r->reduce(q);
          REQUIRE(result.values.size() == s.width);
          CHECK(result.shape == std::vector<std::int64_t>{static_cast<std::int64_t>(s.width)});
          if (s.width > 0) CHECK(result.value == result.values.front());
          double error = 0;
          const bool ok = xr::agrees(q, ref, result, &error);
          INFO("|error| " << error << ", tolerance " << xr::tolerance(q, ref));
          CHECK(ok);
        }
      }
  }
}

}  // namespace

TEST_CASE("every backend: records, f32") { records_for_type<float>(); }
TEST_CASE("every backend: records, f64") { records_for_type<double>(); }
TEST_CASE("every backend: records, f16") { records_for_type<xr::f16>(); }
TEST_CASE("every backend: records, bf16") { records_for_type<xr::bf16>(); }
TEST_CASE("every backend: records, u8") { records_for_type<std::uint8_t>(); }
TEST_CASE("every backend: records, i16") { records_for_type<std::int16_t>(); }
TEST_CASE("every backend: records, bool") { records_for_type<bool>(); }
TEST_CASE("every backend: records, i32") { records_for_type<std::int32_t>(); }
TEST_CASE("every backend: records, u64") { records_for_type<std::uint64_t>(); }

TEST_CASE("every backend: 16 threads at once, each on its own data, every result right") {
  // Backends keep state between calls (thread pools, kept arenas, GPU workspaces, cached lists):
  // callers on many threads at once must each get their own answer. Half the callers name a
  // thread count (1, 2 or 3, shared between them), half take the default. Results are gathered
  // and checked here, on the test's thread.
  constexpr int kThreads = 16, kCalls = 4;
  const std::size_t n = quick() ? 5000 : 200'003;
  for (xr::Reducer* r : backends()) {
    for (xr::Op op : {xr::Op::sum, xr::Op::argmax}) {
      if (r->capabilities().support(xr::DType::f64, op) != xr::Support::exact) continue;
      INFO("seed " << xr::test::run_seed() << ", backend " << r->name() << ", " << to_string(op));
      std::vector<std::vector<double>> data(kThreads);
      std::vector<xr::Reference> refs;
      std::mt19937_64 rng(xr::test::run_seed() + 16);
      for (int t = 0; t < kThreads; ++t) {
        data[t] = xr::test::make_data<double>(Pattern::random, op, n + t, rng);
        refs.push_back(xr::exact_reference(xr::Request{data[t].data(), data[t].size(), xr::DType::f64, op, xr::Memory::host}));
      }
      std::vector<std::vector<xr::Result>> results(kThreads);
      std::vector<std::string> failures(kThreads);
      std::atomic<int> ready{0};
      std::vector<std::thread> pool;
      for (int t = 0; t < kThreads; ++t)
        pool.emplace_back([&, t] {
          ready.fetch_add(1);
          while (ready.load() < kThreads) std::this_thread::yield();  // start together
          try {
            const xr::Options options{.threads = t % 2 ? 1 + t % 3 : 0};
            for (int c = 0; c < kCalls; ++c)
              results[t].push_back(
                  r->reduce(xr::Request{data[t].data(), data[t].size(), xr::DType::f64, op, memory_for(*r)}, options));
          } catch (const std::exception& e) {
            failures[t] = e.what();
          }
        });
      for (auto& th : pool) th.join();
      for (int t = 0; t < kThreads; ++t) {
        INFO("thread " << t);
        CHECK(failures[t] == "");
        for (const xr::Result& result : results[t])
          CHECK(xr::agrees(xr::Request{data[t].data(), data[t].size(), xr::DType::f64, op, xr::Memory::host}, refs[t], result));
      }
    }
  }
}

TEST_CASE("CPU chunk backends: the same bits as `sequential` for every size and thread count") {
  // The chunk driver's promise (xreduce/backend/chunk_driver.hpp): the chunks a request is cut
  // into depend on its size alone, and any such cut builds the same pairwise tree, so `openmp`
  // and `tbb` on any number of threads give `sequential`'s bits. Sizes cross every chunk size
  // (2^13 to 2^16 elements, and the switch to 2^16 at 2^20), whole and with a part chunk.
  xr::Registry& registry = xr::default_context().registry();
  xr::Reducer* sequential = registry.find("sequential");
  REQUIRE(sequential != nullptr);
  std::vector<xr::Reducer*> parallel;
  for (const char* name : {"openmp", "tbb"})
    if (xr::Reducer* r = registry.find(name); r && r->available() && xr::test::selected(name)) parallel.push_back(r);
  if (parallel.empty()) return;
  std::mt19937_64 rng(xr::test::run_seed() + 17);
  std::vector<std::size_t> sizes{std::size_t{1} << 13, (std::size_t{1} << 14) + 1, (std::size_t{1} << 17) - 256,
                                 (std::size_t{1} << 17) + 5, (std::size_t{1} << 20) - 1, (std::size_t{1} << 20) + 3};
  for (int k = 0; k < (quick() ? 2 : 8); ++k) sizes.push_back(1 + rng() % (std::size_t{1} << (10 + rng() % 12)));
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  for (std::size_t n : sizes) {
    // Magnitudes over 2^-20..2^20, so that a different tree of additions rounds differently.
    std::vector<float> f32(n);
    std::vector<double> f64(n);
    for (std::size_t i = 0; i < n; ++i) {
      f64[i] = unit(rng) * std::exp2(static_cast<int>(rng() % 41) - 20);
      f32[i] = static_cast<float>(f64[i]);
    }
    const std::vector<float> ties = xr::test::make_data<float>(Pattern::ties, xr::Op::argmax, n, rng);
    const std::vector<xr::Request> requests{
        {f32.data(), n, xr::DType::f32, xr::Op::sum, xr::Memory::host},
        {f64.data(), n, xr::DType::f64, xr::Op::sum, xr::Memory::host},
        {ties.data(), n, xr::DType::f32, xr::Op::argmax, xr::Memory::host},
        {ties.data(), n, xr::DType::f32, xr::Op::argmin, xr::Memory::host}};
    for (const xr::Request& q : requests) {
      const xr::Result expected = sequential->reduce(q);
      for (xr::Reducer* r : parallel) {
        for (int threads : {1, 2, 3, 7, 16}) {
          INFO("seed " << xr::test::run_seed() << " (replay with XREDUCE_TEST_SEED), " << r->name() << " on " << threads << " threads, "
                       << to_string(q.op) << " of " << n << " " << to_string(q.dtype) << ": " << expected.value.to_string());
          const xr::Result got = r->reduce(q, xr::Options{.threads = threads});
          CHECK(std::memcmp(got.value.bytes(), expected.value.bytes(), xr::size_of(q.dtype)) == 0);
          CHECK(got.index == expected.index);
        }
      }
    }
  }
}
