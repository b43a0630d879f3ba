#pragma once
// The machinery behind xreduce/custom.hpp: the fold of one chunk, the pairwise combination of
// chunk partials, and the checks of an operator's laws. Templates, compiled in the user's code.

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstring>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "xreduce/error.hpp"
#include "xreduce/exact.hpp"
#include "xreduce/types.hpp"

namespace xreduce {
class Reducer;
}

namespace xreduce {
class Context;
}

namespace xreduce::detail {

//! The CPU backend that runs a user's operator over `elements` elements in `context`: the one
//! named, or for "auto" the one the dispatcher's thresholds choose. Throws unknown_backend, or
//! unsupported for a backend that cannot run user code (the GPU ones: they take xreduce/cuda.cuh).
Reducer& custom_executor(Context& context, const std::string& backend, std::size_t elements);
//! Runs body(context, c) for every chunk c in [0, chunks), in any order, on the threads of the
//! default context's custom_executor(backend, elements): `threads` of them (0: the config's
//! `threads`, else all).
void run_user_chunks(const std::string& backend, std::size_t elements, int threads, std::size_t chunks,
                     void (*body)(void* context, std::size_t chunk), void* context);

//! The exact partial sum of n f32/f64 values at x through the library's exact sums (Accuracy::
//! exact): `backend` as Policy::backend names it ("cuda": the best GPU backend that sums exactly).
ExactSum exact_partial(const std::string& backend, DType dtype, const void* x, std::size_t n, int threads);

template <class BinaryOp, class T>
inline constexpr bool is_plus_v = std::is_same_v<BinaryOp, std::plus<T>> || std::is_same_v<BinaryOp, std::plus<>>;

//! reduce() under Policy::accuracy exact: std::plus over float or double, the exact sum (with
//! `identity`) rounded once; anything else is refused.
template <class T, class BinaryOp>
T exact_plus(const std::string& backend, const T* x, std::size_t n, const T& identity, int threads) {
  if constexpr ((std::is_same_v<T, float> || std::is_same_v<T, double>) && is_plus_v<BinaryOp, T>) {
    ExactSum s = exact_partial(backend, std::is_same_v<T, float> ? DType::f32 : DType::f64, x, n, threads);
    s.add(static_cast<double>(identity));
    return s.template round<T>();
  } else {
    throw Error(ErrorCode::unsupported,
                "Policy::accuracy exact: only sums (std::plus) of float or double are rounded exactly, not this operator");
  }
}

//! Elements per chunk: about 64 KiB of input, at least one leaf.
template <class T>
constexpr std::size_t custom_chunk() {
  return std::max<std::size_t>(256, (std::size_t{64} << 10) / sizeof(T));
}

//! Combines values pushed one at a time as a balanced binary tree (the carries of a binary
//! counter): a floating sum of n values then has an error growing with log2(n), not n.
template <class R, class BinaryOp>
class PairwiseCombiner {
 public:
  PairwiseCombiner(const R& identity, const BinaryOp& op) : identity_(identity), op_(op) {}
  void push(R v) {
    ++count_;
    for (std::size_t c = count_; (c & 1) == 0; c >>= 1) {
      v = op_(stack_.back(), v);
      stack_.pop_back();
    }
    stack_.push_back(std::move(v));
  }
  R result() const {
    if (stack_.empty()) return identity_;
    R r = stack_.back();
    for (std::size_t k = stack_.size() - 1; k-- > 0;) r = op_(stack_[k], r);
    return r;
  }

