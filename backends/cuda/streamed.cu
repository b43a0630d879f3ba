// The streamed host path: host input crosses to the GPU in chunks while earlier chunks are
// reduced. Pinned input is copied straight from where it is, `streams` chunks in flight, each on
// its own workspace. Pageable input is first copied into pinned staging by `copy_threads`
// workers, each a host thread with its own ring of `streams` workspaces (stream, small pinned
// staging, device buffer): worker t copies chunks t, t + workers, ... and sends each on while it
// copies the next. Small chunks keep every worker's staging in the host's last-level cache, where
// the copy engine can read what the copy wrote instead of host memory, which a copy of large
// chunks sends each byte through three times (read, written to staging, read by the DMA): on
// the 2-GPU H200 machine, bench/results/nvidia-h200-x2/staging.md and stage-sweep.md.
//
// Each chunk's partial comes back as an accumulator (not a rounded result) and is folded on the
// host, each worker's in its order and then the workers' in theirs, so a streamed sum is as
// accurate as one pass over device memory and the same bits from call to call (for the same
// settings); an exact sum's partials are ExactSums, added exactly, and a statistic's are its
// kernel's accumulators (StatisticPartials), folded as the kernel folds them. Rows have no partial
// to fold: each chunk's results are written where they go (streamed_rows).

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "kernels/common.cuh"
#include "kernels/segmented.cuh"
#include "techniques.hpp"

