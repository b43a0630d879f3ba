#include <doctest/doctest.h>

#include <numeric>
#include <vector>

#include "xreduce/xreduce.hpp"
#include "xreduce/backend/registry.hpp"
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
