#include "xreduce/pinned.hpp"

#include <new>
#include <utility>

#include "xreduce/context.hpp"
#include "xreduce/error.hpp"

namespace xreduce {
namespace {
constexpr std::size_t kAlignment = 4096;  // page-aligned either way, as pinned memory is
constexpr const char* kNoModule = "no loaded module can pin host memory (no CUDA module)";
}  // namespace

PinnedBuffer::PinnedBuffer(std::size_t bytes) : PinnedBuffer(bytes, default_context().registry()) {}

PinnedBuffer::PinnedBuffer(std::size_t bytes, const Registry& registry) : size_(bytes) {
  if (const xreduce_memory_v1* memory = registry.memory_service()) {
    char message[512] = {};
    data_ = memory->allocate(bytes, message, sizeof message);
    if (data_) {
      release_ = memory->release;
      return;
    }
    reason_ = message[0] ? message : "the module could not pin host memory";
  } else {
    reason_ = kNoModule;
  }
  data_ = ::operator new(bytes == 0 ? 1 : bytes, std::align_val_t{kAlignment}, std::nothrow);
  if (!data_) throw Error(ErrorCode::out_of_memory, "cannot allocate " + std::to_string(bytes) + " bytes of host memory");
}

void PinnedBuffer::reset() noexcept {
  if (!data_) return;
  if (release_) release_(data_);
  else ::operator delete(data_, std::align_val_t{kAlignment});
  data_ = nullptr;
}

PinnedBuffer::~PinnedBuffer() { reset(); }

PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)),
      release_(std::exchange(other.release_, nullptr)), reason_(std::move(other.reason_)) {}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    release_ = std::exchange(other.release_, nullptr);
    reason_ = std::move(other.reason_);
  }
  return *this;
}

PinnedRegion::PinnedRegion(const void* data, std::size_t bytes) : PinnedRegion(data, bytes, default_context().registry()) {}

PinnedRegion::PinnedRegion(const void* data, std::size_t bytes, const Registry& registry)
    : data_(const_cast<void*>(data)) {
  const xreduce_memory_v1* memory = registry.memory_service();
  if (!memory) {
    reason_ = kNoModule;
    return;
  }
  char message[512] = {};
  if (memory->pin(data_, bytes, message, sizeof message)) unpin_ = memory->unpin;
  else reason_ = message[0] ? message : "the module could not pin this memory";
}

PinnedRegion::~PinnedRegion() {
  if (unpin_) unpin_(data_);
}

}  // namespace xreduce
