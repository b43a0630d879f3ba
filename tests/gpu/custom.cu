// User-defined reductions on the GPU (xreduce/cuda.cuh), compiled with nvcc as a user would:
// custom types and operators, transform-reduce, device-resident and host data, against exact
// references. Skips, saying so, without a GPU.

#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <span>
#include <vector>

#include "support/custom_types.hpp"
#include "support/test_data.hpp"
#include "xreduce/cuda.cuh"
#include "xreduce/validate.hpp"

namespace xr = xreduce;
using xr::test::Mat3, xr::test::Mat3Min, xr::test::Point3, xr::test::Farthest;

namespace {

bool have_gpu() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();
    MESSAGE("no CUDA device: GPU custom-reduction tests skipped");
    return false;
  }
  return true;
}

//! A device copy of `host`, viewed as a span of device memory.
template <class T>
struct OnDevice {
  T* data = nullptr;
  std::size_t n = 0;
  explicit OnDevice(const std::vector<T>& host) : n(host.size()) {
    REQUIRE(cudaMalloc(&data, std::max<std::size_t>(1, n) * sizeof(T)) == cudaSuccess);
    REQUIRE(cudaMemcpy(data, host.data(), n * sizeof(T), cudaMemcpyHostToDevice) == cudaSuccess);
  }
  ~OnDevice() { cudaFree(data); }
  std::span<const T> span() const { return {data, n}; }
};

struct Plus {
  template <class A>
  __host__ __device__ A operator()(A a, A b) const {
    return a + b;
  }
};
struct Square {
  __host__ __device__ double operator()(float v) const { return double(v) * double(v); }
};
struct Above {
  float threshold;
  __host__ __device__ unsigned long long operator()(float v) const { return v > threshold ? 1 : 0; }
};

void check_double_sum(double got, const std::vector<double>& terms) {
  const xr::Request q{terms.data(), terms.size(), xr::DType::f64, xr::Op::sum, xr::Memory::host};
  const xr::Reference ref = xr::exact_reference(q);
  INFO("got " << got << ", exact " << ref.value.to_string());
  CHECK(std::fabs(got - ref.value.get<double>()) <= xr::tolerance(q, ref));
}

std::vector<std::size_t> sizes() {
  const char* quick = std::getenv("XREDUCE_TEST_QUICK");
  if (quick && *quick && *quick != '0') return {1, 1000, 70001};
  return {1, 7, 1000, 65537, (std::size_t{1} << 22) + 3};
}

}  // namespace

TEST_CASE("gpu custom: user types and operators, device and host data") {
  if (!have_gpu()) return;
  std::mt19937_64 rng(xr::test::run_seed() ^ 0xC0DAull);
  std::uniform_int_distribution<std::int32_t> any_int;
  std::uniform_real_distribution<float> coord(-10, 10);
  const xr::Policy gpu{.backend = "cuda", .check_laws = true};
  for (std::size_t n : sizes()) {
    INFO("seed " << xr::test::run_seed() << " (replay with XREDUCE_TEST_SEED), n = " << n);
    std::vector<Mat3> mats(n);
    for (Mat3& m : mats)
      for (auto& v : m.m) v = any_int(rng);
    Mat3 want = xr::test::mat3_min_identity();
    for (const Mat3& m : mats) want = Mat3Min{}(want, m);
    OnDevice<Mat3> dmats(mats);
    CHECK(xr::cuda::reduce(gpu, dmats.span(), Mat3Min{}, xr::test::mat3_min_identity()) == want);
    CHECK(xr::cuda::reduce(gpu, mats, Mat3Min{}, xr::test::mat3_min_identity()) == want);

    std::vector<Point3> points(n);
    for (Point3& p : points) p = {coord(rng), coord(rng), coord(rng)};
    if (n > 2) points[n / 2] = points[n / 3];
    Point3 far{0, 0, 0};
    for (const Point3& p : points) far = Farthest{}(far, p);
    OnDevice<Point3> dpoints(points);
    CHECK(xr::cuda::reduce(gpu, dpoints.span(), Farthest{}, Point3{0, 0, 0}) == far);
    // auto: device data go to the GPU
    CHECK(xr::cuda::reduce(xr::Policy{}, dpoints.span(), Farthest{}, Point3{0, 0, 0}) == far);

    std::vector<unsigned long long> words(n);
    unsigned long long wrapped = 0;
    for (auto& w : words) wrapped += (w = rng());
    OnDevice<unsigned long long> dwords(words);
    CHECK(xr::cuda::reduce(gpu, dwords.span(), Plus{}, 0ull) == wrapped);
  }
}

