// One selector: auto, the template API, the GPU template API's engine rule, the backends that
// delegate (hybrid) and calibration all choose through Registry::best and the Dispatcher, so for
// the same inputs and config they choose alike. And backend settings, from the config file and
// per call, reaching a plugin's backend through the ABI.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <random>

#include "support/test_data.hpp"
#include "xreduce/backend/chunk_driver.hpp"
#include "xreduce/backend/dispatcher.hpp"
#include "xreduce/backend/registry.hpp"
#include "xreduce/custom.hpp"
#include "xreduce/xreduce.hpp"

namespace xr = xreduce;

namespace {

// A backend that answers a constant and, on the CPU, runs user code (the template API's need).
class Fake final : public xr::Reducer {
 public:
  Fake(std::string name, xr::Engine engine, bool segments = false) : name_(std::move(name)), engine_(engine), segments_(segments) {}
  std::string_view name() const override { return name_; }
  xr::Capabilities capabilities() const override {
    xr::FeatureSet f32_sum = xr::FeatureSet().dtypes({xr::DType::f32}).ops({xr::Op::sum}).layouts({xr::Layout::all});
    if (segments_) f32_sum.layouts({xr::Layout::ragged});
    if (engine_ == xr::Engine::gpu) f32_sum.memory({xr::Memory::host, xr::Memory::device});
    return xr::Capabilities(engine_).add(f32_sum);
  }
  xr::Availability available() const override { return xr::Availability::yes(); }
  bool run_chunks(std::size_t chunks, ChunkBody body, void* context, int) override {
    if (engine_ != xr::Engine::cpu_serial && engine_ != xr::Engine::cpu_parallel) return false;
    for (std::size_t c = 0; c < chunks; ++c) body(context, c);
    return true;
  }

 protected:
  xr::Result do_reduce(const xr::Request&, const xr::Options&) override { return {xr::Scalar(42.0f), {}, {}}; }

 private:
  std::string name_;
  xr::Engine engine_;
  bool segments_;
};

std::filesystem::path write_file(const std::string& name, const std::string& text) {
  auto p = std::filesystem::temp_directory_path() / ("xreduce-selection-" + name);
  std::ofstream(p) << text;
  return p;
}

//! The thresholds the selection tests share: "mid" from 1000 elements, "large" from 100000, the
//! GPU for pinned data from 20000.
xr::Config tiered_config() {
  xr::Config cfg;
  cfg.dispatch.parallel_min_count = 1000;
  cfg.dispatch.parallel_backend = "mid";
  cfg.dispatch.parallel_large_min_count = 100000;
  cfg.dispatch.parallel_backend_large = "large";
  cfg.dispatch.gpu_min_count_pinned = 20000;
  return cfg;
}

}  // namespace

