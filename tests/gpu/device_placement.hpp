#pragma once
// Device memory for the shared test bodies (support/segment_cases.hpp, support/stats_cases.hpp):
// the GPU suites' Placement.

#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <cstdlib>
#include <vector>

#include "support/segment_cases.hpp"

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

//! XREDUCE_TEST_QUICK: the shorter list of shapes.
inline bool few() {
  const char* q = std::getenv("XREDUCE_TEST_QUICK");
  return q != nullptr && *q != '\0' && *q != '0';
}

}  // namespace xreduce::test