TEST_CASE("gpu custom: transform-reduce (sum of squares, count) and the CPU fallback") {
  if (!have_gpu()) return;
  std::mt19937_64 rng(xr::test::run_seed() ^ 0x5Aull);
  std::uniform_real_distribution<float> unit(-1, 1);
  const xr::Policy gpu{.backend = "cuda", .check_laws = true};
  for (std::size_t n : sizes()) {
    INFO("seed " << xr::test::run_seed() << ", n = " << n);
    std::vector<float> x(n);
    for (float& v : x) v = unit(rng);
    std::vector<double> squares(n);
    unsigned long long above = 0;
    for (std::size_t i = 0; i < n; ++i) {
      squares[i] = double(x[i]) * double(x[i]);
      above += x[i] > 0.5f;
    }
    OnDevice<float> dx(x);
    check_double_sum(xr::cuda::transform_reduce(gpu, dx.span(), 0.0, Plus{}, Square{}), squares);
    check_double_sum(xr::cuda::transform_reduce(gpu, x, 0.0, Plus{}, Square{}), squares);
    CHECK(xr::cuda::transform_reduce(gpu, dx.span(), 0ull, Plus{}, Above{0.5f}) == above);
    // A CPU backend named through the CUDA header runs the CPU template path on host data...
    check_double_sum(xr::cuda::transform_reduce(xr::Policy{.backend = "sequential"}, x, 0.0, Plus{}, Square{}), squares);
  }
  // ...and refuses device data.
  std::vector<float> one{1.0f};
  OnDevice<float> d(one);
  CHECK_THROWS_AS(xr::cuda::reduce(xr::Policy{.backend = "sequential"}, d.span(), Plus{}, 0.0f), xr::Error);
}

TEST_CASE("gpu custom: broken laws are caught before any launch") {
  if (!have_gpu()) return;
  std::vector<float> x{1, 2, 3, 4};
  OnDevice<float> d(x);
  CHECK_THROWS_WITH_AS(xr::cuda::reduce(xr::Policy{.backend = "cuda", .check_laws = true}, d.span(), Plus{}, 1.0f),
                       doctest::Contains("identity law"), xr::Error);
}

TEST_CASE("gpu custom: Policy::accuracy exact sums through the library's exact GPU backends") {
  if (!have_gpu()) return;
  std::mt19937_64 rng(xr::test::run_seed() ^ 0xe6u);
  std::vector<double> x(300001);
  for (double& v : x) v = std::ldexp(std::uniform_real_distribution<double>(-1, 1)(rng), static_cast<int>(rng() % 200) - 100);
  OnDevice<double> d(x);
  xr::ExactSum reference;  // checked against MPFR by the unit tests
  reference.add(x.data(), x.size());
  const xr::Policy policy{.backend = "cuda", .check_laws = false, .accuracy = xr::Accuracy::exact};
  INFO("seed " << xr::test::run_seed());
  const double got = xr::cuda::reduce(policy, d.span(), std::plus<>{}, 0.0), expected = reference.round<double>();
  CHECK(std::memcmp(&got, &expected, sizeof got) == 0);
  CHECK_THROWS_AS(xr::cuda::reduce(policy, d.span(), Plus{}, 0.0), xr::Error);  // not std::plus: refused
}
