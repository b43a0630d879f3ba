#pragma once
// Where a shared test body puts its arrays: host memory for the conformance suite, device memory
// for the GPU suite (gpu/device_placement.hpp).

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "xreduce/types.hpp"

namespace xreduce::test {

//! Where a suite puts a test's arrays: `put` copies host bytes there (its pointer stays valid
//! until the Placement goes), `fetch` copies bytes back.
struct Placement {
  Memory memory = Memory::host;
  virtual ~Placement() = default;
  virtual void* put(const void* host, std::size_t bytes) = 0;
  virtual void fetch(void* host, const void* where, std::size_t bytes) = 0;
};

struct HostPlacement final : Placement {
  std::vector<std::unique_ptr<std::uint64_t[]>> blocks;
  void* put(const void* host, std::size_t bytes) override {
    blocks.emplace_back(new std::uint64_t[bytes / 8 + 1]);
    if (bytes) std::memcpy(blocks.back().get(), host, bytes);
    return blocks.back().get();
  }
  void fetch(void* host, const void* where, std::size_t bytes) override {
    if (bytes) std::memcpy(host, where, bytes);
  }
};

}  // namespace xreduce::test
