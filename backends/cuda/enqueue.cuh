#pragma once
// enqueue_typed<T>: from (technique, op) to the kernel template, for one element type. Included by
// the per-type translation units enqueue_<dtype>.cu, which instantiate it.

#include "kernels/cascaded.cuh"
#include "kernels/first_add.cuh"
#include "kernels/global_halving.cuh"
#include "kernels/interleaved.cuh"
#include "kernels/interleaved_strided.cuh"
#include "kernels/records.cuh"
#include "kernels/sequential.cuh"
#include "kernels/shuffle.cuh"
#include "kernels/single_pass.cuh"
#include "kernels/unroll_full.cuh"
#include "kernels/unroll_warp.cuh"
#include "kernels/views.cuh"
#include "segments.cuh"
#include "techniques.hpp"
#include "xreduce/error.hpp"

namespace xreduce::cuda {

template <class F>
void run_technique(Technique t, const typename F::In* x, std::size_t n, F f, int block, Workspace& ws) {
  switch (t) {
    case Technique::single_pass: return SinglePass::run(x, n, f, block, ws);
    case Technique::shuffle: return Shuffle::run(x, n, f, block, ws);
    default: break;
  }
  // The seed kernels do sum, prod, min and max of the 32- and 64-bit types.
  if constexpr (!is_arg_op<F> && is_32_64_v<typename F::In>) {
    switch (t) {
      case Technique::global_halving: return GlobalHalving::run(x, n, f, block, ws);
      case Technique::interleaved: return multi_pass<Interleaved>(x, n, f, block, ws);
      case Technique::interleaved_strided: return multi_pass<InterleavedStrided>(x, n, f, block, ws);
      case Technique::sequential: return multi_pass<Sequential>(x, n, f, block, ws);
      case Technique::first_add: return multi_pass<FirstAdd>(x, n, f, block, ws);
      case Technique::unroll_warp: return multi_pass<UnrollWarp>(x, n, f, block, ws);
      case Technique::unroll_full: return multi_pass<UnrollFull>(x, n, f, block, ws);
      case Technique::cascaded: return multi_pass<Cascaded>(x, n, f, block, ws);
      default: break;
    }
  }
  throw Error(ErrorCode::internal, "enqueue: technique cannot do this op (the capabilities should have refused it)");
}

template <class T>
void enqueue_typed(Technique t, const T* x, std::size_t n, Op op, int block, Workspace& ws) {
  visit_op<T>(op, [&](auto f) { run_technique(t, x, n, f, block, ws); });
}

template <class T>
void enqueue_records_typed(const T* x, std::size_t count, std::size_t width, Op op, void* out, Workspace& ws) {
  visit_op<T>(op, [&](auto f) {
    using F = decltype(f);
    if constexpr (is_arg_op<F>) throw Error(ErrorCode::internal, "records: an op with an index");
    else Records::run(x, count, width, f, static_cast<typename F::acc_t*>(out), ws);
  });
}

template <class T>
void enqueue_view_typed(const T* x, const Request& c, void* out, std::uint64_t* out_index, Workspace& ws, const ViewTuning& tuning) {
  visit_op<T>(c.op, [&](auto f) {
    using F = decltype(f);
    enqueue_view_with(x, c, f, FinishedResults<F>{static_cast<typename F::result_t*>(out), out_index}, ws, tuning);
  });
}

template <class T>
void enqueue_stats_typed(const T* x, std::size_t n, Workspace& ws) {
  Shuffle::run(x, n, StatsOp<T>{}, VectorPolicy::block, ws);
}

}  // namespace xreduce::cuda

#define XREDUCE_INSTANTIATE_ENQUEUE(T)                                                               \
  template void xreduce::cuda::enqueue_typed<T>(Technique, const T*, std::size_t, Op, int, Workspace&); \
  template void xreduce::cuda::enqueue_records_typed<T>(const T*, std::size_t, std::size_t, Op, void*, Workspace&); \
  template void xreduce::cuda::enqueue_stats_typed<T>(const T*, std::size_t, Workspace&);                            \
  template void xreduce::cuda::enqueue_view_typed<T>(const T*, const Request&, void*, std::uint64_t*, Workspace&, const ViewTuning&); \
  template void xreduce::cuda::enqueue_segments_typed<T>(Technique, const T*, const SegmentBounds&, Op, void*,      \
                                                         std::uint64_t*, Workspace&, unsigned long long**);   \
  template void xreduce::cuda::enqueue_segment_stats_typed<T>(const T*, const SegmentBounds&, OpSet, const OpsOut&, \
                                                              Workspace&, unsigned long long**);
