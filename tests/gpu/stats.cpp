// Several ops in one pass (Request::ops) on the GPU backends that do them, from device memory
// and from host memory (streamed, or copied in whole for segments): the shared body of
// support/stats_cases.hpp.

#include <doctest/doctest.h>

#include <random>

#include "gpu/device_placement.hpp"
#include "support/stats_cases.hpp"
#include "xreduce/backend/registry.hpp"
#include "xreduce/xreduce.hpp"

namespace xr = xreduce;

namespace {

std::vector<xr::Reducer*> stats_backends() {
  std::vector<xr::Reducer*> v;
  for (const auto& e : xr::default_context().registry().entries())
    if (e.reducer->capabilities().engine() == xr::Engine::gpu && e.reducer->capabilities().takes_several() && e.reducer->available())
      v.push_back(e.reducer);
  if (v.empty()) MESSAGE("no GPU backend that does several ops in one pass can run here: skipped");
  return v;
}

template <class T>
void gpu_stats_for_type() {
  for (xr::Reducer* r : stats_backends()) {
    xr::test::DevicePlacement device;
    xr::test::check_stats_for_type<T>(*r, device, xr::test::few());
    xr::test::HostPlacement host;
    xr::test::check_stats_for_type<T>(*r, host, true);
  }
}

}  // namespace

TEST_CASE("GPU several ops in one pass, f32") { gpu_stats_for_type<float>(); }
TEST_CASE("GPU several ops in one pass, f64") { gpu_stats_for_type<double>(); }
TEST_CASE("GPU several ops in one pass, i32") { gpu_stats_for_type<std::int32_t>(); }
TEST_CASE("GPU several ops in one pass, i64") { gpu_stats_for_type<std::int64_t>(); }
TEST_CASE("GPU several ops in one pass, u32") { gpu_stats_for_type<std::uint32_t>(); }
TEST_CASE("GPU several ops in one pass, u64") { gpu_stats_for_type<std::uint64_t>(); }
TEST_CASE("GPU several ops in one pass, f16") { gpu_stats_for_type<xr::f16>(); }
TEST_CASE("GPU several ops in one pass, bf16") { gpu_stats_for_type<xr::bf16>(); }
TEST_CASE("GPU several ops in one pass, i8") { gpu_stats_for_type<std::int8_t>(); }
TEST_CASE("GPU several ops in one pass, u8") { gpu_stats_for_type<std::uint8_t>(); }
TEST_CASE("GPU several ops in one pass, i16") { gpu_stats_for_type<std::int16_t>(); }
TEST_CASE("GPU several ops in one pass, u16") { gpu_stats_for_type<std::uint16_t>(); }
TEST_CASE("GPU several ops in one pass, bool") { gpu_stats_for_type<bool>(); }

TEST_CASE("GPU several ops of segments: the results go to one memory") {
  std::vector<float> x(100, 1.0f);
  for (xr::Reducer* r : stats_backends()) {
    if (!r->capabilities().takes(xr::Layout::inner)) continue;
    INFO("backend " << r->name());
    xr::test::DevicePlacement d;
    xr::Request q = xr::Request::rows(d.put(x.data(), 400), 4, 25, xr::DType::f32, xr::Op::sum);
    q.memory = xr::Memory::device;
    q.ops = {xr::Op::sum, xr::Op::max};
    float host_max[4];
    xr::OpsOut out;
    out.values[static_cast<int>(xr::Op::sum)] = d.put(x.data(), 16);
    out.values[static_cast<int>(xr::Op::max)] = host_max;
    q.ops_out = &out;
    CHECK_THROWS_WITH_AS(r->reduce(q), doctest::Contains("one memory"), xr::Error);
  }
}

// A million segments (300,000 under the sanitizers): more of the several-op kernels' blocks than
// the GPU holds at once.
TEST_CASE("GPU several ops of a million segments") {
  std::mt19937_64 rng(xr::test::run_seed() ^ 0x57a75);
  const xr::test::SegmentShape shape = xr::test::many_segments(rng, xr::test::few() ? 300000 : 1000000);
  for (xr::Reducer* r : stats_backends()) {
    if (!r->capabilities().takes(xr::Layout::ragged)) continue;
    xr::test::DevicePlacement device;
    const xr::OpSet ops{xr::Op::sum, xr::Op::min, xr::Op::max, xr::Op::argmax};
    xr::test::check_stats<float>(*r, device, ops, shape.n, &shape, xr::test::Pattern::random, rng);
  }
}
