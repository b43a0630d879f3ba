// The benchmarks' interface (bench_interface.hpp) over the module's own techniques and workspaces.

#include "bench_api/bench_interface.hpp"

#include "kernels/segmented.cuh"
#include "techniques.hpp"
#include "xreduce/error.hpp"

namespace xreduce::cuda::bench {
namespace {

Technique technique_of(std::string_view backend) {
  for (const TechniqueInfo& info : techniques)
    if (info.name == backend && !info.multi_gpu) return info.technique;
  throw Error(ErrorCode::unknown_backend, "the CUDA module has no backend '" + std::string(backend) + "'");
}

}  // namespace

std::vector<std::string> backend_names() {
  std::vector<std::string> names;
  for (Technique t : {Technique::global_halving, Technique::interleaved, Technique::interleaved_strided,
                      Technique::sequential, Technique::first_add, Technique::unroll_warp, Technique::unroll_full,
                      Technique::cascaded, Technique::shuffle, Technique::single_pass, Technique::cub, Technique::thrust})
    for (const TechniqueInfo& info : techniques)
      if (info.technique == t && !info.multi_gpu) names.emplace_back(info.name);
  return names;
}

bool graph_capturable(std::string_view backend) { return technique_of(backend) != Technique::thrust; }

struct Kernels::Impl {
  explicit Impl(int device) : lease(device) {}
  WorkspaceLease lease;
  const void* exact_partial = nullptr;  // on the device: the last enqueue_exact's (or _columns', _moments') words
};

Kernels::Kernels(int device) : impl_(std::make_unique<Impl>(device)) {}
Kernels::~Kernels() = default;
cudaStream_t Kernels::stream() const { return impl_->lease->stream; }

void Kernels::enqueue(std::string_view backend, const void* data, std::size_t count, DType dtype, Op op, int block) {
  cuda::enqueue(technique_of(backend), data, count, dtype, op, block, *impl_->lease);
}
Result Kernels::collect(DType dtype, Op op) { return cuda::collect(dtype, op, *impl_->lease); }
void Kernels::enqueue_records(const void* data, std::size_t count, std::size_t width, DType dtype, Op op) {
  cuda::enqueue_records(data, count, width, dtype, op, *impl_->lease);
}
Result Kernels::collect_records(DType dtype, Op op, std::size_t width) {
  return cuda::collect_records(dtype, op, width, *impl_->lease);
}

void Kernels::enqueue_view(const Request& canonical, void* out, int max_tile_x, int waves) {
  ViewTuning tuning;
  if (max_tile_x > 0) tuning.max_tile_x = max_tile_x;
  if (waves > 0) tuning.waves = waves;
  cuda::enqueue_view(canonical, out, nullptr, *impl_->lease, tuning);
}

void Kernels::enqueue_exact_view(const Request& canonical, void* out) { cuda::enqueue_exact_view(canonical, out, *impl_->lease); }

void Kernels::enqueue_stats(const void* data, std::size_t count, DType dtype, OpSet ops) {
  cuda::enqueue_stats(data, count, dtype, ops, *impl_->lease);
}
void Kernels::collect_stats(DType dtype, OpSet ops, const OpsOut& out, double correction) {
  cuda::collect_stats(dtype, ops, correction, out, *impl_->lease);
}
void Kernels::enqueue_statistic(const void* data, std::size_t count, DType dtype, Op op) {
  cuda::enqueue_statistic(data, count, dtype, op, *impl_->lease);
}
Result Kernels::collect_statistic(std::size_t count, DType dtype, Op op, double correction) {
  return cuda::collect_statistic(count, dtype, op, correction, false, *impl_->lease);
}

namespace {
SegmentBounds bounds_of(const Segments& segments, std::size_t count) {
  return {segments.offsets, segments.offsets || segments.count == 0 ? 0 : count / segments.count, segments.count, count};
}
}  // namespace

void Kernels::enqueue_segment_stats(const void* data, std::size_t count, DType dtype, OpSet ops, const Segments& segments,
                                    const OpsOut& out) {
  unsigned long long* bad = nullptr;
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    enqueue_segment_stats_typed<T>(static_cast<const T*>(data), bounds_of(segments, count), ops, out, *impl_->lease, &bad);
  });
}

