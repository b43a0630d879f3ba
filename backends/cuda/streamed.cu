// The streamed host path: host input crosses to the GPU in chunks while earlier chunks are
// reduced. With `streams` workspaces in a ring, chunk c's host-side copy into pinned staging
// (pageable input), its DMA and its kernel overlap those of chunks c-1 and c-2. Each chunk's
// partial comes back as an accumulator (not a rounded result) and is folded on the host, so a
// streamed sum is as accurate as one pass over device memory; an exact sum's partials are
// ExactSums, added exactly.

#include <algorithm>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "kernels/common.cuh"
#include "techniques.hpp"

namespace xreduce::cuda {
namespace {

//! memcpy with several threads: one core cannot read pageable memory as fast as the bus takes it.
void parallel_copy(void* dst, const void* src, std::size_t bytes, int threads) {
  constexpr std::size_t kMinPerThread = std::size_t{4} << 20;
  const int n = static_cast<int>(std::max<std::size_t>(1, std::min<std::size_t>(threads, bytes / kMinPerThread)));
  if (n == 1) {
    std::memcpy(dst, src, bytes);
    return;
  }
  const std::size_t part = (bytes / n + 63) / 64 * 64;
  std::vector<std::thread> pool;
  for (int t = 1; t < n; ++t) {
    const std::size_t begin = std::min(bytes, t * part), end = std::min(bytes, begin + part);
    pool.emplace_back([=] { std::memcpy(static_cast<char*>(dst) + begin, static_cast<const char*>(src) + begin, end - begin); });
  }
  std::memcpy(dst, src, std::min(bytes, part));
  for (auto& th : pool) th.join();
}

//! Runs the ring over `n` elements (records of `width` values) of host memory at x, `per_chunk`
//! records a chunk: for each chunk, the staging copy (pageable input), the copy to the device and
//! `launch(workspace, device_chunk, records)`, which enqueues the chunk's work and the copy of its
//! partial back to the host; once that chunk's stream is done, `fold(workspace, first_record)`.
template <class T, class Launch, class Fold>
void stream_chunks(const T* x, std::size_t n, std::size_t width, std::size_t per_chunk, int device, bool pinned,
                   const Streaming& s, Launch&& launch, Fold&& fold) {
  const std::size_t chunks = ceil_div(n, per_chunk);
  const int ring = static_cast<int>(std::min<std::size_t>(std::max(1, s.streams), chunks));
  const std::size_t chunk_bytes = std::min(n, per_chunk) * width * sizeof(T);
  // Pageable input of several chunks goes through pinned staging; one chunk takes the driver's copy.
  const bool stage = !pinned && chunks > 1;

  std::vector<std::unique_ptr<WorkspaceLease>> ws;
  for (int k = 0; k < ring; ++k) {
    ws.push_back(std::make_unique<WorkspaceLease>(device));
    (*ws[k])->staging.reserve(chunk_bytes, "a streamed chunk");
    if (stage) (*ws[k])->pinned.reserve(chunk_bytes, "a streamed chunk's staging");
  }
  constexpr std::size_t kIdle = ~std::size_t{0};
  std::vector<std::size_t> in_flight(ring, kIdle);  // first record of the chunk each slot holds
  auto finish = [&](int k) {
    Workspace& w = **ws[k];
    XREDUCE_CUDA(cudaStreamSynchronize(w.stream));
    fold(w, in_flight[k]);
    in_flight[k] = kIdle;
  };
  for (std::size_t c = 0; c < chunks; ++c) {
    const int k = static_cast<int>(c % ring);
    if (in_flight[k] != kIdle) finish(k);  // its buffers are free again once its chunk is done
    Workspace& w = **ws[k];
    const std::size_t first = c * per_chunk, len = std::min(per_chunk, n - first), bytes = len * width * sizeof(T);
    const void* source = x + first * width;
    if (stage) {
      parallel_copy(w.pinned.get(), source, bytes, s.copy_threads);
      source = w.pinned.get();
    }
    XREDUCE_CUDA(cudaMemcpyAsync(w.staging.get(), source, bytes, cudaMemcpyHostToDevice, w.stream));
    launch(w, w.staging.get(), len);
    in_flight[k] = first;
  }
  for (int k = 0; k < ring; ++k)
    if (in_flight[k] != kIdle) finish(k);
}

//! Records a chunk: single values start on 256-byte boundaries of the input, so the kernels'
//! 16-byte loads stay aligned (records land at the start of their staging).
template <class T>
std::size_t records_per_chunk(std::size_t width, const Streaming& s) {
  return width == 1 ? std::max<std::size_t>(256, s.chunk_bytes / sizeof(T) / 256 * 256)
                    : std::max<std::size_t>(1, s.chunk_bytes / sizeof(T) / width);
}

//! The accumulators (one per column) of n records of host memory, streamed.
template <class F>
HostAccumulators streamed(Technique t, const typename F::In* x, std::size_t n, std::size_t width, F f, int block,
                          int device, bool pinned, const Streaming& s) {
  using T = typename F::In;
  using A = typename F::acc_t;
  HostAccumulators total = HostAccumulators::filled(dtype_of<T>(), F::op, width, f.identity());  // one per column
  auto launch = [&](Workspace& w, const void* chunk, std::size_t len) {
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
  auto fold = [&](Workspace& w, std::size_t first) {
    const void* partial = width == 1 ? w.host_result : w.host_columns.get();
    for (std::size_t j = 0; j < width; ++j) {
      A a;
      std::memcpy(&a, static_cast<const unsigned char*>(partial) + j * sizeof(A), sizeof a);
      if constexpr (is_arg_op<F>) a.index += first;
      total.set(j, f(total.get<A>(j), a));
    }
  };
  stream_chunks(x, n, width, records_per_chunk<T>(width, s), device, pinned, s, launch, fold);
  return total;
}

template <class T>
ExactSum streamed_exact(Technique t, const T* x, std::size_t n, int block, int device, bool pinned, const Streaming& s) {
  ExactSum total;
  auto launch = [&](Workspace& w, const void* chunk, std::size_t len) {
    enqueue_exact(t, chunk, len, dtype_of<T>(), block, w, w.host_columns.reserve(sizeof(ExactSum), "an exact partial"));
  };
  auto fold = [&](Workspace& w, std::size_t) {
    ExactSum part;
    std::memcpy(&part, w.host_columns.get(), sizeof part);
    total += part;  // exact in any order
  };
  const std::size_t per_chunk = std::min(records_per_chunk<T>(1, s), exact_launch_elements() / 256 * 256);
  stream_chunks(x, n, 1, per_chunk, device, pinned, s, launch, fold);
  total.words[ExactSum::kCount] = static_cast<std::int64_t>(n);
  return total;
}

template <class T>
void streamed_stats(const T* x, std::size_t n, OpSet ops, const OpsOut& out, int device, bool pinned, const Streaming& s) {
  using A = StatsAcc<T>;
  const StatsOp<T> f;
  A total = f.identity();
  auto launch = [&](Workspace& w, const void* chunk, std::size_t len) {
    enqueue_stats(chunk, len, dtype_of<T>(), w);
    w.fetch_result(sizeof(A));
  };
  auto fold = [&](Workspace& w, std::size_t first) {
    A a;
    std::memcpy(&a, w.host_result, sizeof a);
    a.lo.index += first, a.hi.index += first;
    total = f(total, a);
  };
  stream_chunks(x, n, 1, records_per_chunk<T>(1, s), device, pinned, s, launch, fold);
  write_stats(dtype_of<T>(), ops, &total, out);
}

}  // namespace

void reduce_host_stats(const void* data, std::size_t count, DType dtype, OpSet ops, const OpsOut& out, int device,
                       bool pinned, const Streaming& streaming) {
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    streamed_stats(static_cast<const T*>(data), count, ops, out, device, pinned, streaming);
  });
}

ExactSum exact_sum_of_host(Technique t, const void* data, std::size_t n, DType dtype, int block, int device, bool pinned,
                           const Streaming& streaming) {
  return visit_exact_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    return streamed_exact(t, static_cast<const T*>(data), n, block, device, pinned, streaming);
  });
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
