// Segmented requests on the GPU backends, from device memory and from host memory: the shared
// body of support/segment_cases.hpp, and the offsets' check done on the device.

#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "gpu/device_placement.hpp"
#include "support/segment_cases.hpp"
#include "xreduce/xreduce.hpp"
#include "xreduce/backend/registry.hpp"

namespace xr = xreduce;

namespace {

//! The GPU backends that reduce segments, or `rows` too: those that reduce rows alone
//! (cuda.multi_gpu, of host data).
std::vector<xr::Reducer*> segment_backends(bool rows = false) {
  std::vector<xr::Reducer*> v;
  for (const auto& e : xr::default_context().registry().entries()) {
    const xr::Capabilities c = e.reducer->capabilities();
    if (c.engine() == xr::Engine::gpu && (c.takes(xr::Layout::ragged) || (rows && c.takes(xr::Layout::inner))) && e.reducer->available())
      v.push_back(e.reducer);
  }
  if (v.empty()) MESSAGE("no GPU backend that reduces segments can run here: skipped");
  return v;
}

template <class T>
void gpu_segments_for_type() {
  for (xr::Reducer* r : segment_backends(true)) {
    if (r->capabilities().reads(xr::Memory::device)) {
      xr::test::DevicePlacement device;
      xr::test::check_segments_for_type<T>(*r, device, xr::test::few());
    }
    // Host data: segments copied in whole; rows streamed in chunks of whole rows, rows longer
    // than a chunk copied in whole, each shape's results where they go.
    const xr::test::SmallChunks small(*r);
    xr::test::HostPlacement pageable;
    xr::test::check_segments_for_type<T>(*r, pageable, true);
    xr::test::PinnedPlacement pinned;
    xr::test::check_segments_for_type<T>(*r, pinned, true);
  }
}

}  // namespace

TEST_CASE("GPU segments, f32") { gpu_segments_for_type<float>(); }
TEST_CASE("GPU segments, f64") { gpu_segments_for_type<double>(); }
TEST_CASE("GPU segments, i32") { gpu_segments_for_type<std::int32_t>(); }
TEST_CASE("GPU segments, i64") { gpu_segments_for_type<std::int64_t>(); }
TEST_CASE("GPU segments, u32") { gpu_segments_for_type<std::uint32_t>(); }
TEST_CASE("GPU segments, u64") { gpu_segments_for_type<std::uint64_t>(); }
TEST_CASE("GPU segments, f16") { gpu_segments_for_type<xr::f16>(); }
TEST_CASE("GPU segments, bf16") { gpu_segments_for_type<xr::bf16>(); }
TEST_CASE("GPU segments, i8") { gpu_segments_for_type<std::int8_t>(); }
TEST_CASE("GPU segments, u8") { gpu_segments_for_type<std::uint8_t>(); }
TEST_CASE("GPU segments, i16") { gpu_segments_for_type<std::int16_t>(); }
TEST_CASE("GPU segments, u16") { gpu_segments_for_type<std::uint16_t>(); }
TEST_CASE("GPU segments, bool") { gpu_segments_for_type<bool>(); }

TEST_CASE("GPU segments: bad offsets are reported, not read past the data") {
  std::vector<float> x(100, 1.0f);
  const std::vector<std::uint64_t> decreasing{0, 50, 40, 100}, past_end{0, 50, 1u << 30};
  for (xr::Reducer* r : segment_backends()) {
    INFO("backend " << r->name());
    xr::test::DevicePlacement d;
    xr::Request q{d.put(x.data(), 400), x.size(), xr::DType::f32, xr::Op::sum, xr::Memory::device};
    q.segments = xr::Segments::at(static_cast<const std::uint64_t*>(d.put(decreasing.data(), 32)), 3);
    CHECK_THROWS_WITH_AS(r->reduce(q), doctest::Contains("offsets[1] = 50 > offsets[2] = 40"), xr::Error);
    q.segments = xr::Segments::at(static_cast<const std::uint64_t*>(d.put(past_end.data(), 24)), 2);
    CHECK_THROWS_WITH_AS(r->reduce(q), doctest::Contains("past the 100 elements"), xr::Error);
    q.segments = xr::Segments::at(past_end.data(), 2);  // host offsets with device data
    CHECK_THROWS_WITH_AS(r->reduce(q), doctest::Contains("the data's memory"), xr::Error);
  }
}

