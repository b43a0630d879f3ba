#include <cstring>

#include "device_ops.cuh"
#include "techniques.hpp"
#include "xreduce/error.hpp"

namespace xreduce::cuda {

void enqueue(Technique t, const void* data, std::size_t count, DType dtype, Op op, int block, Workspace& ws) {
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* x = static_cast<const T*>(data);
    switch (t) {
      case Technique::cub: return enqueue_cub(x, count, op, ws);
      case Technique::thrust: return enqueue_thrust(x, count, op, ws);
      default: return enqueue_typed(t, x, count, op, block, ws);
    }
  });
}

namespace {
template <class T, Op kOp>
Result collect_as(const void* bytes) {
  using A = typename op_for<T, kOp>::type::acc_t;
  A a;
  std::memcpy(&a, bytes, sizeof a);
  if constexpr (kOp == Op::argmin || kOp == Op::argmax) {
    return Result{Scalar(a.value), a.index, {}};
  } else if constexpr (kOp == Op::sum || kOp == Op::prod) {
    if constexpr (std::is_floating_point_v<T>) return Result{Scalar(static_cast<T>(a)), {}, {}};
    else if constexpr (std::is_signed_v<T>) return Result{Scalar(static_cast<std::int64_t>(a)), {}, {}};
    else return Result{Scalar(static_cast<std::uint64_t>(a)), {}, {}};
  } else {
    return Result{Scalar(a), {}, {}};
  }
}
}  // namespace

Result collect(DType dtype, Op op, Workspace& ws) {
  XREDUCE_CUDA(cudaMemcpyAsync(ws.host_result, ws.result, 64, cudaMemcpyDeviceToHost, ws.stream));
  XREDUCE_CUDA(cudaStreamSynchronize(ws.stream));
  return visit_dtype(dtype, [&](auto tag) -> Result {
    using T = decltype(tag);
    switch (op) {
      case Op::sum: return collect_as<T, Op::sum>(ws.host_result);
      case Op::prod: return collect_as<T, Op::prod>(ws.host_result);
      case Op::min: return collect_as<T, Op::min>(ws.host_result);
      case Op::max: return collect_as<T, Op::max>(ws.host_result);
      case Op::argmin: return collect_as<T, Op::argmin>(ws.host_result);
      case Op::argmax: return collect_as<T, Op::argmax>(ws.host_result);
    }
    throw Error(ErrorCode::internal, "collect: unknown op");
  });
}

}  // namespace xreduce::cuda
