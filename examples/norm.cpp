// Transform-reduce: the L2 norm of a vector (a sum of squares, then a square root) and a count
// of the elements above a threshold, each one pass over the data on the CPU backends' threads.

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <vector>

#include "xreduce/custom.hpp"
#include "xreduce/xreduce.hpp"

int main(int argc, char** argv) {
  const std::size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 10'000'000;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(n);
  for (float& v : x) v = u(rng);

  const xreduce::Policy policy{.backend = "auto"};
  // Squares in double: exact for f32 input, and the sum is combined pairwise.
  const double sum_squares =
      xreduce::transform_reduce(policy, x, 0.0, std::plus<>{}, [](float v) { return double(v) * v; });
  const std::uint64_t above =
      xreduce::transform_reduce(policy, x, std::uint64_t{0}, std::plus<>{}, [](float v) { return std::uint64_t{v > 0.5f}; });

  long double check_squares = 0;
  std::uint64_t check_above = 0;
  for (float v : x) {
    check_squares += static_cast<long double>(v) * v;
    check_above += v > 0.5f;
  }
  std::printf("n = %zu: L2 norm %.17g, elements above 0.5: %llu\n", n, std::sqrt(sum_squares),
              static_cast<unsigned long long>(above));
  const bool ok = std::fabs(sum_squares - static_cast<double>(check_squares)) <= 1e-12 * sum_squares && above == check_above;
  std::printf("%s\n", ok ? "agrees with a long-double loop" : "MISMATCH");
  return ok ? 0 : 1;
}