// A million segments (300,000 under the sanitizers): thousands of cuda.shuffle's blocks of 256,
// more than the GPU holds at once, each asking the L2 for its short segments' lines (a line shared
// by two segments once). Every segment against its exact reference; then a bad offset far past
// the first blocks is found.
TEST_CASE("GPU segments: a million segments, more blocks than the GPU holds at once") {
  std::mt19937_64 rng(xr::test::run_seed() ^ 0xba7c4);
  const xr::test::SegmentShape shape = xr::test::many_segments(rng, xr::test::few() ? 300000 : 1000000);
  for (xr::Reducer* r : segment_backends()) {
    xr::test::DevicePlacement device;
    xr::test::check_segments<float>(*r, device, xr::Op::sum, shape, xr::test::Pattern::random, rng);
    xr::test::check_segments<double>(*r, device, xr::Op::argmax, shape, xr::test::Pattern::ties, rng);
    xr::Features exact_segments;
    exact_segments.layout = xr::Layout::ragged;
    exact_segments.accuracy = xr::Accuracy::exact;
    exact_segments.memory = xr::Memory::device;
    if (r->capabilities().support(exact_segments) != xr::Support::none)
      xr::test::check_segments<float>(*r, device, xr::Op::sum, shape, xr::test::Pattern::random, rng, xr::Accuracy::exact);
    INFO("backend " << r->name());
    const std::size_t at = shape.count() - 1000;
    std::vector<std::uint64_t> bad = shape.offsets;
    bad[at] = bad[at + 1] + 1;
    const std::vector<float> x(shape.n, 1.0f);
    xr::Request q{device.put(x.data(), x.size() * 4), x.size(), xr::DType::f32, xr::Op::sum, xr::Memory::device};
    q.segments = xr::Segments::at(static_cast<const std::uint64_t*>(device.put(bad.data(), bad.size() * 8)), shape.count());
    const std::string named = "offsets[" + std::to_string(at) + "]";
    CHECK_THROWS_WITH_AS(r->reduce(q), doctest::Contains(named.c_str()), xr::Error);
  }
}

// Offsets that go back and forth make segments overlap: more long segments (and chunks) than
// the data could hold apart, past the room of cuda.shuffle's lists. Reported, and nothing read
// or written out of bounds (compute-sanitizer's memcheck runs this).
TEST_CASE("GPU segments: overlapping long segments from bad offsets are reported") {
  std::vector<float> x(40000, 1.0f);  // 160 KB: room for 9 long segments of 16 KB
  std::vector<std::uint64_t> back_and_forth(201);
  for (std::size_t s = 0; s < back_and_forth.size(); ++s) back_and_forth[s] = s % 2 ? x.size() : 0;
  for (xr::Reducer* r : segment_backends()) {
    INFO("backend " << r->name());
    xr::test::DevicePlacement d;
    xr::Request q{d.put(x.data(), x.size() * 4), x.size(), xr::DType::f32, xr::Op::sum, xr::Memory::device};
    q.segments = xr::Segments::at(static_cast<const std::uint64_t*>(d.put(back_and_forth.data(), back_and_forth.size() * 8)), 200);
    CHECK_THROWS_WITH_AS(r->reduce(q), doctest::Contains("offsets[1] = 40000 > offsets[2] = 0"), xr::Error);
  }
}

// Scratch is reused between calls: a request whose segments all end early, after one whose
// segments covered the data, must see nothing of the earlier call's lists (once, a table left
// from it sent a block back over segments it did not own). Several rounds: that was a race.
TEST_CASE("GPU segments: segments that end early, after a request that covered the data") {
  constexpr std::size_t n = 200000;
  xr::test::SegmentShape spread{"segments across the data", n, 0, std::vector<std::uint64_t>(n / 1000 + 1)};
  for (std::size_t s = 0; s < spread.offsets.size(); ++s) spread.offsets[s] = s * 1000;
  const xr::test::SegmentShape early{"segments that end early", n, 0, {0, 10, 20, 4000}};
  std::mt19937_64 rng(xr::test::run_seed() ^ 0x0e4dull);
  for (xr::Reducer* r : segment_backends()) {
    xr::test::DevicePlacement device;
    for (int round = 0; round < 4; ++round)
      for (xr::Op op : {xr::Op::sum, xr::Op::argmin}) {
        xr::test::check_segments<float>(*r, device, op, spread, xr::test::Pattern::random, rng);
        xr::test::check_segments<float>(*r, device, op, early, xr::test::Pattern::random, rng);
      }
  }
}
