#include <doctest/doctest.h>

#include <memory>

#include "xreduce/xreduce.hpp"
#include "xreduce/backend/registry.hpp"
#include "xreduce/backend/dispatcher.hpp"
#include "xreduce/backend/reducer.hpp"

namespace xr = xreduce;

namespace {
// A reducer that answers a constant, for testing the registry and dispatcher alone.
class Fake final : public xr::Reducer {
 public:
  Fake(std::string name, xr::Engine engine, bool available = true, bool device = false)
      : name_(std::move(name)), engine_(engine), available_(available), device_(device) {}
  std::string_view name() const override { return name_; }
  xr::Capabilities capabilities() const override {
    const xr::Memory memory = device_ ? xr::Memory::device : xr::Memory::host;
    return xr::Capabilities(engine_)
        .add(xr::FeatureSet().dtypes({xr::DType::f32}).ops({xr::Op::sum}).layouts({xr::Layout::all}).memory({memory}))
        .add(xr::FeatureSet().dtypes({xr::DType::f64}).ops({xr::Op::sum}).layouts({xr::Layout::all}).memory({memory}).support(xr::Support::inexact));
  }
  xr::Availability available() const override {
    return available_ ? xr::Availability::yes() : xr::Availability::no("switched off for the test");
  }

 protected:
  xr::Result do_reduce(const xr::Request& q, const xr::Options&) override {
    return {xr::visit_dtype(xr::result_dtype(q.dtype, q.op), [](auto t) { return xr::Scalar(decltype(t)(42)); }), {}, {}};
  }

 private:
  std::string name_;
  xr::Engine engine_;
  bool available_, device_;
};

xr::Request f32_sum(std::size_t n) {
  static float x[1] = {1};
  return xr::Request{x, n, xr::DType::f32, xr::Op::sum, xr::Memory::host};
}
}  // namespace

TEST_CASE("registry: names are unique, 'auto' is reserved, unknown names list the valid ones") {
  xr::Registry reg;
  reg.add(std::make_unique<Fake>("a", xr::Engine::cpu_serial), 1);
  CHECK_THROWS_WITH_AS(reg.add(std::make_unique<Fake>("a", xr::Engine::cpu_serial), 2), doctest::Contains("already registered"), xr::Error);
  CHECK_THROWS_WITH_AS(reg.add(std::make_unique<Fake>("auto", xr::Engine::cpu_serial), 2), doctest::Contains("reserved"), xr::Error);
  CHECK_THROWS_WITH_AS(reg.add(nullptr, 2), doctest::Contains("null"), xr::Error);
  CHECK(reg.find("a") != nullptr);
  CHECK(reg.find("b") == nullptr);
  try {
    reg.get("b");
    FAIL("no error");
  } catch (const xr::Error& e) {
    CHECK(e.code() == xr::ErrorCode::unknown_backend);
    CHECK(std::string(e.what()).find("valid names: auto, a") != std::string::npos);
  }
}

TEST_CASE("registry: entries come highest priority first, ties by name") {
  xr::Registry reg;
  reg.add(std::make_unique<Fake>("low", xr::Engine::cpu_serial), 1);
  reg.add(std::make_unique<Fake>("high-b", xr::Engine::cpu_serial), 5);
  reg.add(std::make_unique<Fake>("high-a", xr::Engine::cpu_serial), 5);
  CHECK(reg.names() == std::vector<std::string>{"high-a", "high-b", "low"});
}

TEST_CASE("registry: the built-in backends are registered explicitly") {
  xr::Registry reg;
  reg.add_builtin_backends();
  CHECK(reg.find("sequential") != nullptr);
  CHECK(reg.find("sequential.naive") != nullptr);
#ifdef XREDUCE_TEST_HAVE_TBB
  CHECK(reg.find("tbb") != nullptr);
#endif
#ifdef XREDUCE_TEST_HAVE_OPENMP
  CHECK(reg.find("openmp") != nullptr);
#endif
}

TEST_CASE("reducer: the core's checks run before any backend code") {
  Fake off("off", xr::Engine::cpu_serial, false);
  CHECK_THROWS_WITH_AS(off.reduce(f32_sum(1)), doctest::Contains("switched off for the test"), xr::Error);
  Fake on("on", xr::Engine::cpu_serial);
  xr::Request q = f32_sum(1);
  q.op = xr::Op::argmax;
  CHECK_THROWS_WITH_AS(on.reduce(q), doctest::Contains("does not do argmax of f32, host memory"), xr::Error);
  Fake gpu("gpu", xr::Engine::gpu, true, true);
  CHECK_THROWS_WITH_AS(gpu.reduce(f32_sum(1)), doctest::Contains("does not do sum of f32, host memory"), xr::Error);
  CHECK(on.reduce(f32_sum(1)).backend == "on");
  // A backend that returns the wrong type is caught, not passed on.
  q = f32_sum(1);
  q.dtype = xr::DType::f64;
  q.data = nullptr;
  q.count = 0;
  CHECK(on.reduce(q).value.get<double>() == 0.0);  // empty: answered by the core
}

