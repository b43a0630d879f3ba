// The farthest point and an L2 norm on the GPU, through xreduce/cuda.cuh: the same calls as the
// CPU template API, compiled with nvcc. The operators are __host__ __device__: the law checks
// and the CPU fallback call them on the host. Without a GPU it says so and exits 0.

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "xreduce/cuda.cuh"

struct Point {
  float x, y, z;
  bool operator==(const Point&) const = default;
};

struct Farthest {
  __host__ __device__ static float norm2(const Point& p) { return p.x * p.x + p.y * p.y + p.z * p.z; }
  __host__ __device__ Point operator()(const Point& a, const Point& b) const {
    const float na = norm2(a), nb = norm2(b);
    if (na != nb) return nb > na ? b : a;
    if (a.x != b.x) return b.x > a.x ? b : a;
    if (a.y != b.y) return b.y > a.y ? b : a;
    return b.z > a.z ? b : a;
  }
};
struct Plus {
  __host__ __device__ double operator()(double a, double b) const { return a + b; }
};
struct Square {
  __host__ __device__ double operator()(float v) const { return double(v) * v; }
};

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: nothing to show here\n");
    return 0;
  }
  const std::size_t n = 1 << 24;
  std::mt19937 rng(1);
  std::normal_distribution<float> coordinate(0, 1);
  std::vector<Point> points(n);
  for (Point& p : points) p = {coordinate(rng), coordinate(rng), coordinate(rng)};
  std::vector<float> x(n);
  for (float& v : x) v = coordinate(rng);

  // Device-resident input is read in place; host input (below) is copied over first.
  Point* d_points = nullptr;
  cudaMalloc(&d_points, n * sizeof(Point));
  cudaMemcpy(d_points, points.data(), n * sizeof(Point), cudaMemcpyHostToDevice);
  const xreduce::Policy gpu{.backend = "cuda", .check_laws = true};
  const Point far = xreduce::cuda::reduce(gpu, std::span<const Point>(d_points, n), Farthest{}, Point{0, 0, 0});
  const double norm = std::sqrt(xreduce::cuda::transform_reduce(gpu, x, 0.0, Plus{}, Square{}));
  cudaFree(d_points);

  Point expected{0, 0, 0};
  double squares = 0;
  for (const Point& p : points) expected = Farthest{}(expected, p);
  for (float v : x) squares += double(v) * v;
  std::printf("GPU: farthest of %zu points (%g, %g, %g); L2 norm of %zu floats %.15g\n", n, far.x, far.y, far.z, n, norm);
  const bool ok = far == expected && std::fabs(norm - std::sqrt(squares)) <= 1e-12 * norm;
  std::printf("%s\n", ok ? "agrees with a host loop" : "MISMATCH");
  return ok ? 0 : 1;
}
