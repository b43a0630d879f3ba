// `cub`: cub::DeviceReduce::Reduce, with temporary storage cached in the workspace (it grows,
// it is not allocated per call). Sums and products accumulate in double or uint64 as every other
// backend does (the accumulator type follows the initial value); min/max use the NaN-absorbing
// operator; argmin/argmax reduce (value, index) pairs made on the fly from a counting iterator.

#include <cub/device/device_reduce.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include "device_ops.cuh"
#include "techniques.hpp"

namespace xreduce::cuda {
namespace {

template <class It, class Op, class A>
void cub_reduce(It in, std::size_t n, Op op, A init, Workspace& ws) {
  std::size_t bytes = 0;
  A* out = ws.result_as<A>();
  const auto count = static_cast<long long>(n);
  XREDUCE_CUDA(cub::DeviceReduce::Reduce(nullptr, bytes, in, out, count, op, init, ws.stream));
  void* temp = ws.cub_temp.reserve(bytes, "cub temporary storage");
  XREDUCE_CUDA(cub::DeviceReduce::Reduce(temp, bytes, in, out, count, op, init, ws.stream));
}

template <class F>
void run_cub(const typename F::In* x, std::size_t n, F f, Workspace& ws) {
  if constexpr (is_arg_op<F>) {
    auto in = thrust::make_transform_iterator(thrust::counting_iterator<index_t>(0), LiftAt<F>{x, f});
    cub_reduce(in, n, f, f.identity(), ws);
  } else {
    cub_reduce(x, n, MixedOp<F>{f}, f.identity(), ws);
  }
}

}  // namespace

template <class T>
void enqueue_cub(const T* x, std::size_t n, Op op, Workspace& ws) {
  visit_op<T>(op, [&](auto f) { run_cub(x, n, f, ws); });
}

#define XREDUCE_INSTANTIATE(T) template void enqueue_cub<T>(const T*, std::size_t, Op, Workspace&);
XREDUCE_FOR_EACH_ELEMENT_TYPE(XREDUCE_INSTANTIATE)
#undef XREDUCE_INSTANTIATE

}  // namespace xreduce::cuda
