#include <doctest/doctest.h>

#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "xreduce/xreduce.hpp"
#include "xreduce/backend/registry.hpp"
#include "xreduce/device_buffer.hpp"
#include "xreduce/pinned.hpp"

namespace xr = xreduce;

TEST_CASE("pinned memory without a module that can pin: ordinary memory, and the reason") {
  xr::Registry none;  // no plugins at all
  xr::PinnedBuffer buffer(1000 * sizeof(std::int32_t), none);
  CHECK_FALSE(buffer.pinned());
  CHECK(buffer.reason().find("no loaded module") != std::string::npos);
  REQUIRE(buffer.data() != nullptr);
  auto v = buffer.as<std::int32_t>();
  REQUIRE(v.size() == 1000);
  std::iota(v.begin(), v.end(), 1);
  xr::Registry cpu;
  cpu.add_builtin_backends();
  xr::Result r = cpu.get("sequential").reduce(xr::Request{v.data(), v.size(), xr::DType::i32, xr::Op::sum, xr::Memory::host});
  CHECK(r.value.get<std::int64_t>() == 500500);

  std::vector<float> mine(64, 1.0f);
  xr::PinnedRegion region(mine.data(), mine.size() * sizeof(float), none);
  CHECK_FALSE(region.pinned());
  CHECK(region.reason().find("no loaded module") != std::string::npos);
}

TEST_CASE("pinned memory through the default context: pinned where a GPU is, a reason where not") {
  xr::PinnedBuffer buffer(4096);
  REQUIRE(buffer.data() != nullptr);
  CHECK(buffer.pinned() == buffer.reason().empty());
  xr::PinnedBuffer moved = std::move(buffer);
  CHECK(buffer.data() == nullptr);
  CHECK(moved.size() == 4096);
}

TEST_CASE("device memory: without a module that gives it, unsupported with the reason") {
  xr::Registry none;  // no plugins at all
  CHECK_THROWS_WITH_AS(xr::DeviceBuffer(1024, none), doctest::Contains("no loaded module gives device memory"), xr::Error);
}

TEST_CASE("device memory through the default context: bytes there and back where a GPU is, a reason where not") {
  std::vector<std::uint32_t> bytes(1000);
  std::iota(bytes.begin(), bytes.end(), 7u);
  std::optional<xr::DeviceBuffer> made;
  try {
    made.emplace(bytes.size() * 4);
  } catch (const xr::Error& e) {
    MESSAGE("no device memory here: " << e.what());
    CHECK(e.code() == xr::ErrorCode::unsupported);
    CHECK(std::string(e.what()).find("device memory") != std::string::npos);
    return;
  }
  xr::DeviceBuffer& buffer = *made;
  buffer.copy_from(bytes.data(), 400, 4);  // the first 100 values, one value in
  buffer.copy_from(bytes.data(), 4);
  std::vector<std::uint32_t> back(101);
  buffer.copy_to(back.data(), back.size() * 4);
  CHECK(back[0] == 7u);
  CHECK(back[1] == 7u);
  CHECK(back[100] == 106u);
  CHECK_THROWS_AS(buffer.copy_from(bytes.data(), 8, bytes.size() * 4 - 4), xr::Error);  // past the end
  CHECK_THROWS_AS(buffer.copy_to(back.data(), bytes.size() * 4 + 1), xr::Error);
  // The GPU backends read it where it is: 7 + (7 + ... + 106).
  const xr::Request q{buffer.data(), 101, xr::DType::u32, xr::Op::sum, xr::Memory::device};
  CHECK(xr::reduce(q).value.to_double() == 5657.0);
  xr::DeviceBuffer moved = std::move(buffer);
  CHECK(buffer.data() == nullptr);
  CHECK(moved.size() == bytes.size() * 4);
}