TEST_CASE("selection: auto, the template APIs, hybrid's parts and calibration choose alike") {
  xr::Config cfg = tiered_config();
  cfg.dispatch.gpu_min_count_pageable = 400000;
  cfg.dispatch.cpu_gpu_min_count_pinned = 3000000;
  xr::Context ctx(xr::Context::Empty{}, cfg);
  ctx.registry().add(std::make_unique<Fake>("serial", xr::Engine::cpu_serial), 10);
  ctx.registry().add(std::make_unique<Fake>("large", xr::Engine::cpu_parallel), 30);  // highest priority, preferred only when large
  ctx.registry().add(std::make_unique<Fake>("mid", xr::Engine::cpu_parallel), 20);
  ctx.registry().add(std::make_unique<Fake>("gpu", xr::Engine::gpu), 40);
  ctx.registry().add(std::make_unique<Fake>("both", xr::Engine::cpu_gpu), 50);
  const xr::EngineSet gpu_template = xr::engine_bit(xr::Engine::gpu) | xr::engine_bit(xr::Engine::cpu_serial) |
                                     xr::engine_bit(xr::Engine::cpu_parallel);

  int cpu_cases = 0, gpu_cases = 0, both_cases = 0;
  for (std::uint64_t n : {1ull, 999ull, 1000ull, 19999ull, 20000ull, 99999ull, 100000ull, 399999ull, 400000ull, 3000000ull, 1ull << 30})
    for (bool pinned : {false, true}) {
      xr::Workload w;
      w.elements = n;
      w.pinned = pinned;
      INFO(n << " elements, " << (pinned ? "pinned" : "pageable"));
      xr::Reducer* chosen = ctx.dispatcher().choose(w).reducer;
      const xr::Engine engine = chosen->capabilities().engine();
      // What hybrid asks for its parts and calibrate for each engine: the same backend.
      CHECK(ctx.registry().best(engine, w) == chosen);
      // The GPU template API's rule among the engines it has (it has no CPU+GPU path).
      xr::Workload user = w;
      user.user_code = true;
      const std::optional<xr::Engine> template_engine = ctx.dispatcher().engine_for(user, gpu_template);
      REQUIRE(template_engine.has_value());
      if (engine == xr::Engine::cpu_gpu) {
        ++both_cases;
        CHECK(*template_engine == (pinned ? xr::Engine::gpu : xr::Engine::cpu_parallel));
        // hybrid's CPU part: the CPU-parallel backend auto prefers for the whole size
        CHECK(ctx.registry().best(xr::Engine::cpu_parallel, w)->name() == (n >= 100000 ? "large" : "mid"));
      } else {
        CHECK(*template_engine == engine);
      }
      if (engine == xr::Engine::gpu) ++gpu_cases;
      if (engine == xr::Engine::cpu_serial || engine == xr::Engine::cpu_parallel) {
        ++cpu_cases;
        // The CPU template API runs the user's operator on the very backend auto runs.
        CHECK(&xr::detail::custom_executor(ctx, "auto", n) == chosen);
      }
      // A request of the same size: Context::resolve says the same.
      static float x[1] = {1};
      xr::Request q{x, static_cast<std::size_t>(n), xr::DType::f32, xr::Op::sum, xr::Memory::host};
      if (!pinned) CHECK(ctx.resolve(q, {}).reducer == chosen);
    }
  CHECK(cpu_cases > 0);  // the loop covered every engine
  CHECK(gpu_cases > 0);
  CHECK(both_cases > 0);
  CHECK(ctx.dispatcher().choose([] { xr::Workload w; w.elements = 500; return w; }()).reducer->name() == "serial");
  CHECK(ctx.dispatcher().choose([] { xr::Workload w; w.elements = 5000; return w; }()).reducer->name() == "mid");
  CHECK(ctx.dispatcher().choose([] { xr::Workload w; w.elements = 200000; return w; }()).reducer->name() == "large");
}

TEST_CASE("selection: a threshold of 0 is never, parallel_min_count too") {
  xr::Config cfg;
  cfg.dispatch.parallel_min_count = 0;
  xr::Context ctx(xr::Context::Empty{}, cfg);
  ctx.registry().add(std::make_unique<Fake>("serial", xr::Engine::cpu_serial), 10);
  ctx.registry().add(std::make_unique<Fake>("parallel", xr::Engine::cpu_parallel), 20);
  ctx.registry().add(std::make_unique<Fake>("gpu", xr::Engine::gpu), 30);
  for (std::uint64_t n : {1ull, 1ull << 20, 1ull << 40}) {
    xr::Workload w;
    w.elements = n;
    CHECK(ctx.dispatcher().choose(w).reducer->name() == "serial");
  }
}

TEST_CASE("selection: segments weigh segment_cost elements each; a segmented request in one tile stays on one thread") {
  xr::Config cfg;
  cfg.dispatch.parallel_min_count = 1 << 20;
  cfg.dispatch.gpu_min_count_pageable = 1 << 26;
  cfg.dispatch.segment_cost = 7;
  xr::Context ctx(xr::Context::Empty{}, cfg);
  ctx.registry().add(std::make_unique<Fake>("serial", xr::Engine::cpu_serial, true), 10);
  ctx.registry().add(std::make_unique<Fake>("parallel", xr::Engine::cpu_parallel, true), 20);
  ctx.registry().add(std::make_unique<Fake>("gpu", xr::Engine::gpu, true), 30);
  xr::DispatchConfig by_elements = cfg.dispatch;
  by_elements.segment_cost = 0;
  const xr::Dispatcher elements_only(ctx.registry(), by_elements);
  std::mt19937_64 rng(xr::test::run_seed());
  int weighed = 0;  // cases where the weight changed the choice
  for (int k = 0; k < 2000; ++k) {
    xr::Workload w;
    w.features.layout = xr::Layout::ragged;
    w.elements = rng() % (std::uint64_t{1} << (8 + rng() % 20));
    w.segments = 1 + rng() % (w.elements + 1);
    INFO("seed " << xr::test::run_seed() << ": " << w.elements << " elements in " << w.segments << " segments");
    // The rule, worked out here on its own: work = n + 7 s.
    const std::uint64_t work = w.elements + 7 * w.segments;
    const char* expected = work >= (1u << 26) ? "gpu" : work >= (1u << 20) && w.elements > xr::backend::kChunkElements ? "parallel" : "serial";
    const xr::Dispatcher::Choice c = ctx.dispatcher().choose(w);
    CHECK(c.reducer->name() == expected);
    if (work != w.elements && work >= (1u << 20)) CHECK(c.reason.find("work of " + std::to_string(work)) != std::string::npos);
    const std::uint64_t n = w.elements;
    const char* counted = n >= (1u << 26) ? "gpu" : n >= (1u << 20) ? "parallel" : "serial";
    CHECK(elements_only.pick(w).name() == counted);
    weighed += std::string(expected) != counted;
  }
  CHECK(weighed > 0);
  // Segment counts near 2^64 saturate instead of wrapping round to a small work.
  xr::Workload huge;
  huge.features.layout = xr::Layout::ragged;
  huge.elements = std::uint64_t{1} << 40;
  huge.segments = ~std::uint64_t{0} / 2;
  CHECK(cfg.dispatch.work(huge.elements, huge.segments) == ~std::uint64_t{0});
  CHECK(ctx.dispatcher().pick(huge).name() == "gpu");
  // A plain request is its elements, whatever segment_cost says.
  CHECK(cfg.dispatch.work(12345, 0) == 12345);
}

