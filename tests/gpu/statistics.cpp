// The statistics on data in GPU memory (cuda.shuffle's kernels): every statistic a GPU backend
// declares, of f32, f64, f16 and bf16, on random, tied, NaN, infinite, all-NaN and
// cancellation-heavy data (mean 1e4, spread 1e-3), at sizes around the kernels' runs and tiles,
// against the long-double reference within each op's stated bound (xr::agrees); var and std
// with correction 0 and 1, and where n - correction <= 0. The same of host data, streamed to one
// GPU in chunks, and over every GPU.

#include <doctest/doctest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gpu/device_placement.hpp"
#include "support/test_data.hpp"
#include "xreduce/backend/features.hpp"
#include "xreduce/backend/registry.hpp"
#include "xreduce/backend/reducer.hpp"
#include "xreduce/xreduce.hpp"

namespace xr = xreduce;

namespace {

enum class Kind { random, ties, nan, inf, both_inf, all_nan, offset };

const char* name(Kind k) {
  switch (k) {
    case Kind::random: return "random";
    case Kind::ties: return "ties";
    case Kind::nan: return "one NaN";
    case Kind::inf: return "+inf";
    case Kind::both_inf: return "+inf and -inf";
    case Kind::all_nan: return "all NaN";
    case Kind::offset: return "mean 1e4, spread 1e-3";
  }
  return "?";
}

template <class T>
std::vector<T> draw(Kind k, xr::Op op, std::size_t n, std::mt19937_64& rng) {
  using xr::test::Pattern;
  std::vector<T> x(n);
  if (k == Kind::all_nan) {
    for (T& v : x) v = std::numeric_limits<T>::quiet_NaN();
  } else if (k == Kind::offset) {
    std::uniform_real_distribution<double> u(-1, 1);
    for (T& v : x) v = static_cast<T>(1e4 + 1e-3 * u(rng));
  } else {
    const Pattern p = k == Kind::ties ? Pattern::ties : k == Kind::nan ? Pattern::nan : k == Kind::inf ? Pattern::inf
                      : k == Kind::both_inf                     ? Pattern::both_inf
                                                                : Pattern::random;
    const xr::test::Elements<T> e = xr::test::make_data<T>(p, op, n, rng);
    for (std::size_t i = 0; i < n; ++i) x[i] = e[i];
  }
  return x;
}

using xr::test::gpu_backends;

template <class T>
void statistics_of_device_data() {
  const std::vector<xr::Reducer*> gpus = gpu_backends();
  if (gpus.empty()) {
    MESSAGE("no GPU backend can run here: GPU statistics skipped");
    return;
  }
  std::mt19937_64 rng(xr::test::run_seed() ^ static_cast<std::uint64_t>(xr::dtype_of<T>()));
  const std::vector<std::size_t> sizes = xr::test::few() ? std::vector<std::size_t>{1, 257, 4099}
                                                          : std::vector<std::size_t>{1, 2, 255, 256, 257, 4099, 70001, (1u << 20) + 3};
  int checked = 0;
  for (xr::Op op : xr::all_ops) {
    if (xr::is_core_op(op)) continue;
    for (std::size_t n : sizes)
      for (Kind k : {Kind::random, Kind::ties, Kind::nan, Kind::inf, Kind::both_inf, Kind::all_nan, Kind::offset}) {
        if (n > 70001 && k != Kind::random && k != Kind::offset) continue;  // the special values' paths are the smaller sizes'
        const std::vector<T> host = draw<T>(k, op, n, rng);
        xr::test::DevicePlacement device;
        const void* data = device.put(host.data(), n * sizeof(T));
        for (double correction : xr::uses_correction(op) ? std::vector<double>{0, 1, static_cast<double>(n)} : std::vector<double>{0}) {
          xr::Request on_host{host.data(), n, xr::dtype_of<T>(), op, xr::Memory::host};
          on_host.correction = correction;
          const xr::Reference ref = xr::exact_reference(on_host);
          xr::Request q = on_host;
          q.data = data;
          q.memory = xr::Memory::device;
          for (xr::Reducer* r : gpus) {
            if (r->capabilities().support(xr::features_of(q, xr::Accuracy::standard)) == xr::Support::none) continue;
            const xr::Result res = r->reduce(q);
            INFO("seed " << xr::test::run_seed() << " (replay with XREDUCE_TEST_SEED), backend " << r->name() << ", "
                         << to_string(op) << " of " << to_string(xr::dtype_of<T>()) << ", n " << n << ", data " << std::string(name(k))
                         << ", correction " << correction << ": got " << res.value.to_string()
                         << (res.index ? " at " + std::to_string(*res.index) : std::string()) << ", reference "
                         << ref.value.to_string());
            CHECK(xr::agrees(q, ref, res));
            ++checked;
          }
        }
      }
  }
  // auto sends a statistic of device data to a GPU backend.
  const std::vector<T> host = draw<T>(Kind::random, xr::Op::var, 1000, rng);
  xr::test::DevicePlacement device;
  const xr::Request q{device.put(host.data(), host.size() * sizeof(T)), host.size(), xr::dtype_of<T>(), xr::Op::var, xr::Memory::device};
  const xr::Result by_auto = xr::default_context().reduce(q);
  INFO("auto chose " << by_auto.backend);
  CHECK(xr::default_context().registry().find(by_auto.backend)->capabilities().engine() == xr::Engine::gpu);
  MESSAGE(checked << " GPU statistics of " << to_string(xr::dtype_of<T>()) << " checked");
  CHECK(checked > 0);  // some GPU backend declares the statistics of the four floats
}

//! Statistics of host data (cuda.shuffle streams it to one GPU, cuda.multi_gpu over every GPU):
//! pageable input staged in small chunks by three copy threads, and pinned input, so that the
//! chunks' (and the GPUs') partials are folded many times, NaN indices moved past the chunks; a
//! flat array, and records of 7 and 8 columns over axis 0 (each column's partials folded, its
//! index a row; 8 columns of f32 take the columns kernel's vector loads, 7 its scalar ones).
template <class T>
void statistics_of_host_data() {
  if (gpu_backends().empty()) {
    MESSAGE("no GPU backend can run here: GPU statistics of host data skipped");
    return;
  }
  std::mt19937_64 rng(xr::test::run_seed() ^ 0x4057 ^ static_cast<std::uint64_t>(xr::dtype_of<T>()));
  int checked = 0;
  for (xr::Op op : xr::all_ops) {
    if (xr::is_core_op(op)) continue;
    for (std::size_t n : {std::size_t{1000}, xr::test::few() ? std::size_t{20011} : std::size_t{300007}})
      for (Kind k : {Kind::random, Kind::nan, Kind::all_nan, Kind::offset})
        for (bool pinned : {false, true}) {
          std::vector<T> drawn = draw<T>(k, op, n, rng);
          T* host = drawn.data();
          T* page_locked = nullptr;
          if (pinned) {
            REQUIRE(cudaMallocHost(reinterpret_cast<void**>(&page_locked), n * sizeof(T)) == cudaSuccess);
            std::copy(drawn.begin(), drawn.end(), page_locked);
            host = page_locked;
          }
          for (double correction : xr::uses_correction(op) ? std::vector<double>{0, 1} : std::vector<double>{0}) {
            for (std::int64_t width : {1, 7, 8}) {
              xr::Request q{host, n, xr::dtype_of<T>(), op, xr::Memory::host};
              const std::int64_t shape[2] = {static_cast<std::int64_t>(n) / width, width}, strides[2] = {width, 1};
              if (width > 1) q = xr::Request::over(host, xr::dtype_of<T>(), xr::View::of(shape, strides, 2), xr::Axes{0}, op);
              q.memory = xr::Memory::host;
              q.correction = correction;
              const xr::Reference ref = xr::exact_reference(q);
              xr::Options small;  // chunks of 4096 elements and fewer
              small.settings.set("chunk_bytes", std::to_string(4096 * sizeof(T)))
                  .set("stage_bytes", std::to_string(4096 * sizeof(T)))
                  .set("copy_threads", "3")
                  .set("streams", "2");
              for (xr::Reducer* r : gpu_backends()) {
                if (r->capabilities().support(xr::features_of(q, xr::Accuracy::standard)) == xr::Support::none) continue;
                const xr::Result res = r->reduce(q, small);
                INFO("seed " << xr::test::run_seed() << " (replay with XREDUCE_TEST_SEED), backend " << r->name() << ", "
                             << to_string(op) << " of " << to_string(xr::dtype_of<T>()) << " in " << (pinned ? "pinned" : "pageable")
                             << " host memory, n " << n << ", " << width << " column(s), data " << std::string(name(k))
                             << ", correction " << correction
                             << ": got " << res.value.to_string() << (res.index ? " at " + std::to_string(*res.index) : std::string())
                             << ", reference " << ref.value.to_string());
                CHECK(xr::agrees(q, ref, res));
                if (width == 1 && (op == xr::Op::var || op == xr::Op::std)) {
                  REQUIRE(res.moments.has_value());
                  CHECK(res.moments->n == static_cast<double>(n));
                }
                ++checked;
              }
            }
          }
          if (page_locked) cudaFreeHost(page_locked);
        }
  }
  MESSAGE(checked << " GPU statistics of host " << to_string(xr::dtype_of<T>()) << " checked");
  CHECK(checked > 0);  // cuda.shuffle declares them
}

}  // namespace