void Kernels::enqueue_segments(std::string_view backend, const void* data, std::size_t count, DType dtype, Op op,
                               const Segments& segments, void* out, std::uint64_t* out_index) {
  const SegmentBounds b = bounds_of(segments, count);
  unsigned long long* bad = nullptr;
  if (!is_core_op(op)) return enqueue_segment_statistic(data, b, dtype, op, 0, out, out_index, *impl_->lease, &bad);  // correction 0
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    enqueue_segments_typed<T>(technique_of(backend), static_cast<const T*>(data), b, op, out, out_index, *impl_->lease, &bad);
  });
}

void Kernels::enqueue_exact(std::string_view backend, const void* data, std::size_t count, DType dtype, int block) {
  impl_->exact_partial = cuda::enqueue_exact(technique_of(backend), data, count, dtype, block, *impl_->lease, nullptr);
}
ExactSum Kernels::collect_exact(std::size_t count) {
  ExactSum s;
  XREDUCE_CUDA(cudaMemcpyAsync(&s, impl_->exact_partial, sizeof s, cudaMemcpyDeviceToHost, impl_->lease->stream));
  XREDUCE_CUDA(cudaStreamSynchronize(impl_->lease->stream));
  s.words[ExactSum::kCount] = static_cast<std::int64_t>(count);
  return s;
}

void Kernels::enqueue_exact_segments(const void* data, std::size_t count, DType dtype, const Segments& segments, void* out) {
  unsigned long long* bad = nullptr;
  cuda::enqueue_exact_segments(data, bounds_of(segments, count), dtype, out, *impl_->lease, &bad);
}

void Kernels::enqueue_exact_columns(const void* data, std::size_t count, std::size_t width, DType dtype) {
  impl_->exact_partial = cuda::enqueue_exact_columns(data, count, width, dtype, *impl_->lease);
}
std::vector<ExactSum> Kernels::collect_exact_columns(std::size_t count, std::size_t width) {
  std::vector<ExactSum> sums(width);
  XREDUCE_CUDA(cudaMemcpyAsync(sums.data(), impl_->exact_partial, width * sizeof(ExactSum), cudaMemcpyDeviceToHost,
                               impl_->lease->stream));
  XREDUCE_CUDA(cudaStreamSynchronize(impl_->lease->stream));
  for (ExactSum& s : sums) s.words[ExactSum::kCount] = static_cast<std::int64_t>(count);
  return sums;
}

void Kernels::enqueue_exact_moments(const void* data, std::size_t count, DType dtype) {
  impl_->exact_partial = cuda::enqueue_exact_moments(data, count, dtype, *impl_->lease, nullptr);
}
std::vector<ExactSum> Kernels::collect_exact_moments(std::size_t count) {
  std::vector<ExactSum> moments(2);
  XREDUCE_CUDA(cudaMemcpyAsync(moments.data(), impl_->exact_partial, 2 * sizeof(ExactSum), cudaMemcpyDeviceToHost,
                               impl_->lease->stream));
  XREDUCE_CUDA(cudaStreamSynchronize(impl_->lease->stream));
  cuda::finish_exact_moments(moments, count);
  return moments;
}

Streaming default_streaming() {
  const cuda::Streaming d;
  return {d.chunk_bytes, d.streams, d.copy_threads, d.stage_bytes};
}

Result reduce_host(std::string_view backend, const void* data, std::size_t count, std::size_t width, DType dtype, Op op,
                   int device, bool pinned, const Streaming& s, int block) {
  return cuda::reduce_host(technique_of(backend), data, count, width, dtype, op, block, device, pinned,
                           cuda::Streaming{s.chunk_bytes, s.streams, s.copy_threads, s.stage_bytes});
}

}  // namespace xreduce::cuda::bench
