// N-D views of device data on the GPU backends: the shared body of support/view_cases.hpp (random
// shapes, axes, strides and keepdims against the exact reference, results also written to `out`
// in device memory), and shapes large enough for the views kernels' vector loads and splits.

#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <sstream>
#include <vector>

#include "gpu/device_placement.hpp"
#include "support/view_cases.hpp"

namespace xr = xreduce;
using xr::test::DevicePlacement, xr::test::gpu_backends, xr::test::kLong, xr::test::kSmall;

namespace {

bool have_gpu() {
  if (!gpu_backends().empty()) return true;
  MESSAGE("no GPU backend can run here (no CUDA device or no CUDA module): GPU view tests skipped");
  return false;
}

template <class T>
void device_views(std::size_t cases, std::size_t max_rank, const std::vector<std::int64_t>& extents, std::int64_t most,
                  std::uint64_t salt) {
  xr::test::views_for<T, DevicePlacement>(gpu_backends(), cases, max_rank, extents, most, salt);
}

//! A C-order array of `shape`, read whole, `axes` reduced; or its transpose (the strides reversed).
xr::test::ViewCase c_order(std::vector<std::int64_t> shape, xr::Axes axes, bool transposed = false) {
  xr::test::ViewCase v;
  v.shape = shape;
  v.strides.assign(shape.size(), 1);
  for (std::size_t k = shape.size(); k-- > 1;) v.strides[k - 1] = v.strides[k] * shape[k];
  v.span = static_cast<std::size_t>(v.strides[0] * shape[0]);
  if (transposed) {
    std::reverse(v.shape.begin(), v.shape.end());
    std::reverse(v.strides.begin(), v.strides.end());
  }
  v.axes = axes;
  std::ostringstream s;
  s << (transposed ? "transposed " : "") << "C-order (";
  for (std::size_t k = 0; k < v.shape.size(); ++k) s << (k ? ", " : "") << v.shape[k];
  s << "), axes bits " << axes.bits();
  v.text = s.str();
  return v;
}

//! The layouts the views kernels take, at sizes that split their columns and runs over blocks:
//! whole 16-byte rows and odd ones (scalar loads), a batch of one and of many, runs of one
//! vector a thread and of many; the core ops, and statistics (of floats: the others refuse them),
//! each result finished on the GPU with its count.
template <class T>
void view_kernel_shapes() {
  std::mt19937_64 rng(xr::test::run_seed() ^ 0x7e35ull ^ static_cast<std::uint64_t>(xr::dtype_of<T>()));
  const std::vector<xr::test::ViewCase> shapes{
      c_order({4, 700, 512}, xr::Axes{1}),       // middle, vector loads, split columns
      c_order({3, 1001, 37}, xr::Axes{1}),       // middle, rows that are not whole vectors
      c_order({1000, 2, 64}, xr::Axes{1}),       // middle, many batches of two rows
      c_order({256, 5, 1024}, xr::Axes{0, 2}),   // strided: runs of 1024, vector loads
      c_order({64, 7, 33}, xr::Axes{0, 2}),      // strided: runs of 33, scalar loads
      c_order({3, 4000, 5}, xr::Axes{0, 2}),     // strided: few results, many short runs
      c_order({700, 300}, xr::Axes{1}, true),    // a transposed matrix over its rows: columns
      c_order({6, 50, 40, 9}, xr::Axes{1, 3}),   // strided, two run axes
  };
  using xr::Op;
  for (const xr::test::ViewCase& v : shapes)
    for (Op op : {Op::sum, Op::prod, Op::min, Op::max, Op::argmin, Op::argmax, Op::mean, Op::var, Op::std, Op::norm2,
                  Op::logsumexp, Op::count_nonzero, Op::all, Op::nanmean, Op::nanvar, Op::nanargmax}) {
      DevicePlacement place;
      // argmin/argmax on data of few values: ties across the splits and the tiles, the lowest index
      // wins; the NaN-skipping statistics on data with NaN among them.
      const auto pattern = xr::returns_index(op) && xr::is_core_op(op) ? xr::test::Pattern::ties
                           : xr::skips_nan(op) && xr::is_float_v<T>    ? xr::test::Pattern::nan
                                                                       : xr::test::Pattern::random;
      xr::test::check_view_case<T>(v, op, pattern, rng, place, gpu_backends());
    }
}

}  // namespace

