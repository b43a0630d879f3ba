// The point farthest from the origin, with a user-supplied "max": the operator compares squared
// distances, and breaks ties by the coordinates so that it is commutative (a plain `>` keeps
// whichever point came first, and the reduction order would then decide). The identity is the
// origin: nothing is closer. Policy::check_laws tests identity, commutativity and associativity
// on a sample first.

#include <cstdio>
#include <cstdlib>
#include <ostream>
#include <random>
#include <vector>

#include "xreduce/custom.hpp"
#include "xreduce/xreduce.hpp"

struct Point {
  float x, y, z;
  bool operator==(const Point&) const = default;
  // For the law checks' messages (without it they show the bytes).
  friend std::ostream& operator<<(std::ostream& os, const Point& p) { return os << "(" << p.x << ", " << p.y << ", " << p.z << ")"; }
};

struct Farthest {
  static float norm2(const Point& p) { return p.x * p.x + p.y * p.y + p.z * p.z; }
  Point operator()(const Point& a, const Point& b) const {
    const float na = norm2(a), nb = norm2(b);
    if (na != nb) return nb > na ? b : a;
    if (a.x != b.x) return b.x > a.x ? b : a;
    if (a.y != b.y) return b.y > a.y ? b : a;
    return b.z > a.z ? b : a;
  }
};

int main(int argc, char** argv) {
  const std::size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1'000'000;
  std::mt19937 rng(1);
  std::normal_distribution<float> coordinate(0, 1);
  std::vector<Point> points(n);
  for (Point& p : points) p = {coordinate(rng), coordinate(rng), coordinate(rng)};

  const Point far = xreduce::reduce(xreduce::Policy{.check_laws = true}, points, Farthest{}, Point{0, 0, 0});

  Point expected{0, 0, 0};
  for (const Point& p : points) expected = Farthest{}(expected, p);
  std::printf("farthest of %zu points: (%g, %g, %g), distance^2 %g\n", n, far.x, far.y, far.z, Farthest::norm2(far));

  // The same with the tie-blind operator: the law check catches it on points of equal distance.
  const std::vector<Point> ties{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
  auto tie_blind = [](const Point& a, const Point& b) { return Farthest::norm2(b) > Farthest::norm2(a) ? b : a; };
  try {
    xreduce::reduce(xreduce::Policy{.check_laws = true}, ties, tie_blind, Point{0, 0, 0});
    std::printf("the tie-blind operator was not caught\n");
    return 1;
  } catch (const xreduce::Error& e) {
    std::printf("as expected, %s\n", e.what());
  }
  return far == expected ? 0 : 1;
}
