// The element-wise minimum of N 3x3 integer matrices, two ways:
//  1. the runtime API: the matrices are records of width 9 (Request::width), reduced column by
//     column by whichever backend the dispatcher picks (a GPU one included);
//  2. the template API: a Mat3 type and its own operator, compiled here.
// Both are checked against a plain loop.

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <vector>

#include "xreduce/custom.hpp"
#include "xreduce/xreduce.hpp"

struct Mat3 {
  std::array<std::int32_t, 9> m;
  bool operator==(const Mat3&) const = default;
};

int main(int argc, char** argv) {
  const std::size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1'000'000;
  std::mt19937 rng(2);
  std::uniform_int_distribution<std::int32_t> value(-1'000'000, 1'000'000);
  std::vector<Mat3> mats(n);
  for (Mat3& a : mats)
    for (auto& v : a.m) v = value(rng);

  // 1. Runtime API: n records of 9 i32 values.
  const xreduce::Request request = xreduce::Request::records(mats.data(), n, 9, xreduce::DType::i32, xreduce::Op::min);
  const xreduce::Result r = xreduce::reduce(request);

  // 2. Template API: Mat3 and its element-wise minimum, identity all INT32_MAX.
  auto elementwise_min = [](const Mat3& a, const Mat3& b) {
    Mat3 c;
    for (int i = 0; i < 9; ++i) c.m[i] = std::min(a.m[i], b.m[i]);
    return c;
  };
  Mat3 identity;
  identity.m.fill(std::numeric_limits<std::int32_t>::max());
  const Mat3 t = xreduce::reduce(xreduce::Policy{}, mats, elementwise_min, identity);

  Mat3 expected = identity;
  for (const Mat3& a : mats) expected = elementwise_min(expected, a);
  bool ok = t == expected;
  std::printf("element-wise minimum of %zu 3x3 matrices (runtime API on '%s'):\n", n, r.backend.c_str());
  for (int row = 0; row < 3; ++row) {
    for (int col = 0; col < 3; ++col) {
      const std::int32_t v = r.values[3 * row + col].get<std::int32_t>();
      ok = ok && v == expected.m[3 * row + col];
      std::printf(" %9d", v);
    }
    std::printf("\n");
  }
  std::printf("%s\n", ok ? "both APIs agree with a plain loop" : "MISMATCH");
  return ok ? 0 : 1;
}