TEST_CASE("selection: the choice each thread remembers is the choice made afresh, and a new backend ends it") {
  xr::Config cfg = tiered_config();
  cfg.dispatch.cpu_gpu_min_count_pageable = 3000000;
  xr::Context ctx(xr::Context::Empty{}, cfg);
  ctx.registry().add(std::make_unique<Fake>("serial", xr::Engine::cpu_serial, true), 10);
  ctx.registry().add(std::make_unique<Fake>("large", xr::Engine::cpu_parallel, true), 30);
  ctx.registry().add(std::make_unique<Fake>("mid", xr::Engine::cpu_parallel, true), 20);
  ctx.registry().add(std::make_unique<Fake>("gpu", xr::Engine::gpu, true), 40);
  ctx.registry().add(std::make_unique<Fake>("both", xr::Engine::cpu_gpu), 50);
  // Another dispatcher over the same registry, with other thresholds: a thread's remembered
  // choice is its own dispatcher's.
  xr::DispatchConfig other_cfg = cfg.dispatch;
  other_cfg.parallel_min_count = 50;
  const xr::Dispatcher other(ctx.registry(), other_cfg);
  std::mt19937_64 rng(xr::test::run_seed());
  const std::uint64_t near[] = {1, 49, 50, 999, 1000, 1001, 19999, 20000, 65536, 65537, 99999, 100000, 2999999, 3000000, 1ull << 33};
  for (int k = 0; k < 20000; ++k) {
    xr::Workload w;
    w.elements = near[rng() % std::size(near)] + (rng() % 3 == 0 ? rng() % 7 : 0);
    w.pinned = rng() % 2;
    w.features.memory = rng() % 5 == 0 ? xr::Memory::device : xr::Memory::host;
    const bool segmented = rng() % 3 == 0;
    w.features.layout = segmented ? xr::Layout::ragged : xr::Layout::all;
    w.segments = segmented ? 1 + rng() % (w.elements + 1) : 0;
    const bool use_other = rng() % 4 == 0;
    const xr::Dispatcher& d = use_other ? other : ctx.dispatcher();
    INFO("seed " << xr::test::run_seed() << ", draw " << k << ": " << w.elements << " elements, " << w.segments << " segments");
    const xr::Reducer& picked = d.pick(w);
    CHECK(&picked == d.choose(w).reducer);
    CHECK(&d.pick(w) == &picked);  // the remembered choice
  }
  xr::Workload w;
  w.elements = 10;
  CHECK(ctx.dispatcher().pick(w).name() == "serial");
  ctx.registry().add(std::make_unique<Fake>("serial.newer", xr::Engine::cpu_serial), 15);
  CHECK(ctx.dispatcher().pick(w).name() == "serial.newer");
}

