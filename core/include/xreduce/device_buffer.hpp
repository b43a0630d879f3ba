#pragma once
//! Memory of a GPU, for data that the GPU backends are to read in place (device memory), through
//! the loaded module that can give it (the CUDA module: cudaMalloc on the calling thread's current
//! device). Unlike PinnedBuffer there is nothing to fall back to: without such a module or a
//! usable GPU the constructor throws Error(unsupported) with the reason.

#include <cstddef>
#include <string>

#include "xreduce/backend/registry.hpp"

namespace xreduce {

//! An owning buffer of device memory, filled and read back by copies that wait.
class DeviceBuffer {
 public:
  //! Uses the default context's modules unless given a registry.
  explicit DeviceBuffer(std::size_t bytes);
  DeviceBuffer(std::size_t bytes, const Registry& registry);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const { return data_; }
  std::size_t size() const { return size_; }

  //! Copies `bytes` of host memory at `host` to the buffer, `offset` bytes into it.
  void copy_from(const void* host, std::size_t bytes, std::size_t offset = 0);
  //! Copies the buffer's first `bytes` to host memory at `host`.
  void copy_to(void* host, std::size_t bytes) const;

 private:
  void reset() noexcept;
  void* data_ = nullptr;
  std::size_t size_ = 0;
  const xreduce_device_memory_v1* memory_ = nullptr;
};

}  // namespace xreduce
