#include "aligned_input.hpp"

#include <cstring>
#include <new>
#include <string>

#include "xreduce/error.hpp"

namespace xreduce::detail {

Request with_aligned_data(const Request& q, std::unique_ptr<std::uint64_t[]>& storage) {
  if (q.data == nullptr || reinterpret_cast<std::uintptr_t>(q.data) % size_of(q.dtype) == 0) return q;
  // The bytes the request reads: `count` elements, or a view's span from its lowest element to
  // its highest, copied whole so that the strides still hold.
  const auto element = static_cast<std::int64_t>(size_of(q.dtype));
  std::int64_t low = 0, high = q.view.rank == 0 ? static_cast<std::int64_t>(q.count) * element : element;
  for (std::size_t k = 0; k < q.view.rank; ++k) {
    const std::int64_t reach = (q.view.shape[k] - 1) * q.view.strides[k] * element;
    (reach < 0 ? low : high) += reach;
  }
  const auto bytes = static_cast<std::size_t>(high - low);
  storage.reset(new (std::nothrow) std::uint64_t[(bytes + 7) / 8]);
  if (!storage)
    throw Error(ErrorCode::out_of_memory, "cannot allocate " + std::to_string(bytes) + " bytes to align misaligned input");
  std::memcpy(storage.get(), static_cast<const unsigned char*>(q.data) + low, bytes);
  Request aligned = q;
  aligned.data = reinterpret_cast<const unsigned char*>(storage.get()) - low;
  return aligned;
}

}  // namespace xreduce::detail
