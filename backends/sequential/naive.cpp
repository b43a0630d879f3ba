// `sequential.naive`: the seeds' loop, `for (i) s += x[i]` with an accumulator of the result
// type, kept as the baseline the seeds' tables compare against. In f32 it stops growing once the
// sum's spacing exceeds the addends (about 2^24 for values in [0, 1)), so it declares its float
// sums and products inexact. Its extremes follow the semantics table: a plain `<` loop with the
// NaN rule on top, since a plain `<` alone would depend on where the NaN is.

#include <array>
#include <limits>
#include <memory>

#include "xreduce/backend/reducer.hpp"

namespace xreduce::backends {
namespace {

template <class T>
bool nan(T x) {
  if constexpr (is_float_v<T>) return x != x;
  else return false;
}

//! a + b or a * b in the accumulator's own type: for f16 and bf16 that is the result rounded to
//! 16 bits at every step, the loop's lesson (a bf16 running sum of ones stops at 256).
template <class Acc>
Acc add(Acc a, Acc b) {
  if constexpr (is_float16_v<Acc>) return Acc(static_cast<double>(a) + static_cast<double>(b));
  else return a + b;
}
template <class Acc>
Acc multiply(Acc a, Acc b) {
  if constexpr (is_float16_v<Acc>) return Acc(static_cast<double>(a) * static_cast<double>(b));
  else return a * b;
}

template <class T>
Result naive(const T* x, std::size_t n, Op op) {
  using Out = std::conditional_t<is_float_v<T>, T,
                                 std::conditional_t<std::is_signed_v<T>, std::int64_t, std::uint64_t>>;
  // Integers accumulate in uint64 so that wrap-around is defined; the bits equal the signed sum.
  using Acc = std::conditional_t<is_float_v<T>, T, std::uint64_t>;
  switch (op) {
    case Op::sum: {
      Acc s = static_cast<Acc>(0);
      for (std::size_t i = 0; i < n; ++i) s = add(s, static_cast<Acc>(x[i]));
      return {Scalar(static_cast<Out>(s)), {}, {}};
    }
    case Op::prod: {
      Acc p = static_cast<Acc>(1);
      for (std::size_t i = 0; i < n; ++i) p = multiply(p, static_cast<Acc>(x[i]));
      return {Scalar(static_cast<Out>(p)), {}, {}};
    }
    default: break;
  }
  const bool want_max = op == Op::max || op == Op::argmax;
  std::size_t best = 0;
  for (std::size_t i = 1; i < n && !nan(x[best]); ++i)
    if (nan(x[i]) || (want_max ? x[best] < x[i] : x[i] < x[best])) best = i;
  Result r{Scalar(x[best]), {}, {}};
  if (returns_index(op)) r.index = best;
  return r;
}

class NaiveReducer final : public Reducer {
 public:
  std::string_view name() const override { return "sequential.naive"; }
  // Flat arrays; float sums and products declared inexact.
  static constexpr std::array<DType, 9> kIntegers{DType::i8,  DType::u8,  DType::i16, DType::u16, DType::i32,
                                                  DType::u32, DType::i64, DType::u64, DType::boolean};
  static constexpr std::array<DType, 4> kFloats{DType::f16, DType::bf16, DType::f32, DType::f64};
  static constexpr Capabilities kCaps =
      Capabilities(Engine::cpu_serial)
          .add(FeatureSet().dtypes(kIntegers).ops({Op::sum, Op::prod, Op::min, Op::max, Op::argmin, Op::argmax}).layouts({Layout::all}))
          .add(FeatureSet().dtypes(kFloats).ops({Op::min, Op::max, Op::argmin, Op::argmax}).layouts({Layout::all}))
          .add(FeatureSet().dtypes(kFloats).ops({Op::sum, Op::prod}).layouts({Layout::all}).support(Support::inexact));
  Capabilities capabilities() const override { return kCaps; }
  Availability available() const override { return Availability::yes(); }

 protected:
  Result do_reduce(const Request& q, const Options&) override {
    return visit_dtype(q.dtype, [&](auto tag) {
      using T = decltype(tag);
      return naive(static_cast<const T*>(q.data), q.count, q.op);
    });
  }
};

}  // namespace

std::unique_ptr<Reducer> make_naive_reducer() { return std::make_unique<NaiveReducer>(); }

}  // namespace xreduce::backends
