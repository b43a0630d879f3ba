#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "xreduce/xreduce.hpp"
#include "xreduce/backend/registry.hpp"
#include "xreduce/backend/reducer.hpp"

namespace xr = xreduce;

TEST_CASE("plugins: the example plugin loads and reduces") {
  xr::Context ctx(xr::Context::Empty{}, {});
  ctx.registry().load_plugin(XREDUCE_TEST_EXAMPLE_PLUGIN);
  xr::Reducer* r = ctx.registry().find("example.neumaier");
  REQUIRE(r != nullptr);
  CHECK(r->available());
  std::vector<double> v{1e16, 1.0, -1e16, 1.0};  // naive summation gives 0 or 1; the answer is 2
  xr::Result res = r->reduce(xr::Request{v.data(), v.size(), xr::DType::f64, xr::Op::sum, xr::Memory::host});
  CHECK(res.value.get<double>() == 2.0);
  CHECK(res.backend == "example.neumaier");
  // Capabilities cross the ABI intact.
  CHECK(r->capabilities().support(xr::DType::f32, xr::Op::sum) == xr::Support::exact);
  CHECK(r->capabilities().support(xr::DType::i32, xr::Op::sum) == xr::Support::none);
  // Errors cross it as codes: the core refuses unsupported combinations before the plugin runs.
  CHECK_THROWS_WITH_AS(r->reduce(xr::Request{v.data(), 1, xr::DType::f64, xr::Op::max, xr::Memory::host}),
                       doctest::Contains("does not do max of f64, host memory"), xr::Error);
}

TEST_CASE("plugins: loading twice, or into a second registry, works; a name clash is refused") {
  xr::Context a(xr::Context::Empty{}, {}), b(xr::Context::Empty{}, {});
  a.registry().load_plugin(XREDUCE_TEST_EXAMPLE_PLUGIN);
  b.registry().load_plugin(XREDUCE_TEST_EXAMPLE_PLUGIN);
  CHECK(b.registry().find("example.neumaier") != nullptr);
  CHECK_THROWS_WITH_AS(a.registry().load_plugin(XREDUCE_TEST_EXAMPLE_PLUGIN), doctest::Contains("already registered"), xr::Error);
}

TEST_CASE("plugins: a plugin with the wrong ABI version is refused with a message") {
  xr::Registry reg;
  try {
    reg.load_plugin(XREDUCE_TEST_WRONG_ABI_PLUGIN);
    FAIL("loaded");
  } catch (const xr::Error& e) {
    CHECK(e.code() == xr::ErrorCode::plugin);
    CHECK(std::string(e.what()).find("ABI version " + std::to_string(XREDUCE_PLUGIN_ABI_VERSION + 1)) != std::string::npos);
    CHECK(std::string(e.what()).find("rebuild it") != std::string::npos);
  }
}

TEST_CASE("plugins: other bad files are refused with a reason") {
  xr::Registry reg;
  CHECK_THROWS_WITH_AS(reg.load_plugin(XREDUCE_TEST_NO_ENTRY_PLUGIN), doctest::Contains("has no entry point xreduce_plugin_init_v3 (not an xreduce plugin?)"), xr::Error);
  CHECK_THROWS_WITH_AS(reg.load_plugin("/nonexistent/libxreduce_x.so"), doctest::Contains("no such file"), xr::Error);
  CHECK_THROWS_WITH_AS(reg.load_plugin(__FILE__), doctest::Contains("cannot be loaded"), xr::Error);
}

TEST_CASE("plugins: scanning folders never throws and reports each file") {
  xr::Registry reg;
  reg.load_plugins({std::filesystem::path(XREDUCE_TEST_WRONG_ABI_PLUGIN).parent_path(), "/nonexistent-dir",
                    XREDUCE_TEST_EXAMPLE_PLUGIN});
  bool saw_wrong_abi = false, saw_missing = false, saw_example = false;
  for (const auto& r : reg.plugin_reports()) {
    saw_wrong_abi |= !r.loaded && r.message.find("ABI version") != std::string::npos;
    saw_missing |= !r.loaded && r.message.find("does not exist") != std::string::npos;
    saw_example |= r.loaded && r.message.find("example.neumaier") != std::string::npos;
  }
  CHECK(saw_wrong_abi);
  CHECK(saw_missing);
  CHECK(saw_example);
  CHECK(reg.find("test.off_by_one") != nullptr);  // the good plugin in the same folder still loads
}

