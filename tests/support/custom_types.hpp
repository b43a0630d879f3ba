#pragma once
// The user types of the custom-reduction tests and examples' checks: seed 002's 3x3 integer
// matrices (element-wise minimum) and seed 001's 3-D points (the farthest from the origin).

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <ostream>
#include <tuple>

#ifdef __CUDACC__
#define XREDUCE_TEST_HD __host__ __device__
#else
#define XREDUCE_TEST_HD
#endif

namespace xreduce::test {

struct Mat3 {
  std::int32_t m[9];
  friend bool operator==(const Mat3& a, const Mat3& b) {
    for (int i = 0; i < 9; ++i)
      if (a.m[i] != b.m[i]) return false;
    return true;
  }
  friend std::ostream& operator<<(std::ostream& os, const Mat3& a) {
    os << "[";
    for (int i = 0; i < 9; ++i) os << (i ? " " : "") << a.m[i];
    return os << "]";
  }
};

//! Element-wise minimum; its identity is the matrix of INT32_MAX.
struct Mat3Min {
  XREDUCE_TEST_HD Mat3 operator()(const Mat3& a, const Mat3& b) const {
    Mat3 r;
    for (int i = 0; i < 9; ++i) r.m[i] = b.m[i] < a.m[i] ? b.m[i] : a.m[i];
    return r;
  }
};
inline Mat3 mat3_min_identity() {
  Mat3 r;
  for (int& v : r.m) v = std::numeric_limits<std::int32_t>::max();
  return r;
}

struct Point3 {
  float x, y, z;
  friend bool operator==(const Point3& a, const Point3& b) { return a.x == b.x && a.y == b.y && a.z == b.z; }
  friend std::ostream& operator<<(std::ostream& os, const Point3& p) {
    return os << "(" << p.x << ", " << p.y << ", " << p.z << ")";
  }
};

//! The point farther from the origin; equal distances are broken by the coordinates, so that
//! the operator is commutative (a plain `>` would keep whichever came first).
struct Farthest {
  XREDUCE_TEST_HD static float norm2(const Point3& p) { return p.x * p.x + p.y * p.y + p.z * p.z; }
  XREDUCE_TEST_HD Point3 operator()(const Point3& a, const Point3& b) const {
    const float na = norm2(a), nb = norm2(b);
    if (na != nb) return nb > na ? b : a;
    if (a.x != b.x) return b.x > a.x ? b : a;
    if (a.y != b.y) return b.y > a.y ? b : a;
    return b.z > a.z ? b : a;
  }
};

}  // namespace xreduce::test
