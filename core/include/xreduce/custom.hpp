#pragma once
//! User-defined reductions: your element type, your operator, compiled in your code and run on
//! the threads of a CPU backend (sequential, tbb, openmp). A plugin boundary cannot carry a
//! lambda, so this is header-only; the library lends only its threads (Reducer::run_chunks).
//! The GPU form of the same calls is xreduce/cuda.cuh, compiled with nvcc.
//!
//!   struct Farthest {
//!     Point operator()(Point a, Point b) const { return norm2(b) > norm2(a) ? b : a; }
//!   };
//!   Point p = xreduce::reduce(xreduce::Policy{}, std::span<const Point>(points), Farthest{}, Point{0, 0, 0});
//!
//! The operator must be associative and commutative, and `identity` must be its identity
//! (op(identity, x) == x): the elements are combined in a tree, in an order that is fixed for a
//! given size but is not left to right. Policy::check_laws tests these on a sample.

#include <cstddef>
#include <ranges>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "xreduce/detail/custom_impl.hpp"

namespace xreduce {

//! Where and how a user-defined reduction runs.
struct Policy {
  std::string backend = "auto";  //!< "sequential", "tbb", "openmp", or "auto" (by size, as the dispatcher)
  int threads = 0;               //!< 0: the config's `threads`, else all
  //! Test the operator's laws (identity, commutativity, associativity) on a sample of up to 16
  //! elements first, and throw Error(invalid_argument) naming the broken law and the values.
  //! On by default in debug builds (NDEBUG not defined).
#ifdef NDEBUG
  bool check_laws = false;
#else
  bool check_laws = true;
#endif
  //! For floating results: the relative tolerance of the law checks; 0: 16 eps of the type.
  double law_tolerance = 0;
  //! Accuracy::exact: reduce() with std::plus over float or double returns the exact sum rounded
  //! once, through the library's exact sums (the same bits as every backend's); reduce() with any
  //! other operator, and transform_reduce(), refuse it (Error unsupported).
  Accuracy accuracy = Accuracy::standard;
};

//! op over transform(x) for every x in `data`, starting from `identity`. R is the type the
//! transform returns and the operator combines (sum of squares: R = double, transform x*x).
template <std::ranges::contiguous_range Range, class R, class BinaryOp, class Transform>
  requires std::ranges::sized_range<Range>
R transform_reduce(const Policy& policy, const Range& data, R identity, BinaryOp op, Transform transform) {
  using T = std::ranges::range_value_t<Range>;
  const T* x = std::ranges::data(data);
  const std::size_t n = std::ranges::size(data);
  if (policy.accuracy == Accuracy::exact)
    throw Error(ErrorCode::unsupported, "Policy::accuracy exact: transform_reduce has no exact form; reduce() with std::plus has");
  if (policy.check_laws) detail::check_laws_on(detail::law_sample<T, R>(x, n, transform), identity, op, policy.law_tolerance);
  if (n == 0) return identity;

  constexpr std::size_t kChunk = detail::custom_chunk<T>();
  const std::size_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<R> partial(chunks, identity);
  struct Job {
    const T* x;
    std::size_t n;
    R* partial;
    const R* identity;
    const BinaryOp* op;
    const Transform* transform;
  } job{x, n, partial.data(), &identity, &op, &transform};
  auto body = [](void* context, std::size_t c) {
    const Job& j = *static_cast<const Job*>(context);
    constexpr std::size_t chunk = detail::custom_chunk<T>();
    const std::size_t first = c * chunk, len = std::min(chunk, j.n - first);
    j.partial[c] = detail::fold_chunk(j.x + first, len, *j.identity, *j.op, *j.transform);
  };
  detail::run_user_chunks(policy.backend, n, policy.threads, chunks, body, &job);

  detail::PairwiseCombiner<R, BinaryOp> total(identity, op);  // fixed order: same bits on every backend
  for (R& p : partial) total.push(std::move(p));
  return total.result();
}

//! op over every element of `data`, starting from `identity`.
template <std::ranges::contiguous_range Range, class BinaryOp>
  requires std::ranges::sized_range<Range>
std::ranges::range_value_t<Range> reduce(const Policy& policy, const Range& data, BinaryOp op,
                                         std::type_identity_t<std::ranges::range_value_t<Range>> identity) {
  using T = std::ranges::range_value_t<Range>;
  if (policy.accuracy == Accuracy::exact)
    return detail::exact_plus<T, BinaryOp>(policy.backend, std::ranges::data(data), std::ranges::size(data), identity,
                                           policy.threads);
  return transform_reduce(policy, data, identity, op, [](const T& x) -> const T& { return x; });
}

//! The law checks on their own: throws Error(invalid_argument) if `op` is not associative or
//! commutative on `sample`, or `identity` is not its identity (floating types within
//! `tolerance`, relative; 0: 16 eps).
template <class T, class BinaryOp>
void check_laws(std::span<const T> sample, BinaryOp op, const T& identity, double tolerance = 0) {
  detail::check_laws_on(std::vector<T>(sample.begin(), sample.end()), identity, op, tolerance);
}

}  // namespace xreduce
