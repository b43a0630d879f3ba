// Several ops in one pass (Request::ops) of device data: the launch (enqueue_<dtype>.cu holds
// the kernels), and the one StatsAcc turned into the results of the ops asked for.

#include <cstring>
#include <limits>

#include "device_ops.cuh"
#include "techniques.hpp"

namespace xreduce::cuda {
namespace {

//! The C++ type of result_dtype(T, sum): sums and sums of squares of integers widen to 64 bits.
template <class T>
using sum_out_t = ops::widened_t<T>;

template <class T>
void write_typed(OpSet ops, const StatsAcc<T>& a, const OpsOut& out) {
  auto put = [&](Op s, auto value) {
    if (ops.contains(s)) std::memcpy(out.values[static_cast<int>(s)], &value, sizeof value);
  };
  put(Op::sum, static_cast<sum_out_t<T>>(a.sum));
  put(Op::sumsq, static_cast<sum_out_t<T>>(a.squares));
  put(Op::min, a.lo.value);
  put(Op::max, a.hi.value);
  put(Op::argmin, a.lo.value);
  put(Op::argmax, a.hi.value);
  if (ops.contains(Op::argmin)) out.indices[static_cast<int>(Op::argmin)][0] = a.lo.index;
  if (ops.contains(Op::argmax)) out.indices[static_cast<int>(Op::argmax)][0] = a.hi.index;
}

}  // namespace

void enqueue_stats(const void* data, std::size_t count, DType dtype, Workspace& ws) {
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    enqueue_stats_typed(static_cast<const T*>(data), count, ws);
  });
}

void write_stats(DType dtype, OpSet ops, const void* acc, const OpsOut& out) {
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    StatsAcc<T> a;
    std::memcpy(&a, acc, sizeof a);
    write_typed(ops, a, out);
  });
}

void collect_stats(DType dtype, OpSet ops, const OpsOut& out, Workspace& ws) {
  ws.fetch_result(64);
  XREDUCE_CUDA(cudaStreamSynchronize(ws.stream));
  write_stats(dtype, ops, ws.host_result, out);
}

}  // namespace xreduce::cuda
