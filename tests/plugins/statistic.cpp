// A plugin backend of var and std (f32 and f64, host data), folding the op table's partials one
// element at a time, and of mean, var and std together (Request::ops, from one fold of the
// moments): what crosses the plugin ABI for a statistic (the op, the divisor's correction alone
// or among several ops, whether the value is asked wide, and the moments handed back: the fields
// of xreduce_request_v3 after the core ones) is what its result shows.
#include <memory>
#include <type_traits>
#include <vector>

#include "xreduce/backend/ops.hpp"
#include "xreduce/backend/plugin.hpp"

namespace {
class Variance final : public xreduce::Reducer {
 public:
  std::string_view name() const override { return "test.variance"; }
  xreduce::Capabilities capabilities() const override {
    return xreduce::Capabilities(xreduce::Engine::cpu_serial)
        .add(xreduce::FeatureSet()
                 .dtypes({xreduce::DType::f32, xreduce::DType::f64})
                 .ops({xreduce::Op::var, xreduce::Op::std})
                 .layouts({xreduce::Layout::all})
                 .wide_results())
        .add(xreduce::FeatureSet()
                 .dtypes({xreduce::DType::f32, xreduce::DType::f64})
                 .ops({xreduce::Op::mean, xreduce::Op::var, xreduce::Op::std})
                 .layouts({xreduce::Layout::all})
                 .only_together());
  }
  xreduce::Availability available() const override { return xreduce::Availability::yes(); }

 protected:
  xreduce::Result do_reduce(const xreduce::Request& q, const xreduce::Options& o) override {
    return xreduce::visit_dtype(q.dtype, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (!std::is_floating_point_v<T>) {
        return xreduce::Result{};  // not reached: f32 and f64 only
      } else if (!q.ops.empty()) {
        const xreduce::ops::MomentsOp<T, xreduce::Op::var> f;
        auto a = f.identity();
        for (std::size_t i = 0; i < q.count; ++i) a = f(a, f.lift(static_cast<const T*>(q.data)[i], i));
        const xreduce::ops::FinishArgs args{q.correction};
        auto put = [&](xreduce::Op op, T value) {
          if (q.ops.contains(op)) *static_cast<T*>(q.ops_out->values[static_cast<int>(op)]) = value;
        };
        put(xreduce::Op::mean, xreduce::ops::MomentsOp<T, xreduce::Op::mean>::finish(a, args));
        put(xreduce::Op::var, xreduce::ops::MomentsOp<T, xreduce::Op::var>::finish(a, args));
        put(xreduce::Op::std, xreduce::ops::MomentsOp<T, xreduce::Op::std>::finish(a, args));
        return xreduce::Result{};
      } else {
        return xreduce::ops::visit_statistic<T>(q.op, [&](auto f) {
          using F = decltype(f);
          auto a = F::identity();
          for (std::size_t i = 0; i < q.count; ++i) a = f(a, F::lift(static_cast<const T*>(q.data)[i], i));
          const double value = F::value(a, xreduce::ops::FinishArgs{q.correction});
          xreduce::Result r{xreduce::wide_results(o) ? xreduce::Scalar(value) : xreduce::Scalar(static_cast<T>(value)), {}, {}};
          if constexpr (std::is_same_v<decltype(a), xreduce::Moments>) r.moments = a;
          return r;
        });
      }
    });
  }
};
}  // namespace

extern "C" XREDUCE_PLUGIN_EXPORT std::int32_t xreduce_plugin_init_v3(std::uint32_t abi, xreduce_plugin_v3* out, char* m, size_t n) {
  static xreduce::plugin::Exporter exporter("statistic", [] {
    std::vector<xreduce::plugin::Entry> v;
    v.push_back({std::make_unique<Variance>(), -10});
    return v;
  });
  return exporter.init(abi, out, m, n);
}
