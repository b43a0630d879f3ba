#include "xreduce/device_buffer.hpp"

#include <utility>

#include "xreduce/context.hpp"
#include "xreduce/error.hpp"

namespace xreduce {
namespace {

//! The module's copy between `target` and `source`, or Error(internal) with its reason.
void copy(const xreduce_device_memory_v1& memory, void* target, const void* source, std::size_t bytes) {
  char message[512] = {};
  if (bytes > 0 && !memory.copy(target, source, bytes, message, sizeof message))
    throw Error(ErrorCode::internal, std::string("copy to or from device memory: ") + (message[0] ? message : "no reason given"));
}

}  // namespace

DeviceBuffer::DeviceBuffer(std::size_t bytes) : DeviceBuffer(bytes, default_context().registry()) {}

DeviceBuffer::DeviceBuffer(std::size_t bytes, const Registry& registry) : size_(bytes), memory_(registry.device_memory_service()) {
  if (!memory_)
    throw Error(ErrorCode::unsupported, "no loaded module gives device memory (no CUDA module: see `xreduce list --plugins`)");
  char message[512] = {};
  data_ = memory_->allocate(bytes == 0 ? 1 : bytes, message, sizeof message);
  if (!data_)
    throw Error(ErrorCode::unsupported, "cannot allocate " + std::to_string(bytes) + " bytes of device memory: " +
                                            (message[0] ? message : "no reason given"));
}

void DeviceBuffer::copy_from(const void* host, std::size_t bytes, std::size_t offset) {
  if (offset > size_ || bytes > size_ - offset)
    throw Error(ErrorCode::invalid_argument, "DeviceBuffer::copy_from: " + std::to_string(bytes) + " bytes at offset " +
                                                 std::to_string(offset) + " do not fit " + std::to_string(size_));
  copy(*memory_, static_cast<unsigned char*>(data_) + offset, host, bytes);
}

void DeviceBuffer::copy_to(void* host, std::size_t bytes) const {
  if (bytes > size_)
    throw Error(ErrorCode::invalid_argument, "DeviceBuffer::copy_to: " + std::to_string(bytes) + " bytes from a buffer of " +
                                                 std::to_string(size_));
  copy(*memory_, host, data_, bytes);
}

void DeviceBuffer::reset() noexcept {
  if (data_ && memory_) memory_->release(data_);
  data_ = nullptr;
}

DeviceBuffer::~DeviceBuffer() { reset(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)), memory_(other.memory_) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    memory_ = other.memory_;
  }
  return *this;
}

}  // namespace xreduce
