// Several ops in one pass (Request::ops) of device data: the launch (enqueue_<dtype>.cu holds
// StatsOp's kernels, statistics_<dtype>.cu StatsMomentsOp's), and the one accumulator turned
// into the results of the ops asked for.

#include <cstring>
#include <type_traits>

#include "device_ops.cuh"
#include "techniques.hpp"

namespace xreduce::cuda {
namespace {

//! The C++ type of result_dtype(T, sum): sums and sums of squares of integers widen to 64 bits.
template <class T>
using sum_out_t = ops::widened_t<T>;

//! Puts op `s`'s value in its slot of `out`, if `ops` asks for it.
template <class V>
void put(OpSet ops, const OpsOut& out, Op s, V value) {
  if (ops.contains(s)) std::memcpy(out.values[static_cast<int>(s)], &value, sizeof value);
}

template <class T>
void write_typed(OpSet ops, const StatsAcc<T>& a, double, const OpsOut& out) {
  put(ops, out, Op::sum, static_cast<sum_out_t<T>>(a.sum));
  put(ops, out, Op::sumsq, static_cast<sum_out_t<T>>(a.squares));
  put(ops, out, Op::min, a.lo.value);
  put(ops, out, Op::max, a.hi.value);
  put(ops, out, Op::argmin, a.lo.value);
  put(ops, out, Op::argmax, a.hi.value);
  if (ops.contains(Op::argmin)) out.indices[static_cast<int>(Op::argmin)][0] = a.lo.index;
  if (ops.contains(Op::argmax)) out.indices[static_cast<int>(Op::argmax)][0] = a.hi.index;
}

//! StatsOp's ops, then mean, var and std from the moments, each finished as the op alone is.
template <class T>
void write_typed(OpSet ops, const StatsMomentsAcc<T>& a, double correction, const OpsOut& out) {
  write_typed(ops, a.stats, correction, out);
  const ops::FinishArgs args{correction};
  put(ops, out, Op::mean, ops::MomentsOp<T, Op::mean>::finish(a.moments, args));
  put(ops, out, Op::var, ops::MomentsOp<T, Op::var>::finish(a.moments, args));
  put(ops, out, Op::std, ops::MomentsOp<T, Op::std>::finish(a.moments, args));
}

//! Calls fn with the policy that computes `ops` of elements T: StatsMomentsOp where they name
//! mean, var or std (floats: the capabilities refuse the rest), else StatsOp.
template <class T, class Fn>
void with_stats_policy(OpSet ops, Fn&& fn) {
  if constexpr (is_float_v<T>)
    if (caps::names_moments(ops)) return fn(StatsMomentsOp<T>{});
  if (caps::names_moments(ops)) throw Error(ErrorCode::internal, "mean, var and std among several ops are for floats");
  fn(StatsOp<T>{});
}

//! The element's index in the whole array, of an accumulator over the part from `first` on.
template <class T>
void move_indices(StatsAcc<T>& a, std::size_t first) {
  a.lo.index += first, a.hi.index += first;
}
template <class T>
void move_indices(StatsMomentsAcc<T>& a, std::size_t first) {
  move_indices(a.stats, first);
}

}  // namespace

void enqueue_stats(const void* data, std::size_t count, DType dtype, OpSet ops, Workspace& ws) {
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    with_stats_policy<T>(ops, [&](auto f) {
      if constexpr (is_stats_op<decltype(f)>) enqueue_stats_typed(static_cast<const T*>(data), count, ws);
      else enqueue_stats_moments_typed(static_cast<const T*>(data), count, ws);
    });
  });
}

StatsPartials stats_partials(DType dtype, OpSet ops) {
  StatsPartials p;
  visit_dtype(dtype, [&](auto tag) {
    with_stats_policy<decltype(tag)>(ops, [&](auto f) {
      using F = decltype(f);
      using A = typename F::acc_t;
      static_assert(std::is_trivially_copyable_v<A>, "an accumulator crosses as bytes");
      p.bytes = sizeof(A);
      p.identity = [](void* out) {
        const A a = F{}.identity();
        std::memcpy(out, &a, sizeof a);
      };
      p.fold = [](void* total, const void* part, std::size_t first) {
        A a, b;
        std::memcpy(&a, total, sizeof a);
        std::memcpy(&b, part, sizeof b);
        move_indices(b, first);
        a = F{}(a, b);
        std::memcpy(total, &a, sizeof a);
      };
      p.write = [](const void* total, OpSet asked, double correction, const OpsOut& out) {
        A a;
        std::memcpy(&a, total, sizeof a);
        write_typed(asked, a, correction, out);
      };
    });
  });
  return p;
}

void collect_stats(DType dtype, OpSet ops, double correction, const OpsOut& out, Workspace& ws) {
  ws.fetch_result(Workspace::kResultBytes);
  XREDUCE_CUDA(cudaStreamSynchronize(ws.stream));
  stats_partials(dtype, ops).write(ws.host_result, ops, correction, out);
}

}  // namespace xreduce::cuda
