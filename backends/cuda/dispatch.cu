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
      case Technique::thrust:
        if constexpr (is_32_64_v<T>) return enqueue_thrust(x, count, op, ws);
        else throw Error(ErrorCode::unsupported, "thrust: no kernels for " + std::string(to_string(dtype)) + " elements");
      default: return enqueue_typed(t, x, count, op, block, ws);
    }
  });
}

Result collect(DType dtype, Op op, Workspace& ws) {
  ws.fetch_result(Workspace::kResultBytes);
  XREDUCE_CUDA(cudaStreamSynchronize(ws.stream));
  return results_of(HostAccumulators::copied(dtype, op, ws.host_result, 1), 1);
}

void enqueue_statistic(const void* data, std::size_t count, DType dtype, Op op, Workspace& ws) {
  visit_exact_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    enqueue_statistic_typed(static_cast<const T*>(data), count, op, ws);
  });
}

Result collect_statistic(std::size_t count, DType dtype, Op op, double correction, bool wide, Workspace& ws) {
  return visit_exact_dtype(dtype, [&](auto tag) { return collect_statistic_typed<decltype(tag)>(count, op, correction, wide, ws); });
}

StatisticPartials statistic_partials(DType dtype, Op op) {
  return visit_exact_dtype(dtype, [&](auto tag) { return statistic_partials_typed<decltype(tag)>(op); });
}

std::size_t accumulator_bytes(DType dtype, Op op) {
  return visit_dtype(dtype, [&](auto tag) { return visit_op<decltype(tag)>(op, [](auto f) { return sizeof(typename decltype(f)::acc_t); }); });
}

void enqueue_records(const void* data, std::size_t count, std::size_t width, DType dtype, Op op, Workspace& ws) {
  void* out = ws.columns.reserve(width * accumulator_bytes(dtype, op), "column results of records");
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    enqueue_records_typed(static_cast<const T*>(data), count, width, op, out, ws);
  });
}

void enqueue_view(const Request& c, void* out, std::uint64_t* out_index, Workspace& ws, const ViewTuning& tuning) {
  if (!is_core_op(c.op))
    return visit_exact_dtype(c.dtype, [&](auto tag) {
      using T = decltype(tag);
      enqueue_view_statistic_typed(static_cast<const T*>(c.data), c, out, out_index, ws);
    });
  visit_dtype(c.dtype, [&](auto tag) {
    using T = decltype(tag);
    enqueue_view_typed(static_cast<const T*>(c.data), c, out, out_index, ws, tuning);
  });
}

const void* enqueue_column_statistic(const void* data, std::size_t rows, std::size_t width, DType dtype, Op op, Workspace& ws) {
  void* partials = ws.columns.reserve(width * statistic_partials(dtype, op).bytes, "column partials of a statistic");
  visit_exact_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    enqueue_column_statistic_typed(static_cast<const T*>(data), rows, width, op, partials, ws);
  });
  return partials;
}

void enqueue_segment_statistic(const void* data, const SegmentBounds& bounds, DType dtype, Op op, double correction, void* out,
                               std::uint64_t* out_index, Workspace& ws, unsigned long long** bad) {
  visit_exact_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    enqueue_segment_statistic_typed(static_cast<const T*>(data), bounds, op, correction, out, out_index, ws, bad);
  });
}

Result statistic_results(const StatisticPartials& p, const void* partials, std::size_t width, std::size_t n, double correction,
                         bool wide) {
  const auto* bytes = static_cast<const unsigned char*>(partials);
  Result r = p.result(bytes, n, correction, wide);
  if (width == 1) return r;
  r.moments.reset();  // of the first column alone
  auto add_column = [&](const Result& column) {
    r.values.push_back(column.value);
    if (column.index) r.indices.push_back(*column.index);  // nanargmin, nanargmax: the row
  };
  add_column(r);
  for (std::size_t j = 1; j < width; ++j) add_column(p.result(bytes + j * p.bytes, n, correction, wide));
  return r;
}

Result collect_records(DType dtype, Op op, std::size_t width, Workspace& ws) {
  const std::size_t bytes = width * accumulator_bytes(dtype, op);
  void* host = ws.host_columns.reserve(bytes, "column results of records");
  XREDUCE_CUDA(cudaMemcpyAsync(host, ws.columns.get(), bytes, cudaMemcpyDeviceToHost, ws.stream));
  XREDUCE_CUDA(cudaStreamSynchronize(ws.stream));
  return results_of(HostAccumulators::copied(dtype, op, host, width), width);
}

}  // namespace xreduce::cuda
