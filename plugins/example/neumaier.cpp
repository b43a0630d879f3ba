// An example plugin: `example.neumaier`, a single-thread Neumaier-compensated sum of f32 and f64,
// of single values or of records (column by column).
// It shows the whole of what a plugin needs: a Reducer, and the entry point that exports it; and
// how a backend takes settings of its own: it declares them (settings()), and takes them from
// the config file ([backends.example] for every backend of this plugin, or
// [backends."example.neumaier"]) in configure(), and per call from Options::settings.

#include <cmath>
#include <memory>
#include <vector>

#include "xreduce/backend/plugin.hpp"

namespace {

class NeumaierSum final : public xreduce::Reducer {
 public:
  std::string_view name() const override { return "example.neumaier"; }
  xreduce::Capabilities capabilities() const override {
    using xreduce::DType, xreduce::Op, xreduce::Support;
    return xreduce::Capabilities(xreduce::Engine::cpu_serial)
        .set(DType::f32, Op::sum, Support::exact)
        .set(DType::f64, Op::sum, Support::exact)
        .accept_records();
  }
  xreduce::Availability available() const override { return xreduce::Availability::yes(); }
  std::vector<xreduce::SettingInfo> settings() const override {
    return {{"compensation", "neumaier", "\"neumaier\" (compensated) or \"none\" (a plain double sum, to compare)"}};
  }
  void configure(const xreduce::Settings& s) override { compensated_ = compensated(s, compensated_); }

 protected:
  // The core has already checked the request: count > 0, aligned host data, a supported dtype,
  // and only declared settings.
  xreduce::Result do_reduce(const xreduce::Request& q, const xreduce::Options& o) override {
    const bool compensate = compensated(o.settings, compensated_);
    xreduce::Result r;
    for (std::size_t j = 0; j < q.width; ++j) {  // column j of the records; width 1: the whole array
      if (q.dtype == xreduce::DType::f32)
        r.value = xreduce::Scalar(static_cast<float>(sum(static_cast<const float*>(q.data) + j, q.count, q.width, compensate)));
      else
        r.value = xreduce::Scalar(sum(static_cast<const double*>(q.data) + j, q.count, q.width, compensate));
      if (q.width > 1) r.values.push_back(r.value);
    }
    if (q.width > 1) r.value = r.values.front();
    return r;
  }

 private:
  // Neumaier's variant of Kahan summation: the compensation also catches addends larger than
  // the running sum. f32 data is summed in double. Once the sum is infinite or NaN the
  // compensation is meaningless (inf - inf), so the plain sum is the answer.
  template <class T>
  static double sum(const T* x, std::size_t n, std::size_t stride, bool compensate) {
    double s = 0, c = 0;
    for (std::size_t i = 0; i < n; ++i) {
      double v = x[i * stride], t = s + v;
      if (compensate) c += std::fabs(s) >= std::fabs(v) ? (s - t) + v : (v - t) + s;
      s = t;
    }
    return std::isfinite(s) ? s + c : s;
  }

  //! The "compensation" setting of `s`, else `otherwise`.
  static bool compensated(const xreduce::Settings& s, bool otherwise) {
    const auto v = s.text("compensation");
    if (!v) return otherwise;
    if (*v != "neumaier" && *v != "none")
      throw xreduce::Error(xreduce::ErrorCode::invalid_argument, "example.neumaier: compensation '" + *v +
                                                                     "' (from " + s.find("compensation")->origin +
                                                                     "): choose \"neumaier\" or \"none\"");
    return *v == "neumaier";
  }

  bool compensated_ = true;  // from the config file
};

}  // namespace

extern "C" XREDUCE_PLUGIN_EXPORT std::int32_t xreduce_plugin_init_v2(std::uint32_t host_abi, xreduce_plugin_v2* out,
                                                                     char* message, size_t message_size) {
  static xreduce::plugin::Exporter exporter("example", [] {
    std::vector<xreduce::plugin::Entry> backends;
    backends.push_back({std::make_unique<NeumaierSum>(), 10});
    return backends;
  });
  return exporter.init(host_abi, out, message, message_size);
}
