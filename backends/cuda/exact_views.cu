// Exact sums of N-D views of device data (kernels/exact_views.cuh) through the columns and
// strided kernels of views.cuh: f16 in one launch; f64, f32 and bf16 in that launch, with pairs
// of doubles, and one that sums again, in digits, the results the pairs did not settle.
// Each result is rounded once on the GPU.

#include <algorithm>

#include "kernels/exact_views.cuh"

namespace xreduce::cuda {
namespace {

template <class T>
void enqueue_exact_pairs_view(const Request& c, T* out, Workspace& ws, const ViewTuning& tuning) {
  const StridedShape s = strided_shape(c);  // the results' order and elements, whatever the kernel
  // The count of results to sum again, then their list: room for every result.
  auto* listed_count = static_cast<unsigned long long*>(
      ws.result_partials.reserve(16 + s.results * sizeof(std::uint64_t), "exact view results to sum again"));
  auto* listed = reinterpret_cast<std::uint64_t*>(listed_count + 2);
  XREDUCE_CUDA(cudaMemsetAsync(listed_count, 0, sizeof *listed_count, ws.stream));
  const auto* x = static_cast<const T*>(c.data);
  enqueue_view_with(x, c, ExactViewPairs<T>{}, PairsViewResults<T>{out, s.runs * s.run_length, listed_count, listed}, ws, tuning);
  if (s.results == 0) return;
  // How many results are listed is known on the device alone: a grid that fills the GPU once.
  const int per_sm = blocks_per_sm<exact_pairs_view_retry_kernel<T>, exact::kDigitBlock, kRetryLaneDigitBytes>();
  const auto blocks = static_cast<unsigned>(std::min<std::uint64_t>(s.results, static_cast<std::uint64_t>(ws.sm_count) * per_sm));
  exact_pairs_view_retry_kernel<T><<<blocks, exact::kDigitBlock, kRetryLaneDigitBytes, ws.stream>>>(x, s, listed_count, listed, out);
  XREDUCE_CUDA(cudaGetLastError());
}

}  // namespace

void enqueue_exact_view(const Request& c, void* out, Workspace& ws, const ViewTuning& tuning) {
  auto run = [&](auto tag) {
    using T = decltype(tag);
    using F = ExactViewSum<T>;
    enqueue_view_with(static_cast<const T*>(c.data), c, F{}, FinishedResults<F>{static_cast<T*>(out), nullptr}, ws, tuning);
  };
  switch (c.dtype) {
    case DType::f32: return enqueue_exact_pairs_view(c, static_cast<float*>(out), ws, tuning);
    case DType::f64: return enqueue_exact_pairs_view(c, static_cast<double*>(out), ws, tuning);
    case DType::f16: return run(f16{});
    case DType::bf16: return enqueue_exact_pairs_view(c, static_cast<bf16*>(out), ws, tuning);
    default:
      throw Error(ErrorCode::unsupported, "exact sums of N-D views on the GPU are of f32, f64, f16 and bf16, not " +
                                              std::string(to_string(c.dtype)));
  }
}

}  // namespace xreduce::cuda