namespace xreduce::cuda {
namespace {

//! Records a chunk of `chunk_bytes`: single values start on 256-byte boundaries of the input, so
//! the kernels' 16-byte loads stay aligned (records land at the start of their staging).
template <class T>
std::size_t records_per_chunk(std::size_t width, std::size_t chunk_bytes) {
  return width == 1 ? std::max<std::size_t>(256, chunk_bytes / sizeof(T) / 256 * 256)
                    : std::max<std::size_t>(1, chunk_bytes / sizeof(T) / width);
}

//! How one call's host input is cut and moved: chunks of `per_chunk` records, taken by `workers`
//! host threads in turn, each with `ring` of its chunks in flight.
struct ChunkPlan {
  std::size_t per_chunk = 1, chunks = 0;
  int workers = 1, ring = 1;
  bool stage = false;  //!< pageable input: every chunk is copied into pinned staging first
};

//! Pinned staging in flight, at most, over a call's workers: records wider than a staging chunk
//! make chunks of one record, and fewer workers then.
constexpr std::size_t kStagingBudget = std::size_t{256} << 20;

//! The plan for n records of `width` T's, chunks of at most `max_records`. Pageable input of
//! more than two staging chunks is staged by the workers; less takes the driver's own copy.
template <class T>
ChunkPlan plan_chunks(std::size_t n, std::size_t width, std::size_t max_records, bool pinned, const Streaming& s) {
  ChunkPlan p;
  const std::size_t record_bytes = width * sizeof(T);
  p.stage = !pinned && n * record_bytes > 2 * s.stage_bytes;
  p.per_chunk = std::min(max_records, records_per_chunk<T>(width, p.stage ? s.stage_bytes : s.chunk_bytes));
  p.chunks = ceil_div(n, p.per_chunk);
  p.ring = static_cast<int>(std::min<std::size_t>(std::max(1, s.streams), std::max<std::size_t>(1, p.chunks)));
  if (p.stage) {
    const std::size_t in_flight = std::size_t(p.ring) * std::min(n, p.per_chunk) * record_bytes;
    const std::size_t affordable = std::max<std::size_t>(1, kStagingBudget / std::max<std::size_t>(1, in_flight));
    p.workers = static_cast<int>(std::clamp<std::size_t>(p.chunks, 1, std::min<std::size_t>(s.copy_threads, affordable)));
  }
  return p;
}

//! Streams n records of `width` values at x as `p` plans, on `device`. For each chunk:
//! the staging copy (p.stage), the copy to the device and `launch(workspace, device_chunk,
//! first_record, records)`, which enqueues the chunk's work and the copy of its partial back to
//! the host; once that chunk's stream is done, `fold(workspace, first_record, worker)`, on that
//! worker's thread.
template <class T, class Launch, class Fold>
void stream_chunks(const T* x, std::size_t n, std::size_t width, const ChunkPlan& p, int device, Launch&& launch,
                   Fold&& fold) {
  const std::size_t chunk_bytes = std::min(n, p.per_chunk) * width * sizeof(T);
  std::atomic<bool> failed{false};
  run_in_parallel(p.workers, [&](int worker) {
    std::vector<std::unique_ptr<WorkspaceLease>> ws;
    for (int k = 0; k < p.ring; ++k) {
      ws.push_back(std::make_unique<WorkspaceLease>(device));
      (*ws[k])->staging.reserve(chunk_bytes, "a streamed chunk");
      if (p.stage) (*ws[k])->pinned.reserve(chunk_bytes, "a streamed chunk's staging");
    }
    constexpr std::size_t kIdle = ~std::size_t{0};
    std::vector<std::size_t> in_flight(p.ring, kIdle);  // first record of the chunk each slot holds
    auto finish = [&](int k) {
      Workspace& w = **ws[k];
      XREDUCE_CUDA(cudaStreamSynchronize(w.stream));
      fold(w, in_flight[k], worker);
      in_flight[k] = kIdle;
    };
    try {
      int k = 0;
      for (std::size_t c = worker; c < p.chunks && !failed.load(std::memory_order_relaxed); c += p.workers, k = (k + 1) % p.ring) {
        if (in_flight[k] != kIdle) finish(k);  // its buffers are free again once its chunk is done
        Workspace& w = **ws[k];
        const std::size_t first = c * p.per_chunk, len = std::min(p.per_chunk, n - first), bytes = len * width * sizeof(T);
        const void* source = x + first * width;
        if (p.stage) {
          std::memcpy(w.pinned.get(), source, bytes);
          source = w.pinned.get();
        }
        XREDUCE_CUDA(cudaMemcpyAsync(w.staging.get(), source, bytes, cudaMemcpyHostToDevice, w.stream));
        launch(w, w.staging.get(), first, len);
        in_flight[k] = first;
      }
      for (int j = 0; j < p.ring; ++j)
        if (in_flight[j] != kIdle) finish(j);
    } catch (...) {
      failed = true;  // the other workers stop at their next chunk
      throw;
    }
  });
}

//! The accumulators (one per column) of n records of host memory, streamed.
template <class F>
HostAccumulators streamed(Technique t, const typename F::In* x, std::size_t n, std::size_t width, F f, int block,
                          int device, bool pinned, const Streaming& s) {
  using T = typename F::In;
  using A = typename F::acc_t;
  const ChunkPlan plan = plan_chunks<T>(n, width, ~std::size_t{0}, pinned, s);
  // One per worker, each one per column: folded in order at the end.
  std::vector<HostAccumulators> totals(plan.workers, HostAccumulators::filled(dtype_of<T>(), F::op, width, f.identity()));
  auto launch = [&](Workspace& w, const void* chunk, std::size_t, std::size_t len) {
    if (width == 1) {
      enqueue(t, chunk, len, dtype_of<T>(), F::op, block, w);
      w.fetch_result(sizeof(A));
    } else {
      enqueue_records(chunk, len, width, dtype_of<T>(), F::op, w);
      void* host = w.host_columns.reserve(width * sizeof(A), "column results of records");
      XREDUCE_CUDA(cudaMemcpyAsync(host, w.columns.get(), width * sizeof(A), cudaMemcpyDeviceToHost, w.stream));
    }
  };
  // Every op's combination is order-free (argmin/argmax break ties by index, not by arrival).
  auto fold_into = [&](HostAccumulators& total, const void* partial, std::size_t first) {
    for (std::size_t j = 0; j < width; ++j) {
      A a;
      std::memcpy(&a, static_cast<const unsigned char*>(partial) + j * sizeof(A), sizeof a);
      if constexpr (is_arg_op<F>) a.index += first;
      total.set(j, f(total.get<A>(j), a));
    }
  };
  auto fold = [&](Workspace& w, std::size_t first, int worker) {
    fold_into(totals[worker], width == 1 ? w.host_result : w.host_columns.get(), first);
  };
  stream_chunks(x, n, width, plan, device, launch, fold);
  for (int k = 1; k < plan.workers; ++k) fold_into(totals[0], totals[k].bytes.data(), 0);
  return std::move(totals[0]);
}

//! The exact partials of n elements of host memory, `parts` of them (an exact sum's, or those of
//! x and of x squared), their counts left to the caller: `enqueue(chunk, len, w, host)` enqueues a
//! chunk's and their copy to pinned `host`; the chunks' are added exactly, in any order.
template <class T, class Enqueue>
std::vector<ExactSum> streamed_exact(const T* x, std::size_t n, std::size_t parts, const Enqueue& enqueue, int device,
                                     bool pinned, const Streaming& s) {
  const ChunkPlan plan = plan_chunks<T>(n, 1, exact_launch_elements() / 256 * 256, pinned, s);
  std::vector<std::vector<ExactSum>> totals(plan.workers, std::vector<ExactSum>(parts));
  auto launch = [&](Workspace& w, const void* chunk, std::size_t, std::size_t len) {
    enqueue(chunk, len, w, w.host_columns.reserve(parts * sizeof(ExactSum), "exact partials"));
  };
  auto fold = [&](Workspace& w, std::size_t, int worker) {
    for (std::size_t k = 0; k < parts; ++k) {
      ExactSum part;
      std::memcpy(&part, static_cast<const unsigned char*>(w.host_columns.get()) + k * sizeof(ExactSum), sizeof part);
      totals[worker][k] += part;  // exact in any order
    }
  };
  stream_chunks(x, n, 1, plan, device, launch, fold);
  for (int w = 1; w < plan.workers; ++w)
    for (std::size_t k = 0; k < parts; ++k) totals[0][k] += totals[w][k];
  return std::move(totals[0]);
}

//! The partials of statistic `op` of n records of `width` elements of host memory (one partial a
//! column): each chunk's by the statistics' kernels (a flat array's) or the columns kernel
//! (records'), folded column by column as StatisticPartials folds them.
template <class T>
std::vector<unsigned char> streamed_statistic(const T* x, std::size_t n, std::size_t width, Op op, int device, bool pinned,
                                              const Streaming& s) {
  const StatisticPartials partials = statistic_partials(dtype_of<T>(), op);
  const std::size_t bytes = width * partials.bytes;
  const ChunkPlan plan = plan_chunks<T>(n, width, ~std::size_t{0}, pinned, s);
  std::vector<std::vector<unsigned char>> totals(plan.workers, partials.identities(width));
  auto launch = [&](Workspace& w, const void* chunk, std::size_t, std::size_t len) {
    if (width == 1) {
      enqueue_statistic(chunk, len, dtype_of<T>(), op, w);
      w.fetch_result(partials.bytes);
    } else {
      const void* columns = enqueue_column_statistic(chunk, len, width, dtype_of<T>(), op, w);
      void* host = w.host_columns.reserve(bytes, "column partials of a statistic");
      XREDUCE_CUDA(cudaMemcpyAsync(host, columns, bytes, cudaMemcpyDeviceToHost, w.stream));
    }
  };
  // A column's index is its row: a chunk's moves past the records before it.
  auto fold = [&](Workspace& w, std::size_t first, int worker) {
    partials.fold_columns(totals[worker].data(), width == 1 ? w.host_result : w.host_columns.get(), width, first);
  };
  stream_chunks(x, n, width, plan, device, launch, fold);
  for (int k = 1; k < plan.workers; ++k) partials.fold_columns(totals[0].data(), totals[k].data(), width, 0);
  return std::move(totals[0]);
}

//! Rows (layout inner) of host memory, one op each (a core op or a statistic), streamed in
//! chunks of whole rows: each chunk's results go to the request's `out` (and `out_index`) at its
//! first row, through the device (out_on_device: copied there from the chunk's stream, any GPU's
//! memory) or through pinned memory (copied on by the worker once its chunk is done). A row's
//! argmin/argmax index is within the row, so a chunk's need no moving.
template <class T>
void streamed_rows(Technique t, const Request& q, int device, bool pinned, bool out_on_device, const Streaming& s) {
  const auto rows = static_cast<std::size_t>(q.view.shape[0]), length = static_cast<std::size_t>(q.view.shape[1]);
  const std::size_t value_bytes = size_of(result_dtype(q.dtype, q.op));
  const bool indices = returns_index(q.op) && q.out_index;
  const ChunkPlan plan = plan_chunks<T>(rows, length, ~std::size_t{0}, pinned, s);
  const std::size_t per_chunk = std::min(rows, plan.per_chunk);
  const std::size_t index_at = (per_chunk * value_bytes + 15) / 16 * 16;  // the indices after the values
  const std::size_t result_bytes = index_at + (indices ? per_chunk * sizeof(std::uint64_t) : 0);
  auto* out = static_cast<unsigned char*>(q.out);
  auto launch = [&](Workspace& w, const void* chunk, std::size_t first, std::size_t len) {
    auto* results = static_cast<unsigned char*>(w.columns.reserve(result_bytes, "results of streamed rows"));
    auto* index = indices ? reinterpret_cast<std::uint64_t*>(results + index_at) : nullptr;
    const SegmentBounds b{nullptr, length, len, len * length};
    unsigned long long* bad = nullptr;  // rows have no offsets to check
    if (is_core_op(q.op)) enqueue_segments_typed<T>(t, static_cast<const T*>(chunk), b, q.op, results, index, w, &bad);
    else enqueue_segment_statistic(chunk, b, q.dtype, q.op, q.correction, results, index, w, &bad);
    if (out_on_device) {
      XREDUCE_CUDA(cudaMemcpyAsync(out + first * value_bytes, results, len * value_bytes, cudaMemcpyDefault, w.stream));
      if (index) XREDUCE_CUDA(cudaMemcpyAsync(q.out_index + first, index, len * sizeof(std::uint64_t), cudaMemcpyDefault, w.stream));
    } else {
      // Pageable `out` would make an asynchronous copy wait for the chunk: through pinned memory.
      XREDUCE_CUDA(cudaMemcpyAsync(w.host_columns.reserve(result_bytes, "host copy of streamed rows' results"), results,
                                   result_bytes, cudaMemcpyDeviceToHost, w.stream));
    }
  };
  auto fold = [&](Workspace& w, std::size_t first, int) {
    if (out_on_device) return;
    const std::size_t len = std::min(per_chunk, rows - first);
    const auto* host = static_cast<const unsigned char*>(w.host_columns.get());
    std::memcpy(out + first * value_bytes, host, len * value_bytes);
    if (indices) std::memcpy(q.out_index + first, host + index_at, len * sizeof(std::uint64_t));
  };
  stream_chunks(static_cast<const T*>(q.data), rows, length, plan, device, launch, fold);
}

template <class T>
void streamed_stats(const T* x, std::size_t n, OpSet ops, double correction, const OpsOut& out, int device, bool pinned,
                    const Streaming& s) {
  const StatsPartials p = stats_partials(dtype_of<T>(), ops);
  const ChunkPlan plan = plan_chunks<T>(n, 1, ~std::size_t{0}, pinned, s);
  std::vector<unsigned char> totals(plan.workers * p.bytes);
  for (int k = 0; k < plan.workers; ++k) p.identity(totals.data() + k * p.bytes);
  auto launch = [&](Workspace& w, const void* chunk, std::size_t, std::size_t len) {
    enqueue_stats(chunk, len, dtype_of<T>(), ops, w);
    w.fetch_result(p.bytes);
  };
  auto fold = [&](Workspace& w, std::size_t first, int worker) { p.fold(totals.data() + worker * p.bytes, w.host_result, first); };
  stream_chunks(x, n, 1, plan, device, launch, fold);
  for (int k = 1; k < plan.workers; ++k) p.fold(totals.data(), totals.data() + k * p.bytes, 0);
  p.write(totals.data(), ops, correction, out);
}

}  // namespace

void run_in_parallel(int count, const std::function<void(int)>& body) {
  std::vector<std::thread> others;
  std::vector<std::exception_ptr> failure(count);
  auto guarded = [&](int i) {
    try {
      body(i);
    } catch (...) {
      failure[i] = std::current_exception();
    }
  };
  for (int i = 1; i < count; ++i) others.emplace_back(guarded, i);
  guarded(0);
  for (auto& t : others) t.join();  // every part is waited for, failed or not, before anything is freed
  for (const auto& f : failure)
    if (f) std::rethrow_exception(f);
}

void reduce_host_stats(const void* data, std::size_t count, DType dtype, OpSet ops, double correction, const OpsOut& out,
                       int device, bool pinned, const Streaming& streaming) {
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    streamed_stats(static_cast<const T*>(data), count, ops, correction, out, device, pinned, streaming);
  });
}