 private:
  R identity_;
  const BinaryOp& op_;
  std::vector<R> stack_;
  std::size_t count_ = 0;
};

//! op over transform(x[0..n)): leaves of kLeaf elements in kLanes interleaved accumulators
//! (independent, so the compiler can vectorise a simple operator), lanes combined pairwise,
//! leaves combined pairwise. Interleaving reorders the operands: the operator must commute.
template <class T, class R, class BinaryOp, class Transform>
R fold_chunk(const T* x, std::size_t n, const R& identity, const BinaryOp& op, const Transform& transform) {
  constexpr std::size_t kLanes = 8, kLeaf = 256;
  PairwiseCombiner<R, BinaryOp> leaves(identity, op);
  for (std::size_t start = 0; start < n; start += kLeaf) {
    const std::size_t len = std::min(kLeaf, n - start);
    const T* leaf = x + start;
    R lane[kLanes] = {identity, identity, identity, identity, identity, identity, identity, identity};
    std::size_t i = 0;
    for (; i + kLanes <= len; i += kLanes)
      for (std::size_t j = 0; j < kLanes; ++j) lane[j] = op(lane[j], transform(leaf[i + j]));
    for (std::size_t j = 0; i < len; ++i, ++j) lane[j] = op(lane[j], transform(leaf[i]));
    for (std::size_t w = kLanes / 2; w > 0; w /= 2)
      for (std::size_t j = 0; j < w; ++j) lane[j] = op(lane[j], lane[j + w]);
    leaves.push(lane[0]);
  }
  return leaves.result();
}

// --- The operator's laws --------------------------------------------------------------------

template <class R>
concept Streamable = requires(std::ostream& os, const R& r) { os << r; };

//! A value for a message: through operator<< if the type has one, else its bytes in hex.
template <class R>
std::string describe(const R& v) {
  if constexpr (Streamable<R>) {
    std::ostringstream os;
    os.precision(std::numeric_limits<double>::max_digits10);
    os << v;
    return os.str();
  } else {
    static constexpr char kHex[] = "0123456789abcdef";
    unsigned char bytes[sizeof(R)];
    std::memcpy(bytes, &v, sizeof(R));
    std::string s = "{" + std::to_string(sizeof(R)) + " bytes: ";
    for (unsigned char b : bytes) s += std::string{kHex[b >> 4], kHex[b & 15]};
    return s + "}";
  }
}

//! Whether two results of the operator are the same: floating values within `tolerance` of the
//! magnitude of the operands (NaN equals NaN), other types by their operator==, or by their bytes
//! if they have none.
template <class R>
bool law_equal(const R& x, const R& y, double magnitude, double tolerance) {
  if constexpr (std::is_floating_point_v<R>) {
    if (std::isnan(x) && std::isnan(y)) return true;
    if (x == y) return true;
    return std::fabs(static_cast<double>(x) - static_cast<double>(y)) <= tolerance * magnitude;
  } else if constexpr (std::equality_comparable<R>) {
    return static_cast<bool>(x == y);
  } else {
    return std::memcmp(&x, &y, sizeof(R)) == 0;
  }
}

template <class R>
double magnitude_of(const R& v) {
  if constexpr (std::is_arithmetic_v<R>) return std::isfinite(static_cast<double>(v)) ? std::fabs(static_cast<double>(v)) : 0.0;
  else return 0.0;
}

//! Checks identity, commutativity and associativity of `op` on `sample` (values already
//! transformed). Throws Error(invalid_argument) naming the law and the values.
template <class R, class BinaryOp>
void check_laws_on(const std::vector<R>& sample, const R& identity, const BinaryOp& op, double tolerance) {
  if (tolerance <= 0) {
    if constexpr (std::is_floating_point_v<R>) tolerance = 16 * std::numeric_limits<R>::epsilon();
  }
  auto fail = [](const std::string& law, const std::string& detail) {
    throw Error(ErrorCode::invalid_argument, "custom reduction: the operator breaks " + law + ": " + detail);
  };
  for (const R& a : sample) {
    const R left = op(identity, a), right = op(a, identity);
    if (!law_equal(left, a, magnitude_of(a), tolerance) || !law_equal(right, a, magnitude_of(a), tolerance))
      fail("the identity law", "op(identity, a) = " + describe(left) + " and op(a, identity) = " + describe(right) +
                                   ", but a = " + describe(a) + " (identity = " + describe(identity) + ")");
  }
  for (std::size_t i = 0; i + 1 < sample.size(); ++i) {
    const R& a = sample[i];
    const R& b = sample[i + 1];
    const R ab = op(a, b), ba = op(b, a);
    if (!law_equal(ab, ba, magnitude_of(a) + magnitude_of(b), tolerance))
      fail("commutativity", "op(a, b) = " + describe(ab) + " but op(b, a) = " + describe(ba) + ", with a = " +
                                describe(a) + ", b = " + describe(b));
    if (i + 2 < sample.size()) {
      const R& c = sample[i + 2];
      const R left = op(ab, c), right = op(a, op(b, c));
      if (!law_equal(left, right, magnitude_of(a) + magnitude_of(b) + magnitude_of(c), tolerance))
        fail("associativity", "op(op(a, b), c) = " + describe(left) + " but op(a, op(b, c)) = " + describe(right) +
                                  ", with a = " + describe(a) + ", b = " + describe(b) + ", c = " + describe(c));
    }
  }
}

//! Up to 16 elements spread evenly over x[0..n), transformed.
template <class T, class R, class Transform>
std::vector<R> law_sample(const T* x, std::size_t n, const Transform& transform) {
  constexpr std::size_t kSample = 16;
  std::vector<R> sample;
  const std::size_t m = std::min(n, kSample);
  for (std::size_t k = 0; k < m; ++k) sample.push_back(static_cast<R>(transform(x[k * n / m])));
  return sample;
}

}  // namespace xreduce::detail
