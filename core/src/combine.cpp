#include "combine.hpp"

#include <cmath>

#include "xreduce/error.hpp"

namespace xreduce::detail {

Result combine_results(Op op, const Result& low, const Result& high, std::uint64_t high_offset) {
  if (!low.values.empty() || !high.values.empty()) {  // records: column by column
    if (low.values.size() != high.values.size())
      throw Error(ErrorCode::internal, "combine_results: parts with different numbers of columns");
    Result r;
    for (std::size_t j = 0; j < low.values.size(); ++j)
      r.values.push_back(combine_results(op, Result{low.values[j], {}, {}}, Result{high.values[j], {}, {}}, 0).value);
    r.value = r.values.front();
    return r;
  }
  if (low.value.dtype() != high.value.dtype())
    throw Error(ErrorCode::internal, "combine_results: parts of different types");
  return visit_dtype(low.value.dtype(), [&](auto tag) -> Result {
    using T = decltype(tag);
    const T a = low.value.get<T>(), b = high.value.get<T>();
    auto nan = [](T x) {
      if constexpr (std::is_floating_point_v<T>) return x != x;
      else return false;
    };
    switch (op) {
      case Op::sum:
      case Op::prod: {
        if constexpr (std::is_floating_point_v<T>) {
          const double r = op == Op::sum ? double(a) + double(b) : double(a) * double(b);
          return {Scalar(static_cast<T>(r)), {}, {}};
        } else {
          const auto ua = static_cast<std::uint64_t>(a), ub = static_cast<std::uint64_t>(b);
          return {Scalar(static_cast<T>(op == Op::sum ? ua + ub : ua * ub)), {}, {}};
        }
      }
      case Op::min:
      case Op::max: {
        if (nan(a)) return {Scalar(a), {}, {}};
        if (nan(b)) return {Scalar(b), {}, {}};
        const bool take_b = op == Op::max ? a < b : b < a;
        return {Scalar(take_b ? b : a), {}, {}};
      }
      case Op::argmin:
      case Op::argmax: {
        Result h = high;
        h.index = *high.index + high_offset;
        if (nan(a)) return low;
        if (nan(b)) return h;
        const bool take_b = op == Op::argmax ? a < b : b < a;  // ties: the low part's index is lower
        return take_b ? h : low;
      }
    }
    throw Error(ErrorCode::internal, "combine_results: unknown op");
  });
}

}  // namespace xreduce::detail
