// The checks every backend gets for free: Reducer::reduce is the only way into do_reduce.

#include "xreduce/reducer.hpp"

#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include "xreduce/error.hpp"

namespace xreduce {
namespace {

std::string combination(const Request& q) {
  return std::string(to_string(q.op)) + " of " + std::string(to_string(q.dtype));
}

Result empty_result(const Request& q, std::string_view backend) {
  DType out = result_dtype(q.dtype, q.op);
  if (!(q.op == Op::sum || q.op == Op::prod))
    throw Error(ErrorCode::empty_input, std::string(to_string(q.op)) + " of an empty array has no value");
  int identity = q.op == Op::sum ? 0 : 1;
  Scalar value = visit_dtype(out, [&](auto tag) { return Scalar(static_cast<decltype(tag)>(identity)); });
  return Result{value, std::nullopt, std::string(backend)};
}

bool is_aligned(const void* p, DType t) { return reinterpret_cast<std::uintptr_t>(p) % size_of(t) == 0; }

}  // namespace

Result Reducer::reduce(const Request& q, const Options& options) {
  if (static_cast<unsigned>(q.dtype) >= all_dtypes.size() || static_cast<unsigned>(q.op) >= all_ops.size() ||
      static_cast<unsigned>(q.memory) > static_cast<unsigned>(Memory::device))
    throw Error(ErrorCode::invalid_argument, "request has an out-of-range dtype, op or memory value");
  if (q.count > 0 && q.data == nullptr)
    throw Error(ErrorCode::invalid_argument, "request has null data and count " + std::to_string(q.count));

  const std::string backend(name());
  Capabilities caps = capabilities();
  if (caps.support(q.dtype, q.op) == Support::none)
    throw Error(ErrorCode::unsupported, "backend '" + backend + "' does not support " + combination(q));
  if (!caps.accepts(q.memory))
    throw Error(ErrorCode::unsupported, "backend '" + backend + "' does not read " +
                                            std::string(to_string(q.memory)) + " memory");
  if (Availability a = available(); !a)
    throw Error(ErrorCode::unavailable, "backend '" + backend + "' is unavailable: " + a.reason);
  if (q.count == 0) return empty_result(q, backend);

  // Host data that is not aligned to its element size is copied once to aligned memory, so no
  // backend ever dereferences a misaligned pointer. Device data is the device module's business.
  const bool host_data = q.memory == Memory::host || (q.memory == Memory::automatic && caps.engine() != Engine::gpu);
  if (host_data && !is_aligned(q.data, q.dtype)) {
    const std::size_t bytes = q.count * size_of(q.dtype);
    std::unique_ptr<std::uint64_t[]> copy(new (std::nothrow) std::uint64_t[(bytes + 7) / 8]);
    if (!copy)
      throw Error(ErrorCode::out_of_memory, "cannot allocate " + std::to_string(bytes) + " bytes to align misaligned input");
    std::memcpy(copy.get(), q.data, bytes);
    Request aligned = q;
    aligned.data = copy.get();
    return reduce(aligned, options);
  }

  Result r = do_reduce(q, options);
  const DType expected = result_dtype(q.dtype, q.op);
  if (r.value.dtype() != expected || r.index.has_value() != returns_index(q.op))
    throw Error(ErrorCode::internal, "backend '" + backend + "' returned a " + std::string(to_string(r.value.dtype())) +
                                         (r.index ? " with" : " without") + " an index for " + combination(q));
  r.backend = backend;
  return r;
}

}  // namespace xreduce