void reduce_host_rows(Technique t, const Request& q, int device, bool pinned, bool out_on_device, const Streaming& streaming) {
  const std::size_t row_bytes = static_cast<std::size_t>(q.view.shape[1]) * size_of(q.dtype);
  if (row_bytes == 0 || row_bytes > (pinned ? streaming.chunk_bytes : streaming.stage_bytes)) {
    reduce_segments(t, q, false, out_on_device, device);  // no rows to cut into chunks
    return;
  }
  visit_dtype(q.dtype, [&](auto tag) { streamed_rows<decltype(tag)>(t, q, device, pinned, out_on_device, streaming); });
}

std::vector<unsigned char> reduce_host_statistic(const void* data, std::size_t count, std::size_t width, DType dtype, Op op,
                                                 int device, bool pinned, const Streaming& streaming) {
  return visit_exact_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    return streamed_statistic(static_cast<const T*>(data), count, width, op, device, pinned, streaming);
  });
}

ExactSum exact_sum_of_host(Technique t, const void* data, std::size_t n, DType dtype, int block, int device, bool pinned,
                           const Streaming& streaming) {
  auto enqueue = [&](const void* chunk, std::size_t len, Workspace& w, void* host) {
    enqueue_exact(t, chunk, len, dtype, block, w, host);
  };
  ExactSum total = visit_exact_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    return streamed_exact(static_cast<const T*>(data), n, 1, enqueue, device, pinned, streaming).front();
  });
  total.words[ExactSum::kCount] = static_cast<std::int64_t>(n);
  return total;
}