TEST_CASE("settings: typed values with complete messages") {
  xr::Settings s;
  s.set("share", "0.5", "here.toml:3:1").set("count", "12").set("bad", "1e999").set("word", "x");
  CHECK(s.number("share", 0, 1) == doctest::Approx(0.5));
  CHECK(s.integer("count", 1, 64) == 12);
  CHECK_FALSE(s.number("missing", 0, 1).has_value());
  CHECK_THROWS_WITH_AS(s.number("share", 0.6, 1), doctest::Contains("'share' = '0.5' (from here.toml:3:1): must be between 0.6 and 1"), xr::Error);
  CHECK_THROWS_WITH_AS(s.integer("count", 1, 8), doctest::Contains("must be between 1 and 8"), xr::Error);
  CHECK_THROWS_WITH_AS(s.number("bad", 0, 1), doctest::Contains("not a number"), xr::Error);
  CHECK_THROWS_WITH_AS(s.integer("word", 0, 1), doctest::Contains("not a whole number"), xr::Error);
  CHECK_THROWS_WITH_AS(s.set("a=b", "1"), doctest::Contains("no '='"), xr::Error);
  CHECK_THROWS_WITH_AS(s.check_keys({{"share", "", ""}}, "backend 'x'"), doctest::Contains("unknown setting 'bad'"), xr::Error);
  const xr::Settings back = xr::Settings::from_text(s.to_text(), "the ABI");
  CHECK(back.entries().size() == s.entries().size());
  CHECK(back.text("share") == "0.5");
  const auto infos = xr::settings_info_from_text(xr::settings_info_to_text({{"k", "1", "does\tthings"}}));
  REQUIRE(infos.size() == 1);
  CHECK(infos[0].doc == "does things");
}

TEST_CASE("settings: [backends.NAME] tables, and the old [hybrid] keys read with a note") {
  const xr::Config c = xr::Config::from_string(
      "[backends.example]\ncompensation = \"none\"\n[backends.\"cuda.shuffle\"]\nstreams = 4\nshare = 0.5\n"
      "[hybrid]\ngpu_fraction_pinned = 0.3\n[dispatch]\nhybrid_min_count_pinned = 77\n",
      "test.toml");
  CHECK(c.backend_settings.at("example").text("compensation") == "none");
  CHECK(c.backend_settings.at("cuda.shuffle").integer("streams", 1, 64) == 4);
  CHECK(c.backend_settings.at("cuda.shuffle").text("share") == "0.5");
  CHECK(c.backend_settings.at("hybrid").number("gpu_fraction_pinned", 0, 1) == doctest::Approx(0.3));
  CHECK(c.dispatch.cpu_gpu_min_count_pinned == 77);
  REQUIRE(c.notes.size() == 2);
  const std::string notes = c.notes[0] + "\n" + c.notes[1];
  CHECK(notes.find("[hybrid] is now [backends.hybrid]") != std::string::npos);
  CHECK(notes.find("[dispatch] hybrid_min_count_pinned is now [dispatch] cpu_gpu_min_count_pinned") != std::string::npos);
  CHECK_THROWS_WITH_AS(xr::Config::from_string("[backends.cuda.shuffle]\nstreams = 4\n", "t.toml"),
                       doctest::Contains("[backends.\"cuda.shuffle\"]"), xr::Error);
  CHECK_THROWS_WITH_AS(xr::Config::from_string("[backends.x]\nlist = [1]\n", "t.toml"),
                       doctest::Contains("must be a string, number or boolean"), xr::Error);
}

