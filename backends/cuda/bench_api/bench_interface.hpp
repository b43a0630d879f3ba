#pragma once
// What the benchmarks may use of the CUDA module beyond its plugin entry: one backend's kernels
// enqueued on a stream with no checks and no synchronisation, so that events and CUDA graphs time
// the kernels alone; and the streamed path for host data with explicit parameters. Declared here
// so that the module's internals (techniques.hpp, workspaces) stay its own; the module's kernel
// library (xreduce_cuda_kernels) implements it.

#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "xreduce/request.hpp"

namespace xreduce::cuda::bench {

//! The module's backends: the seeds' progression (global_halving, then Harris's kernels 1 to 7),
//! then cuda.shuffle, cuda.single_pass, cub, thrust.
std::vector<std::string> backend_names();
//! Whether a CUDA graph can hold a call (thrust returns its result to the host: it cannot).
bool graph_capturable(std::string_view backend);

//! One stream of a device, with the scratch a reduction needs, kept between calls.
class Kernels {
 public:
  explicit Kernels(int device = 0);
  ~Kernels();
  Kernels(const Kernels&) = delete;
  Kernels& operator=(const Kernels&) = delete;

  cudaStream_t stream() const;
  //! Enqueues `backend`'s reduction of `count` elements at device pointer `data` (aligned to
  //! the element size) with `block` threads per block (the seed kernels; others ignore it).
  //! Throws Error for an unknown backend or a CUDA failure.
  void enqueue(std::string_view backend, const void* data, std::size_t count, DType dtype, Op op, int block = 256);
  //! The result of the last enqueue (waits for the stream).
  Result collect(DType dtype, Op op);
  //! Records: cuda.shuffle's column-by-column reduction of `count` records of `width` values.
  void enqueue_records(const void* data, std::size_t count, std::size_t width, DType dtype, Op op);
  Result collect_records(DType dtype, Op op, std::size_t width);
  //! Segmented (Request::segments, offsets in device memory; null offsets: `segments.count` equal
  //! rows of `count`): one result per segment into device `out` (and `out_index`), by
  //! cuda.shuffle's tiled kernels or cub; the offsets' check is enqueued but not read (the
  //! benchmarks pass good ones).
  void enqueue_segments(std::string_view backend, const void* data, std::size_t count, DType dtype, Op op,
                        const Segments& segments, void* out, std::uint64_t* out_index = nullptr);
  //! A canonical view (xreduce::canonical) of device data, layout outer, middle or strided, by
  //! cuda.shuffle's views kernels (kernels/views.cuh): one result each into device `out` (an op
  //! without an index). The kernels' run-time tuning (0: the module's): the most threads across
  //! a row, and the blocks the splits aim at, in waves of the GPU.
  void enqueue_view(const Request& canonical, void* out, int max_tile_x = 0, int waves = 0);
  //! The exact sum of each result of a canonical view of f32, f16 or bf16 (kernels/exact_views.cuh).
  void enqueue_exact_view(const Request& canonical, void* out);
  //! Several ops in one pass (Request::ops) of device data by cuda.shuffle's kernel: the six
  //! core ones (StatsOp), or with mean, var and std where `ops` name one of them (floats);
  //! collect_stats waits and writes the asked ones to `out`'s first slots (host memory), var
  //! and std divided by n - correction.
  void enqueue_stats(const void* data, std::size_t count, DType dtype, OpSet ops = {});
  //! One statistic (mean, var, std, the norms, logsumexp, ...: what cuda.shuffle declares) of
  //! device data; collect_statistic waits and returns it, var and std divided by n - correction.
  void enqueue_statistic(const void* data, std::size_t count, DType dtype, Op op);
  Result collect_statistic(std::size_t count, DType dtype, Op op, double correction = 0);
  void collect_stats(DType dtype, OpSet ops, const OpsOut& out, double correction = 0);
  //! Several ops of each segment (offsets in device memory, or equal rows as above) into device
  //! arrays `out`.
  void enqueue_segment_stats(const void* data, std::size_t count, DType dtype, OpSet ops, const Segments& segments,
                             const OpsOut& out);
  //! Exact sums (Accuracy::exact) of at most 2^30 f32, f64, f16 or bf16 elements, by `backend`'s exact form
  //! (cuda.single_pass, cuda.shuffle); collect_exact waits and returns the partial.
  void enqueue_exact(std::string_view backend, const void* data, std::size_t count, DType dtype, int block = 256);
  ExactSum collect_exact(std::size_t count);
  //! Exact sums of the columns of `count` records of `width` values (at most 2^30 elements), by
  //! cuda.shuffle's column kernel; collect_exact_columns waits and returns a partial a column.
  void enqueue_exact_columns(const void* data, std::size_t count, std::size_t width, DType dtype);
  //! Exact sums of each segment (as enqueue_segments: offsets in device memory, or equal rows) of
  //! f32, f16 or bf16, each rounded once into device `out`, of the element type.
  void enqueue_exact_segments(const void* data, std::size_t count, DType dtype, const Segments& segments, void* out);
  std::vector<ExactSum> collect_exact_columns(std::size_t count, std::size_t width);
  //! The exact partials of x and of x squared (an exact var or std: kernels/exact_moments.cuh) of
  //! at most 2^30 f32, f64, f16 or bf16 elements; collect_exact_moments waits and returns them.
  void enqueue_exact_moments(const void* data, std::size_t count, DType dtype);
  std::vector<ExactSum> collect_exact_moments(std::size_t count);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

//! How host data is streamed to the GPU (the CUDA module's settings chunk_bytes, streams,
//! copy_threads, stage_bytes).
struct Streaming {
  std::size_t chunk_bytes;
  int streams;
  int copy_threads;
  std::size_t stage_bytes;
};
//! The module's defaults.
Streaming default_streaming();
//! `backend`'s reduction of host data at `data` on `device`, streamed as `streaming` says.
Result reduce_host(std::string_view backend, const void* data, std::size_t count, std::size_t width, DType dtype, Op op,
                   int device, bool pinned, const Streaming& streaming, int block = 256);

}  // namespace xreduce::cuda::bench