std::vector<ExactSum> exact_moments_of_host(const void* data, std::size_t n, DType dtype, int device, bool pinned,
                                            const Streaming& streaming) {
  auto enqueue = [&](const void* chunk, std::size_t len, Workspace& w, void* host) {
    enqueue_exact_moments(chunk, len, dtype, w, host);
  };
  std::vector<ExactSum> moments = visit_exact_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    return streamed_exact(static_cast<const T*>(data), n, 2, enqueue, device, pinned, streaming);
  });
  finish_exact_moments(moments, n);
  return moments;
}

HostAccumulators reduce_host_accumulators(Technique t, const void* data, std::size_t count, std::size_t width, DType dtype,
                                          Op op, int block, int device, bool pinned, const Streaming& streaming) {
  return visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    return visit_op<T>(op, [&](auto f) {
      return streamed(t, static_cast<const T*>(data), count, width, f, block, device, pinned, streaming);
    });
  });
}

Result results_of(const HostAccumulators& a, std::size_t width) {
  return visit_dtype(a.dtype, [&](auto tag) {
    return visit_op<decltype(tag)>(a.op, [&](auto f) {
      using F = decltype(f);
      using A = typename F::acc_t;
      Result r = result_of<F>(a.get<A>(0));
      for (std::size_t j = 0; j < width; ++j) r.values.push_back(result_of<F>(a.get<A>(j)).value);
      return r;
    });
  });
}

Result reduce_host(Technique t, const void* data, std::size_t count, std::size_t width, DType dtype, Op op, int block,
                   int device, bool pinned, const Streaming& streaming) {
  return results_of(reduce_host_accumulators(t, data, count, width, dtype, op, block, device, pinned, streaming), width);
}

}  // namespace xreduce::cuda
