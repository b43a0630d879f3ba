#include "cpu_reduce.hpp"

#include <bit>
#include <limits>
#include <vector>

#include "xreduce/detail/cpu_kernels.hpp"
#include "xreduce/error.hpp"

namespace xreduce::detail {
namespace {

std::size_t chunk_count(std::size_t n) { return (n + kChunk - 1) / kChunk; }
std::size_t chunk_length(std::size_t n, std::size_t c) { return std::min(kChunk, n - c * kChunk); }

template <class T, class R>
Scalar narrow(R wide) {
  using Out = std::conditional_t<std::is_floating_point_v<T>, T,
                                 std::conditional_t<std::is_signed_v<T>, std::int64_t, std::uint64_t>>;
  if constexpr (std::is_floating_point_v<T>) return Scalar(static_cast<Out>(wide));
  else return Scalar(std::bit_cast<Out>(wide));
}

template <class P, class T>
Scalar fold(const T* x, std::size_t n, const ChunkRunner* runner) {
  if (runner == nullptr || n <= kChunk) return narrow<T>(reduce_pairwise<P>(x, n));
  std::vector<typename P::acc> partial(chunk_count(n));
  (*runner)(partial.size(), [&](std::size_t c) { partial[c] = reduce_pairwise<P>(x + c * kChunk, chunk_length(n, c)); });
  return narrow<T>(combine_pairwise<P>(partial));
}

template <bool kMax, class T>
Scalar fold_extreme(const T* x, std::size_t n, const ChunkRunner* runner) {
  Extreme<T> e;
  if (runner == nullptr || n <= kChunk) {
    e = extreme<kMax>(x, n);
  } else {
    std::vector<Extreme<T>> partial(chunk_count(n));
    (*runner)(partial.size(), [&](std::size_t c) { partial[c] = extreme<kMax>(x + c * kChunk, chunk_length(n, c)); });
    e = partial[0];
    for (std::size_t c = 1; c < partial.size(); ++c) e = combine_extremes<kMax>(e, partial[c]);
  }
  if constexpr (std::is_floating_point_v<T>)
    if (e.nan) return Scalar(std::numeric_limits<T>::quiet_NaN());
  return Scalar(e.value);
}

template <bool kMax, class T>
Result fold_arg(const T* x, std::size_t n, const ChunkRunner* runner) {
  ArgExtreme<T> a;
  if (runner == nullptr || n <= kChunk) {
    a = arg_extreme<kMax>(x, n, 0);
  } else {
    std::vector<ArgExtreme<T>> partial(chunk_count(n));
    (*runner)(partial.size(),
              [&](std::size_t c) { partial[c] = arg_extreme<kMax>(x + c * kChunk, chunk_length(n, c), c * kChunk); });
    a = partial[0];
    for (std::size_t c = 1; c < partial.size(); ++c) a = combine_args<kMax>(a, partial[c]);
  }
  return Result{Scalar(a.value), a.index, {}};
}

}  // namespace

Result reduce_on_cpu(const Request& request, const ChunkRunner* runner) {
  return visit_dtype(request.dtype, [&](auto tag) -> Result {
    using T = decltype(tag);
    const T* x = static_cast<const T*>(request.data);
    const std::size_t n = request.count;
    switch (request.op) {
      case Op::sum: return Result{fold<SumPolicy<T>>(x, n, runner), {}, {}};
      case Op::prod: return Result{fold<ProdPolicy<T>>(x, n, runner), {}, {}};
      case Op::min: return Result{fold_extreme<false>(x, n, runner), {}, {}};
      case Op::max: return Result{fold_extreme<true>(x, n, runner), {}, {}};
      case Op::argmin: return fold_arg<false>(x, n, runner);
      case Op::argmax: return fold_arg<true>(x, n, runner);
    }
    throw Error(ErrorCode::internal, "reduce_on_cpu: unknown op");
  });
}

}  // namespace xreduce::detail