TEST_CASE("GPU statistics of host data, streamed in chunks and over every GPU, f32") { statistics_of_host_data<float>(); }
TEST_CASE("GPU statistics of host data, streamed in chunks and over every GPU, bf16") { statistics_of_host_data<xr::bf16>(); }
TEST_CASE("GPU statistics of device data, f32") { statistics_of_device_data<float>(); }
TEST_CASE("GPU statistics of device data, f64") { statistics_of_device_data<double>(); }
TEST_CASE("GPU statistics of device data, f16") { statistics_of_device_data<xr::f16>(); }
TEST_CASE("GPU statistics of device data, bf16") { statistics_of_device_data<xr::bf16>(); }

TEST_CASE("GPU statistics in f64 (wide results, as ranks combine them): the value unrounded, and var's and std's moments") {
  std::mt19937_64 rng(xr::test::run_seed() ^ 0x5eed);
  int checked = 0;
  for (xr::Reducer* r : gpu_backends())
    for (xr::Op op : {xr::Op::mean, xr::Op::var, xr::Op::std, xr::Op::norm2, xr::Op::logsumexp})
      for (std::size_t n : {std::size_t{1}, std::size_t{1000}, std::size_t{70001}})
        for (Kind k : {Kind::random, Kind::offset}) {
          const std::vector<float> host = draw<float>(k, op, n, rng);
          xr::test::DevicePlacement device;
          xr::Request q{device.put(host.data(), n * sizeof(float)), n, xr::DType::f32, op, xr::Memory::device};
          q.correction = xr::uses_correction(op) ? 1 : 0;
          if (r->capabilities().support(xr::features_of(q, xr::Accuracy::standard, xr::DType::f64)) == xr::Support::none) continue;
          xr::Options wide;
          wide.result_dtype = xr::DType::f64;
          const xr::Result res = r->reduce(q, wide);
          xr::Request on_host = q;
          on_host.data = host.data();
          on_host.memory = xr::Memory::host;
          const xr::Reference ref = xr::exact_reference(on_host);
          INFO("seed " << xr::test::run_seed() << " (replay with XREDUCE_TEST_SEED), backend " << r->name() << ", " << to_string(op)
                       << " of f32, n " << n << ", data " << std::string(name(k)) << ": got " << res.value.to_string() << ", reference "
                       << ref.value.to_string());
          REQUIRE(res.value.dtype() == xr::DType::f64);
          ++checked;
          // Rounded to f32 as the narrow result is, it meets the op's bound.
          xr::Result narrow = res;
          narrow.value = xr::Scalar(static_cast<float>(res.value.get<double>()));
          CHECK(xr::agrees(q, ref, narrow));
          if (op != xr::Op::var && op != xr::Op::std) {
            CHECK_FALSE(res.moments.has_value());
            continue;
          }
          REQUIRE(res.moments.has_value());
          CHECK(res.moments->n == static_cast<double>(n));
          const double var = res.moments->m2 / (static_cast<double>(n) - q.correction);
          if (n > 1) CHECK(res.value.get<double>() == (op == xr::Op::var ? var : std::sqrt(var)));
          xr::Request mean_of = on_host;
          mean_of.op = xr::Op::mean;
          const xr::Reference mean = xr::exact_reference(mean_of);
          CHECK(std::abs(res.moments->sum / static_cast<double>(n) - mean.value.to_double()) <= 1e-6 * std::abs(mean.value.to_double()) + 1e-30);
        }
  if (!gpu_backends().empty()) CHECK(checked > 0);  // cuda.shuffle declares them
}

TEST_CASE("GPU statistics: a GPU backend without statistics of host data refuses them with unsupported") {
  for (xr::Reducer* r : gpu_backends()) {
    std::vector<float> x(100, 1.0f);
    xr::Request q{x.data(), x.size(), xr::DType::f32, xr::Op::var, xr::Memory::host};
    if (r->capabilities().support(xr::features_of(q, xr::Accuracy::standard)) != xr::Support::none) continue;
    INFO("backend " << r->name());
    try {
      r->reduce(q);
      FAIL("a statistic of host data was not refused");
    } catch (const xr::Error& e) {
      CHECK(e.code() == xr::ErrorCode::unsupported);
    }
  }
}