TEST_CASE("plugins: a context loads XREDUCE_PLUGIN_PATH plugins through its config") {
  xr::Config cfg;
  cfg.plugin_path = {XREDUCE_TEST_EXAMPLE_PLUGIN};
  xr::Context ctx(cfg);
  CHECK(ctx.registry().find("example.neumaier") != nullptr);
  CHECK(ctx.registry().find("sequential") != nullptr);
}

TEST_CASE("plugins: a backend that misbehaves is an error, never a crash or a wrong answer") {
  xr::Registry reg;
  reg.load_plugin(XREDUCE_TEST_FAULTY_PLUGIN);
  reg.load_plugin(XREDUCE_TEST_BROKEN_PLUGIN);
  float x[3] = {1, 2, 3};
  const xr::Request q{x, 3, xr::DType::f32, xr::Op::sum, xr::Memory::host};
  auto code_of = [&](const char* backend, const xr::Request& request) {
    try {
      reg.get(backend).reduce(request);
    } catch (const xr::Error& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).size() > 10);
      return e.code();
    }
    return xr::ErrorCode::ok;
  };
  CHECK(code_of("test.bad_code", q) == xr::ErrorCode::internal);    // code 999: no such code
  CHECK(code_of("test.bad_dtype", q) == xr::ErrorCode::internal);   // dtype 77
  CHECK(code_of("test.wrong_type", q) == xr::ErrorCode::internal);  // f64 with an index, for an f32 sum
  std::int32_t v[2] = {4, 5};
  CHECK(code_of("test.throws", xr::Request{v, 2, xr::DType::i32, xr::Op::min, xr::Memory::host}) == xr::ErrorCode::internal);
  CHECK_THROWS_WITH_AS(reg.get("test.throws").reduce(xr::Request{v, 2, xr::DType::i32, xr::Op::min, xr::Memory::host}),
                       doctest::Contains("a bug in the plugin"), xr::Error);
  // The library goes on working after each.
  CHECK(reg.get("test.off_by_one").reduce(q).value.get<float>() == 7.0f);
}

TEST_CASE("plugins: a statistic crosses the ABI with its correction, wide, and with its moments") {
  xr::Context ctx(xr::Context::Empty{}, {});
  ctx.registry().load_plugin(XREDUCE_TEST_STATISTIC_PLUGIN);
  xr::Reducer* r = ctx.registry().find("test.variance");
  REQUIRE(r != nullptr);
  const std::uint64_t seed = std::random_device{}();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  for (std::size_t n : {2u, 3u, 100u, 1001u}) {
    std::vector<double> x(n);
    for (double& v : x) v = 5 + u(rng);
    for (xr::Op op : {xr::Op::var, xr::Op::std})
      for (double correction : {0.0, 1.0, 1.5, static_cast<double>(n)}) {
        xr::Request q{x.data(), n, xr::DType::f64, op, xr::Memory::host};
        q.correction = correction;
        const xr::Result res = r->reduce(q);
        INFO(to_string(op) << " of " << n << ", correction " << correction << ": got " << res.value.to_string());
        CHECK(xr::agrees(q, xr::exact_reference(q), res));
        // The moments cross back: the count, and the sum within a few ulps of the exact one.
        REQUIRE(res.moments.has_value());
        CHECK(res.moments->n == static_cast<double>(n));
        xr::Request sum = q;
        sum.op = xr::Op::sum;
        const double exact_sum = xr::exact_reference(sum).value.get<double>();
        CHECK(std::abs(res.moments->sum - exact_sum) <= 1e-12 * std::abs(exact_sum));
        // f32 elements asked in f64: the plugin's set declares wide results, and the value comes
        // back as an f64 that, rounded to f32, meets the bound.
        std::vector<float> narrow(x.begin(), x.end());
        xr::Request q32{narrow.data(), n, xr::DType::f32, op, xr::Memory::host};
        q32.correction = correction;
        xr::Options wide;
        wide.result_dtype = xr::DType::f64;
        xr::Result res32 = r->reduce(q32, wide);
        REQUIRE(res32.value.dtype() == xr::DType::f64);
        res32.value = xr::Scalar(static_cast<float>(res32.value.get<double>()));
        CHECK(xr::agrees(q32, xr::exact_reference(q32), res32));
        CHECK(r->reduce(q32).value.dtype() == xr::DType::f32);
        // Among several ops, the correction crosses too.
        xr::Request several = q;
        several.op = xr::Op::sum;  // not used with `ops`: a var or std among them still takes the correction
        several.ops = {xr::Op::mean, op};
        const xr::Result both = r->reduce(several);
        CHECK(xr::agrees(several, xr::exact_reference(several), both));
      }
  }
}