TEST_CASE("settings: a plugin's own setting, from its config table and per call") {
  // {1e16, 1, -1e16}: a plain double sum loses the 1, Neumaier's keeps it.
  const double x[3] = {1e16, 1.0, -1e16};
  const xr::Request q{x, 3, xr::DType::f64, xr::Op::sum, xr::Memory::host};
  auto context_with = [](const std::string& table) {
    xr::Config c = xr::Config::from_string(table, "test.toml");
    c.plugin_path = {XREDUCE_TEST_EXAMPLE_PLUGIN};
    return std::make_unique<xr::Context>(c);
  };
  xr::Options named;
  named.backend = "example.neumaier";

  auto plain = context_with("[backends.example]\ncompensation = \"none\"\n");  // the plugin's table
  CHECK(plain->reduce(q, named).value.get<double>() == 0.0);
  xr::Options per_call = named;
  per_call.settings.set("compensation", "neumaier");
  CHECK(plain->reduce(q, per_call).value.get<double>() == 1.0);  // the call's setting wins

  auto own = context_with("[backends.\"example.neumaier\"]\ncompensation = \"neumaier\"\n");  // the backend's table
  CHECK(own->reduce(q, named).value.get<double>() == 1.0);
  per_call.settings.set("compensation", "none");
  CHECK(own->reduce(q, per_call).value.get<double>() == 0.0);

  // A named backend refuses keys it does not read; "auto" leaves them out for the backend it picks.
  xr::Options unknown = named;
  unknown.settings.set("chunk_bytes", "4096");
  CHECK_THROWS_WITH_AS(own->reduce(q, unknown), doctest::Contains("unknown setting 'chunk_bytes'"), xr::Error);
  unknown.backend = "auto";
  CHECK(own->reduce(q, unknown).value.get<double>() == 1.0);

  // Bad tables fail when the context is made, naming the file and line; unused ones are noted.
  CHECK_THROWS_WITH_AS(context_with("[backends.example]\ncompensation = \"maybe\"\n"),
                       doctest::Contains("test.toml:2:16"), xr::Error);
  CHECK_THROWS_WITH_AS(context_with("[backends.example]\nwarp = 9\n"), doctest::Contains("unknown setting 'warp'"), xr::Error);
  CHECK_THROWS_WITH_AS(context_with("[backends.hybrid]\ngpu_fraction = 1.5\n"), doctest::Contains("must be between 0 and 0.99"),
                       xr::Error);
  auto noted = context_with("[backends.warp-drive]\nspeed = 9\n");
  REQUIRE(noted->notes().size() == 1);
  CHECK(noted->notes()[0].find("no loaded backend or plugin is named 'warp-drive'") != std::string::npos);
  // The settings are declared, with defaults and what they do.
  const auto infos = noted->registry().get("example.neumaier").settings();
  REQUIRE(infos.size() == 1);
  CHECK(infos[0].key == "compensation");
  CHECK(infos[0].default_value == "neumaier");
}

TEST_CASE("plugins: a plugin of ABI version 1 is refused, saying so") {
  xr::Registry reg;
  CHECK_THROWS_WITH_AS(reg.load_plugin(XREDUCE_TEST_OLD_ABI_PLUGIN), doctest::Contains("built for plugin ABI version 1"), xr::Error);
}

namespace {

// A GPU backend that counts how often it is asked whether it can run: on a real GPU module that
// question starts the driver (hundreds of milliseconds), which a CPU choice must not pay.
class CountingGpu final : public xr::Reducer {
 public:
  std::string_view name() const override { return "counting.gpu"; }
  xr::Capabilities capabilities() const override {
    return xr::Capabilities(xr::Engine::gpu)
        .add(xr::FeatureSet().dtypes({xr::DType::f32}).ops({xr::Op::sum}).layouts({xr::Layout::all}).memory({xr::Memory::host, xr::Memory::device}));
  }
  xr::Availability available() const override {
    ++asked;
    return xr::Availability::yes();
  }
  mutable int asked = 0;

 protected:
  xr::Result do_reduce(const xr::Request&, const xr::Options&) override { return {xr::Scalar(7.0f), {}, {}}; }
};

}  // namespace

TEST_CASE("selection: auto asks a GPU backend whether it can run only where the rules could choose it") {
  xr::Config cfg;
  cfg.dispatch.parallel_min_count = 1000;
  cfg.dispatch.gpu_min_count_pageable = 1 << 20;
  xr::Context ctx(xr::Context::Empty{}, cfg);
  auto gpu = std::make_unique<CountingGpu>();
  CountingGpu* counting = gpu.get();
  ctx.registry().add(std::move(gpu), 10);
  ctx.registry().add(std::make_unique<Fake>("serial", xr::Engine::cpu_serial), 5);
  ctx.registry().add(std::make_unique<Fake>("parallel", xr::Engine::cpu_parallel), 5);
  std::vector<float> v(1 << 20, 1.0f);
  auto host = [&](std::size_t n) { return xr::Request{v.data(), n, xr::DType::f32, xr::Op::sum, xr::Memory::host}; };
  CHECK(ctx.reduce(host(10)).backend == "serial");
  CHECK(ctx.reduce(host(5000)).backend == "parallel");
  CHECK(ctx.reduce(host(5000), {.backend = "parallel"}).backend == "parallel");
  CHECK(counting->asked == 0);  // host data below the GPU threshold: never asked
  CHECK(ctx.reduce(host(1 << 20)).backend == "counting.gpu");
  CHECK(counting->asked > 0);
  const int asked = counting->asked;
  CHECK(ctx.reduce(xr::Request{v.data(), 64, xr::DType::f32, xr::Op::sum, xr::Memory::device}).backend == "counting.gpu");
  CHECK(counting->asked >= asked);
}