TEST_CASE("dispatcher: by size and memory space, among available exact backends") {
  xr::Config cfg;
  cfg.dispatch.parallel_min_count = 100;
  xr::Context ctx(xr::Context::Empty{}, cfg);
  ctx.registry().add(std::make_unique<Fake>("serial", xr::Engine::cpu_serial), 10);
  ctx.registry().add(std::make_unique<Fake>("serial-better-but-off", xr::Engine::cpu_serial, false), 50);
  ctx.registry().add(std::make_unique<Fake>("parallel", xr::Engine::cpu_parallel), 20);
  ctx.registry().add(std::make_unique<Fake>("gpu", xr::Engine::gpu, true, true), 30);

  CHECK(ctx.resolve(f32_sum(99), {}).reducer->name() == "serial");
  CHECK(ctx.resolve(f32_sum(100), {}).reducer->name() == "parallel");
  xr::Request dev = f32_sum(5);
  dev.memory = xr::Memory::device;
  CHECK(ctx.resolve(dev, {}).reducer->name() == "gpu");
  CHECK(ctx.resolve(f32_sum(100), {}).reason.find("parallel_min_count (100)") != std::string::npos);
  CHECK(ctx.reduce(f32_sum(3)).backend == "serial");

  // Host data goes to the GPU or to hybrid only from the calibrated sizes on, pinned or not.
  xr::Config measured = cfg;
  measured.dispatch.gpu_min_count_pinned = 1000;
  measured.dispatch.cpu_gpu_min_count_pinned = 5000;
  measured.dispatch.gpu_min_count_pageable = 0;  // never
  xr::Context c2(xr::Context::Empty{}, measured);
  c2.registry().add(std::make_unique<Fake>("parallel", xr::Engine::cpu_parallel), 20);
  c2.registry().add(std::make_unique<Fake>("gpu-host", xr::Engine::gpu), 30);
  c2.registry().add(std::make_unique<Fake>("both", xr::Engine::cpu_gpu), 10);
  xr::Dispatcher d(c2.registry(), measured.dispatch);
  CHECK(d.choose(xr::Workload::of(f32_sum(999), true)).reducer->name() == "parallel");
  CHECK(d.choose(xr::Workload::of(f32_sum(1000), true)).reducer->name() == "gpu-host");
  CHECK(d.choose(xr::Workload::of(f32_sum(5000), true)).reducer->name() == "both");
  CHECK(d.choose(xr::Workload::of(f32_sum(1 << 20), false)).reducer->name() == "parallel");  // pageable: never the GPU

  // One CPU-parallel backend for the middle sizes, another from parallel_large_min_count on.
  xr::Config banded = cfg;
  banded.dispatch.parallel_backend = "mid";
  banded.dispatch.parallel_large_min_count = 1 << 16;
  banded.dispatch.parallel_backend_large = "large";
  xr::Context c3(xr::Context::Empty{}, banded);
  c3.registry().add(std::make_unique<Fake>("serial", xr::Engine::cpu_serial), 10);
  c3.registry().add(std::make_unique<Fake>("mid", xr::Engine::cpu_parallel), 20);
  c3.registry().add(std::make_unique<Fake>("large", xr::Engine::cpu_parallel), 15);
  CHECK(c3.resolve(f32_sum(99), {}).reducer->name() == "serial");
  CHECK(c3.resolve(f32_sum(100), {}).reducer->name() == "mid");
  CHECK(c3.resolve(f32_sum(1 << 16), {}).reducer->name() == "large");
  CHECK(c3.resolve(f32_sum(1 << 16), {}).reason.find("parallel_large_min_count (65536)") != std::string::npos);

  // f64 sums are inexact on every fake: auto refuses rather than give a wrong answer.
  xr::Request f64 = f32_sum(3);
  f64.dtype = xr::DType::f64;
  CHECK_THROWS_WITH_AS(ctx.resolve(f64, {}), doctest::Contains("no available backend"), xr::Error);
  // ...but a backend named explicitly runs.
  CHECK(ctx.reduce(f64, {.backend = "serial"}).backend == "serial");
}
