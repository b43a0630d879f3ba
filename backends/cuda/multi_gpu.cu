// cuda.multi_gpu: one host array over every visible GPU at once. The array is cut into one
// contiguous part per GPU (on 4 KiB boundaries, between records), each part is streamed to its
// GPU as cuda.shuffle streams host data to one (streamed.cu), and the parts' accumulators (a
// statistic's partials, StatisticPartials) are folded in order on the host. The GPUs are alike,
// and each has its own link to the host, so equal parts finish together. A host thread drives
// each GPU beyond the first (the streamed path blocks on its chunks), as `hybrid` drives its GPU
// part beside its CPU part; pageable parts are staged by each GPU's own copy threads (the
// setting copy_threads is per GPU).

#include <algorithm>
#include <cstring>
#include <functional>
#include <vector>

#include "device_ops.cuh"
#include "techniques.hpp"

namespace xreduce::cuda {
namespace {

//! The parts' accumulators folded in order: each column's combined by the op's policy, indices
//! moved past the parts before them; rounded once, at the end, as one GPU's stream of chunks is.
Result fold_parts(const std::vector<HostAccumulators>& parts, const std::vector<std::size_t>& first_record,
                  std::size_t width, DType dtype, Op op) {
  return visit_dtype(dtype, [&](auto tag) {
    return visit_op<decltype(tag)>(op, [&](auto f) {
      using A = typename decltype(f)::acc_t;
      HostAccumulators total = HostAccumulators::filled(dtype, op, width, f.identity());
      for (std::size_t p = 0; p < parts.size(); ++p)
        for (std::size_t j = 0; j < width; ++j) {
          A a = parts[p].get<A>(j);
          if constexpr (is_arg_op<decltype(f)>) a.index += first_record[p];
          total.set(j, f(total.get<A>(j), a));
        }
      return results_of(total, width);
    });
  });
}

//! Cuts `count` records of `record_bytes` at `data` into one contiguous part per GPU, starting on
//! 4 KiB boundaries of the input (records whole, so that every part keeps its alignment), and
//! runs body(d, part, first_record, records) for each part that holds any, GPU d's on a host
//! thread of its own. Returns where each part starts (first[devices] = count).
std::vector<std::size_t> on_each_gpu(const void* data, std::size_t count, std::size_t record_bytes, int devices,
                                     const std::function<void(int, const void*, std::size_t, std::size_t)>& body) {
  std::size_t step = 1;
  while (step * record_bytes % 4096 != 0 && step < 4096) ++step;
  std::vector<std::size_t> first(devices + 1, count);
  for (int d = 0; d < devices; ++d) first[d] = std::min(count, count / devices / step * step * d);
  run_in_parallel(devices, [&](int d) {
    if (const std::size_t n = first[d + 1] - first[d]; n > 0) body(d, static_cast<const unsigned char*>(data) + first[d] * record_bytes, first[d], n);
  });
  return first;
}

}  // namespace

Result reduce_host_statistic_on_gpus(const void* data, std::size_t count, std::size_t width, DType dtype, Op op,
                                     double correction, bool wide, int devices, bool pinned, const Streaming& streaming) {
  const StatisticPartials partials = statistic_partials(dtype, op);
  std::vector<std::vector<unsigned char>> parts(devices);
  const std::vector<std::size_t> first =
      on_each_gpu(data, count, width * size_of(dtype), devices, [&](int d, const void* part, std::size_t, std::size_t n) {
        parts[d] = reduce_host_statistic(part, n, width, dtype, op, d, pinned, streaming);
      });
  std::vector<unsigned char> total = partials.identities(width);
  for (int d = 0; d < devices; ++d)
    if (!parts[d].empty()) partials.fold_columns(total.data(), parts[d].data(), width, first[d]);
  return statistic_results(partials, total.data(), width, count, correction, wide);
}

void reduce_host_rows_on_gpus(Technique t, const Request& q, int devices, bool pinned, bool out_on_device,
                              const Streaming& streaming) {
  const std::size_t row_bytes = static_cast<std::size_t>(q.view.shape[1]) * size_of(q.dtype);
  const std::size_t value_bytes = size_of(result_dtype(q.dtype, q.op));
  on_each_gpu(q.data, static_cast<std::size_t>(q.view.shape[0]), row_bytes, devices, [&](int d, const void* part, std::size_t first, std::size_t n) {
    Request rows = q;  // this GPU's rows, and where their results go
    rows.data = part;
    rows.view.shape[0] = static_cast<std::int64_t>(n);
    rows.count = n * static_cast<std::size_t>(q.view.shape[1]);
    rows.out = static_cast<unsigned char*>(q.out) + first * value_bytes;
    if (q.out_index) rows.out_index = q.out_index + first;
    reduce_host_rows(t, rows, d, pinned, out_on_device, streaming);
  });
}

std::vector<ExactSum> exact_partials_on_gpus(Technique t, const void* data, std::size_t count, DType dtype, bool squares,
                                             int block, int devices, bool pinned, const Streaming& streaming) {
  std::vector<std::vector<ExactSum>> parts(devices);
  on_each_gpu(data, count, size_of(dtype), devices, [&](int d, const void* part, std::size_t, std::size_t n) {
    if (squares) parts[d] = exact_moments_of_host(part, n, dtype, d, pinned, streaming);
    else parts[d] = {exact_sum_of_host(t, part, n, dtype, block, d, pinned, streaming)};
  });
  // Each part's words hold its counts; added, they are the whole array's (exact in any order).
  std::vector<ExactSum> total(squares ? 2 : 1);
  for (const auto& part : parts)
    for (std::size_t k = 0; k < part.size(); ++k) total[k] += part[k];
  return total;
}

Result reduce_host_on_gpus(Technique t, const void* data, std::size_t count, std::size_t width, DType dtype, Op op,
                           int block, int devices, bool pinned, const Streaming& streaming) {
  std::vector<HostAccumulators> parts(devices);
  const std::vector<std::size_t> first =
      on_each_gpu(data, count, width * size_of(dtype), devices, [&](int d, const void* part, std::size_t, std::size_t n) {
        parts[d] = reduce_host_accumulators(t, part, n, width, dtype, op, block, d, pinned, streaming);
      });
  // Empty parts (fewer records than GPUs) hold no result: fold the others.
  std::vector<HostAccumulators> held;
  std::vector<std::size_t> at;
  for (int d = 0; d < devices; ++d)
    if (first[d + 1] > first[d]) held.push_back(parts[d]), at.push_back(first[d]);
  return fold_parts(held, at, width, dtype, op);
}

}  // namespace xreduce::cuda
