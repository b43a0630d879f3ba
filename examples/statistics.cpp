// Several ops in one pass: the mean, the standard deviation, the range and where the maximum is,
// of one array and of each row of a matrix, from one read of the data each (Request::ops).

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "xreduce/xreduce.hpp"

int main(int argc, char** argv) {
  const std::size_t rows = 1000, n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) / rows * rows : 10'000'000;
  std::mt19937 rng(5);
  std::normal_distribution<double> normal(3.0, 2.0);
  std::vector<double> x(n);
  for (double& v : x) v = normal(rng);

  xreduce::Request q{x.data(), n, xreduce::DType::f64};
  q.ops = {xreduce::Op::sum, xreduce::Op::min, xreduce::Op::max, xreduce::Op::argmax, xreduce::Op::sumsq};
  const xreduce::Result r = xreduce::reduce(q);
  auto value = [&](const xreduce::OpResult& s) { return s.value.get<double>(); };
  const double mean = value(r.of(xreduce::Op::sum)) / n;
  const double deviation = std::sqrt(value(r.of(xreduce::Op::sumsq)) / n - mean * mean);
  const std::uint64_t top = *r.of(xreduce::Op::argmax).index;
  std::printf("n = %zu (%s): mean %.6f, standard deviation %.6f, range [%.6f, %.6f], maximum at %llu\n", n,
              r.backend.c_str(), mean, deviation, value(r.of(xreduce::Op::min)), value(r.of(xreduce::Op::max)),
              static_cast<unsigned long long>(top));

  // Each of 1000 rows: the same ops, one result per row.
  xreduce::Request per_row_request = xreduce::Request::rows(x.data(), rows, n / rows, xreduce::DType::f64, xreduce::Op::sum);
  per_row_request.ops = q.ops;
  const xreduce::Result per_row = xreduce::reduce(per_row_request);

  // A plain loop for the check: the whole array, then every row.
  bool ok = true;
  long double sum = 0, squares = 0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < n; ++i) sum += x[i], squares += static_cast<long double>(x[i]) * x[i], at = x[i] > x[at] ? i : at;
  ok = ok && std::fabs(value(r.of(xreduce::Op::sum)) - static_cast<double>(sum)) <= 1e-9 * static_cast<double>(squares);
  ok = ok && std::fabs(value(r.of(xreduce::Op::sumsq)) - static_cast<double>(squares)) <= 1e-12 * static_cast<double>(squares);
  ok = ok && top == at;
  const std::size_t length = n / rows;
  for (std::size_t row = 0; row < rows && ok; ++row) {
    double lo = x[row * length];
    for (std::size_t i = row * length; i < (row + 1) * length; ++i) lo = std::min(lo, x[i]);
    ok = per_row.of(xreduce::Op::min).values[row].get<double>() == lo;
  }
  std::printf("%s\n", ok ? "agrees with a long-double loop, and every row's minimum with a plain one" : "MISMATCH");
  return ok ? 0 : 1;
}
