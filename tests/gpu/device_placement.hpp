#pragma once
// Device memory for the shared test bodies (support/segment_cases.hpp, support/stats_cases.hpp):
// the GPU suites' Placement.

#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
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

//! Pinned (page-locked) host memory: host data that the GPU backends copy without staging.
struct PinnedPlacement final : Placement {
  std::vector<void*> blocks;
  ~PinnedPlacement() override {
    for (void* p : blocks) cudaFreeHost(p);
  }
  void* put(const void* host, std::size_t bytes) override {
    void* p = nullptr;
    REQUIRE(cudaMallocHost(&p, bytes + 16) == cudaSuccess);
    blocks.push_back(p);
    if (bytes) std::memcpy(p, host, bytes);
    return p;
  }
  void fetch(void* host, const void* where, std::size_t bytes) override {
    if (bytes) std::memcpy(host, where, bytes);
  }
};

//! While alive, `r` streams host data in chunks of 64 KiB, pageable data staged by three copy
//! threads: many chunks, and every worker busy, for test data of a few MiB. Then its defaults again.
struct SmallChunks {
  Reducer& r;
  explicit SmallChunks(Reducer& reducer) : r(reducer) {
    Settings s;
    s.set("chunk_bytes", "65536").set("stage_bytes", "65536").set("copy_threads", "3");
    r.configure(s);
  }
  ~SmallChunks() {
    Settings defaults;
    for (const SettingInfo& k : r.settings()) defaults.set(k.key, k.default_value);
    r.configure(defaults);
  }
  SmallChunks(const SmallChunks&) = delete;
  SmallChunks& operator=(const SmallChunks&) = delete;
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
