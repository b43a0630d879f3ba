#pragma once
//! Page-locked ("pinned") host memory, which the GPU reads directly and fast. Usable whether or
//! not a module that can pin is loaded: without one (no CUDA module, no GPU) the memory is
//! ordinary, pinned() says false, and reason() says why. Nothing fails for want of pinning.

#include <cstddef>
#include <span>
#include <string>

#include "xreduce/backend/registry.hpp"

namespace xreduce {

//! An owning buffer of pinned host memory (cudaHostAlloc through the CUDA module).
class PinnedBuffer {
 public:
  //! Uses the default context's modules unless given a registry.
  explicit PinnedBuffer(std::size_t bytes);
  PinnedBuffer(std::size_t bytes, const Registry& registry);
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& other) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  void* data() const { return data_; }
  std::size_t size() const { return size_; }
  bool pinned() const { return release_ != nullptr; }
  const std::string& reason() const { return reason_; }  //!< why not pinned; empty when pinned

  //! The buffer as elements of T (as many as fit).
  template <class T>
  std::span<T> as() const {
    return {static_cast<T*>(data_), size_ / sizeof(T)};
  }

 private:
  void reset() noexcept;
  void* data_ = nullptr;
  std::size_t size_ = 0;
  void (*release_)(void*) = nullptr;  // the module's, when pinned
  std::string reason_;
};

//! Pins a caller's existing host memory for the life of this object (cudaHostRegister).
class PinnedRegion {
 public:
  PinnedRegion(const void* data, std::size_t bytes);
  PinnedRegion(const void* data, std::size_t bytes, const Registry& registry);
  ~PinnedRegion();
  PinnedRegion(const PinnedRegion&) = delete;
  PinnedRegion& operator=(const PinnedRegion&) = delete;

  bool pinned() const { return unpin_ != nullptr; }
  const std::string& reason() const { return reason_; }  //!< why not pinned; empty when pinned

 private:
  void* data_;
  void (*unpin_)(void*) = nullptr;
  std::string reason_;
};

}  // namespace xreduce
