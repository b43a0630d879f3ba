// hybrid without a GPU: a stand-in GPU backend that sums on the CPU and notes every slice it is
// handed, so the claims hybrid makes can be checked against what its header promises.
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <random>
#include <vector>

#include "support/test_data.hpp"
#include "xreduce/backend/registry.hpp"
#include "xreduce/validate.hpp"
#include "xreduce/xreduce.hpp"

namespace xr = xreduce;

namespace {

class SliceNotingGpu final : public xr::Reducer {
 public:
  std::string_view name() const override { return "noting-gpu"; }
  xr::Capabilities capabilities() const override {
    return xr::Capabilities(xr::Engine::gpu).add(xr::FeatureSet().dtypes({xr::DType::f32}).ops({xr::Op::sum, xr::Op::max}).layouts({xr::Layout::all}));
  }
  xr::Availability available() const override { return xr::Availability::yes(); }
  //! The counts of the slices of each call, in the order claimed.
  std::vector<std::vector<std::size_t>> calls;
  void new_call() { calls.emplace_back(); }

 protected:
  xr::Result do_reduce(const xr::Request& q, const xr::Options&) override {
    {
      std::lock_guard lock(mutex_);
      calls.back().push_back(q.count);
    }
    const auto* x = static_cast<const float*>(q.data);
    if (q.op == xr::Op::max) return {xr::Scalar(*std::max_element(x, x + q.count)), {}, {}};
    double sum = 0;
    for (std::size_t i = 0; i < q.count; ++i) sum += x[i];
    return {xr::Scalar(static_cast<float>(sum)), {}, {}};
  }

 private:
  std::mutex mutex_;
};

// hybrid's claim rule (backends/hybrid/hybrid.cpp), for f32 single values: three quarters of what
// the share says is left, in steps of 1024 elements (4 KiB), at least `minimum`, all of what is
// left if less than half a minimum would stay behind.
constexpr std::size_t kStep = 1024;
std::size_t claim(std::size_t left, double share, std::size_t minimum) {
  std::size_t n = static_cast<std::size_t>(static_cast<double>(left) * share * 0.75) / kStep * kStep;
  n = std::max(n, minimum);
  return n + minimum / 2 >= left ? left : n;
}

}  // namespace

TEST_CASE("hybrid: a call of 256 MiB or more starts the next of its kind from the share where its parts met") {
  xr::Context ctx(xr::Context::Empty{}, {});
  ctx.registry().add_builtin_backends();
  auto owned = std::make_unique<SliceNotingGpu>();
  SliceNotingGpu& gpu = *owned;
  ctx.registry().add(std::move(owned), 1000);
  xr::Reducer* hybrid = ctx.registry().find("hybrid");
  REQUIRE(hybrid != nullptr);
  REQUIRE(hybrid->available());
  xr::Settings configured;
  configured.set("gpu_fraction_pageable", "0.3", "test");
  hybrid->configure(configured);

  std::mt19937_64 rng(xr::test::run_seed() + 77);
  const std::size_t n = std::size_t{1} << 26;  // 256 MiB of f32
  const std::vector<float> data = xr::test::make_data<float>(xr::test::Pattern::random, xr::Op::sum, n, rng);
  INFO("seed " << xr::test::run_seed());

  // The first GPU slice of a call starting from `share`: the GPU claimed first, or after the CPU's
  // first claim from the back (which of the two raced ahead is the threads' affair).
  auto first_slice_fits = [&](std::size_t first, std::size_t count, double share) {
    const std::size_t m = std::clamp<std::size_t>(count / 64 / kStep * kStep, kStep, (std::size_t{4} << 20) / 4 / kStep * kStep);
    const std::size_t cpu_first = claim(count, 1 - share, m);
    return first == claim(count, share, m) || (cpu_first < count && first == claim(count - cpu_first, share, m));
  };
  auto call = [&](std::size_t count, xr::Op op = xr::Op::sum) {
    gpu.new_call();
    const xr::Request q{data.data(), count, xr::DType::f32, op, xr::Memory::host};
    const xr::Result r = hybrid->reduce(q);
    CHECK(xr::agrees(q, xr::exact_reference(q), r));
    std::size_t on_gpu = 0;
    for (std::size_t s : gpu.calls.back()) on_gpu += s;
    return std::clamp(static_cast<double>(on_gpu) / static_cast<double>(count), 0.01, 0.99);
  };
  auto first_of_last_call = [&]() -> std::size_t { return gpu.calls.back().empty() ? 0 : gpu.calls.back().front(); };

  // Each part claims at least once: the CPU's first claim, about half the input, takes
  // milliseconds, and the GPU's thread starts long before it is done.
  const double met_first = call(n);  // from the configured share
  CHECK(first_slice_fits(first_of_last_call(), n, 0.3));
  const double met_second = call(n);  // from where the first call's parts met
  INFO("the first call met at " << met_first << ", the second at " << met_second);
  CHECK(first_slice_fits(first_of_last_call(), n, met_first));
  call(n / 2);  // 128 MiB: says nothing about the share
  call(n);
  CHECK(first_slice_fits(first_of_last_call(), n, met_second));
  // Another op is another kind of call, with rates of its own: it starts from the configured share.
  call(n, xr::Op::max);
  CHECK(first_slice_fits(first_of_last_call(), n, 0.3));
}
