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
template <class F>
Result collect_as(const void* bytes) {
  using T = typename F::In;
  typename F::acc_t a;
  std::memcpy(&a, bytes, sizeof a);
  if constexpr (is_arg_op<F>) {
    return Result{Scalar(a.value), a.index, {}};
  } else if constexpr (F::op == Op::sum || F::op == Op::prod) {
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
  return visit_dtype(dtype, [&](auto tag) {
    return visit_op<decltype(tag)>(op, [&](auto f) { return collect_as<decltype(f)>(ws.host_result); });
  });
}

}  // namespace xreduce::cuda
