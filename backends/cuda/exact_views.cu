// Exact sums of N-D views of device data (kernels/exact_views.cuh) through the columns and
// strided kernels of views.cuh: f32, f16 and bf16, each result rounded once on the GPU.

#include "kernels/exact_views.cuh"

namespace xreduce::cuda {

void enqueue_exact_view(const Request& c, void* out, Workspace& ws, const ViewTuning& tuning) {
  auto run = [&](auto tag) {
    using T = decltype(tag);
    using F = ExactViewSum<T>;
    enqueue_view_with(static_cast<const T*>(c.data), c, F{}, FinishedResults<F>{static_cast<T*>(out), nullptr}, ws, tuning);
  };
  switch (c.dtype) {
    case DType::f32: return run(float{});
    case DType::f16: return run(f16{});
    case DType::bf16: return run(bf16{});
    default:
      throw Error(ErrorCode::unsupported, "exact sums of N-D views on the GPU are of f32, f16 and bf16, not " +
                                              std::string(to_string(c.dtype)));
  }
}

}  // namespace xreduce::cuda
