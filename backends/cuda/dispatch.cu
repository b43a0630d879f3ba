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

Result collect(DType dtype, Op op, Workspace& ws) {
  XREDUCE_CUDA(cudaMemcpyAsync(ws.host_result, ws.result, 64, cudaMemcpyDeviceToHost, ws.stream));
  XREDUCE_CUDA(cudaStreamSynchronize(ws.stream));
  return visit_dtype(dtype, [&](auto tag) {
    return visit_op<decltype(tag)>(op, [&](auto f) {
      typename decltype(f)::acc_t a;
      std::memcpy(&a, ws.host_result, sizeof a);
      return result_of<decltype(f)>(a);
    });
  });
}

}  // namespace xreduce::cuda