TEST_CASE("gpu: N-D views of device data, random shapes, f32, f64, i32, u8, f16, bf16, bool") {
  if (!have_gpu()) return;
  const bool few = xr::test::few();
  device_views<float>(few ? 30 : 150, 9, kSmall, 1 << 12, 0x71e3);
  device_views<float>(few ? 3 : 12, 3, kLong, 1 << 20, 0x10e6);
  device_views<double>(few ? 30 : 120, 9, kSmall, 1 << 12, 0x71e3);
  device_views<double>(few ? 2 : 8, 3, kLong, 1 << 20, 0x10e6);
  device_views<std::int32_t>(few ? 20 : 100, 6, kSmall, 1 << 12, 0x71e3);
  device_views<std::uint8_t>(few ? 20 : 100, 6, kSmall, 1 << 12, 0x71e3);
  device_views<std::uint8_t>(few ? 2 : 6, 3, kLong, 1 << 20, 0x10e6);
  device_views<xr::f16>(few ? 20 : 100, 6, kSmall, 1 << 12, 0x71e3);
  device_views<xr::bf16>(few ? 20 : 100, 6, kSmall, 1 << 12, 0x71e3);
  device_views<bool>(few ? 20 : 80, 6, kSmall, 1 << 12, 0x71e3);
}

TEST_CASE("gpu: exact sums of N-D views of device data, f32, f64, f16 and bf16, MPFR's bits for each result") {
  if (!have_gpu()) return;
  const bool few = xr::test::few();
  using xr::test::exact_views_for;
  exact_views_for<float, DevicePlacement>(gpu_backends(), few ? 14 : 70, 6, kSmall, 1 << 12, 0x71e3);
  exact_views_for<float, DevicePlacement>(gpu_backends(), few ? 7 : 14, 3, kLong, 1 << 20, 0x10e6);
  exact_views_for<xr::f16, DevicePlacement>(gpu_backends(), few ? 7 : 35, 6, kSmall, 1 << 12, 0x71e3);
  exact_views_for<xr::bf16, DevicePlacement>(gpu_backends(), few ? 7 : 35, 6, kSmall, 1 << 12, 0x71e3);
  exact_views_for<xr::bf16, DevicePlacement>(gpu_backends(), few ? 2 : 7, 3, kLong, 1 << 20, 0x10e6);
  exact_views_for<double, DevicePlacement>(gpu_backends(), few ? 14 : 70, 6, kSmall, 1 << 12, 0x71e3);
  exact_views_for<double, DevicePlacement>(gpu_backends(), few ? 7 : 14, 3, kLong, 1 << 20, 0x10e6);
  // The views kernels' shapes (vector loads, scalar loads, splits), on every adversarial shape of data.
  std::mt19937_64 rng(xr::test::run_seed() ^ 0xe7a5ull);
  const std::vector<xr::test::ViewCase> shapes{
      c_order({4, 700, 512}, xr::Axes{1}),      c_order({3, 1001, 37}, xr::Axes{1}),    c_order({1000, 2, 64}, xr::Axes{1}),
      c_order({256, 5, 1024}, xr::Axes{0, 2}),  c_order({64, 7, 33}, xr::Axes{0, 2}),   c_order({3, 4000, 5}, xr::Axes{0, 2}),
      c_order({700, 300}, xr::Axes{1}, true),   c_order({6, 50, 40, 9}, xr::Axes{1, 3}), c_order({2, 30000, 8}, xr::Axes{1}),
  };
  std::size_t k = 0;
  for (const xr::test::ViewCase& v : shapes)
    for (std::size_t j = 0; j < (few ? 2 : std::size(xr::test::all_exact_shapes)); ++j, ++k) {
      const xr::test::ExactShape data = xr::test::all_exact_shapes[k % std::size(xr::test::all_exact_shapes)];
      DevicePlacement place;
      xr::test::check_exact_view_case<float>(v, data, rng, place, gpu_backends());
      DevicePlacement place16;
      xr::test::check_exact_view_case<xr::bf16>(v, data, rng, place16, gpu_backends());
      DevicePlacement place64;  // f64: the pairs, and the results they leave summed again in digits
      xr::test::check_exact_view_case<double>(v, data, rng, place64, gpu_backends());
    }
}

TEST_CASE("gpu: N-D views of device data, the views kernels' vector loads and splits") {
  if (!have_gpu()) return;
  view_kernel_shapes<float>();
  view_kernel_shapes<xr::bf16>();
  if (xr::test::few()) return;  // under the sanitizers: two types take every path
  view_kernel_shapes<double>();
  view_kernel_shapes<std::int8_t>();
}
