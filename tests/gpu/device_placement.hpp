#pragma once
// Device memory for the shared test bodies (support/segment_cases.hpp, support/stats_cases.hpp):
// the GPU suites' Placement.

#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <cstdlib>
#include <vector>

#include "support/segment_cases.hpp"
#include "xreduce/backend/reducer.hpp"
#include "xreduce/backend/registry.hpp"
#include "xreduce/xreduce.hpp"

namespace xreduce::test {

struct DevicePlacement final : Placement {
  std::vector<void*> blocks;
  DevicePlacement() { memory = Memory::device; }
  ~DevicePlacement() override {
    for (void* p : blocks) cudaFree(p);
  }
  void* put(const void* host, std::size_t bytes) override {
    void* p = nullptr;
    REQUIRE(cudaMalloc(&p, bytes + 16) == cudaSuccess);
    blocks.push_back(p);
    if (bytes) REQUIRE(cudaMemcpy(p, host, bytes, cudaMemcpyHostToDevice) == cudaSuccess);
    return p;
  }
  void fetch(void* host, const void* where, std::size_t bytes) override {
    if (bytes) REQUIRE(cudaMemcpy(host, where, bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
  }
};

//! The GPU backends of the default context that can run here (none without a GPU).
inline std::vector<Reducer*> gpu_backends() {
  std::vector<Reducer*> v;
  for (const auto& e : default_context().registry().entries())
    if (e.reducer->capabilities().engine() == Engine::gpu && e.reducer->available()) v.push_back(e.reducer);
  return v;
}

//! XREDUCE_TEST_QUICK: the shorter list of shapes.
inline bool few() {
  const char* q = std::getenv("XREDUCE_TEST_QUICK");
  return q != nullptr && *q != '\0' && *q != '0';
}

}  // namespace xreduce::test
