// `thrust`: thrust::transform_reduce on the workspace's stream, as a user of Thrust would write
// it. Thrust allocates its temporary storage itself on every call and returns the value to the
// host; the value is put back in the result slot so every backend is collected the same way.

#include <thrust/execution_policy.h>
#include <thrust/system/system_error.h>
#include <thrust/transform_reduce.h>

#include "device_ops.cuh"
#include "techniques.hpp"
#include "xreduce/error.hpp"

namespace xreduce::cuda {
namespace {

template <class F>
struct Lift {
  F f;
  __device__ typename F::acc_t operator()(typename F::In x) const { return f.lift(x, 0); }
};

template <class F>
void run_thrust(const typename F::In* x, std::size_t n, F f, Workspace& ws) {
  using A = typename F::acc_t;
  A value;
  try {
    value = thrust::transform_reduce(thrust::cuda::par.on(ws.stream), x, x + n, Lift<F>{f}, f.identity(), f);
  } catch (const thrust::system_error& e) {
    throw Error(e.code().value() == cudaErrorMemoryAllocation ? ErrorCode::out_of_memory : ErrorCode::internal,
                std::string("thrust::transform_reduce: ") + e.what());
  } catch (const std::bad_alloc&) {
    throw Error(ErrorCode::out_of_memory, "thrust::transform_reduce: out of GPU memory for temporary storage");
  }
  // Where ws.result is host_result mapped, the value is in place; else it goes where collect()
  // fetches it from.
  *static_cast<A*>(ws.host_result) = value;
  if (!ws.result_mapped)
    XREDUCE_CUDA(cudaMemcpyAsync(ws.result, ws.host_result, sizeof(A), cudaMemcpyHostToDevice, ws.stream));
}

}  // namespace

template <class T>
void enqueue_thrust(const T* x, std::size_t n, Op op, Workspace& ws) {
  visit_op<T>(op, [&](auto f) {
    if constexpr (is_arg_op<decltype(f)>) throw Error(ErrorCode::internal, "thrust backend: argmin/argmax are not offered");
    else run_thrust(x, n, f, ws);
  });
}

#define XREDUCE_INSTANTIATE(T) template void enqueue_thrust<T>(const T*, std::size_t, Op, Workspace&);
XREDUCE_FOR_EACH_32_64_TYPE(XREDUCE_INSTANTIATE)
#undef XREDUCE_INSTANTIATE

}  // namespace xreduce::cuda
