#include "aligned_input.hpp"

#include <cstring>
#include <new>
#include <string>

#include "xreduce/error.hpp"

namespace xreduce::detail {

Request with_aligned_data(const Request& q, std::unique_ptr<std::uint64_t[]>& storage) {
  if (q.data == nullptr || reinterpret_cast<std::uintptr_t>(q.data) % size_of(q.dtype) == 0) return q;
  const std::size_t bytes = q.count * q.width * size_of(q.dtype);
  storage.reset(new (std::nothrow) std::uint64_t[(bytes + 7) / 8]);
  if (!storage)
    throw Error(ErrorCode::out_of_memory, "cannot allocate " + std::to_string(bytes) + " bytes to align misaligned input");
  std::memcpy(storage.get(), q.data, bytes);
  Request aligned = q;
  aligned.data = storage.get();
  return aligned;
}

}  // namespace xreduce::detail
