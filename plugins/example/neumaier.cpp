// An example plugin: `example.neumaier`, a single-thread Neumaier-compensated sum of f32 and f64,
// of a flat array (layout all) or of records (layout outer: column by column).
// It shows the whole of what a plugin needs: a Reducer that says what it does (capabilities),
// and the entry point that exports it; and
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
    using xreduce::DType, xreduce::Layout, xreduce::Op;
    return xreduce::Capabilities(xreduce::Engine::cpu_serial)
        .add(xreduce::FeatureSet().dtypes({DType::f32, DType::f64}).ops({Op::sum}).layouts({Layout::all, Layout::outer}));
  }
  xreduce::Availability available() const override { return xreduce::Availability::yes(); }
  std::vector<xreduce::SettingInfo> settings() const override {
    return {{"compensation", "neumaier", "\"neumaier\" (compensated) or \"none\" (a plain double sum, to compare)"}};
  }
  void configure(const xreduce::Settings& s) override { compensated_ = compensated(s, compensated_); }

 protected:
  // The core has already checked the request: what the capabilities declare (so a flat array,
  // or records as a view of `count` rows of `width`), count > 0, aligned host data, and only
  // declared settings. A flat array's sum comes back as the value; records' column sums are
  // written to `out`, packed.
  xreduce::Result do_reduce(const xreduce::Request& q, const xreduce::Options& o) override {
    const bool compensate = compensated(o.settings, compensated_);
    const bool records = xreduce::layout_of(q) == xreduce::Layout::outer;
    const std::size_t width = records ? static_cast<std::size_t>(q.view.shape[1]) : 1;
    const std::size_t count = records ? static_cast<std::size_t>(q.view.shape[0]) : q.count;
    xreduce::Result r;
    for (std::size_t j = 0; j < width; ++j) {  // column j of the records; the whole array if flat
      const double s = q.dtype == xreduce::DType::f32 ? sum(static_cast<const float*>(q.data) + j, count, width, compensate)
                                                      : sum(static_cast<const double*>(q.data) + j, count, width, compensate);
      if (q.dtype == xreduce::DType::f32) put(r, q, records, j, static_cast<float>(s));
      else put(r, q, records, j, s);
    }
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

  template <class T>
  static void put(xreduce::Result& r, const xreduce::Request& q, bool records, std::size_t j, T value) {
    if (records) static_cast<T*>(q.out)[j] = value;
    else r.value = xreduce::Scalar(value);
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

extern "C" XREDUCE_PLUGIN_EXPORT std::int32_t xreduce_plugin_init_v3(std::uint32_t host_abi, xreduce_plugin_v3* out,
                                                                     char* message, size_t message_size) {
  static xreduce::plugin::Exporter exporter("example", [] {
    std::vector<xreduce::plugin::Entry> backends;
    backends.push_back({std::make_unique<NeumaierSum>(), 10});
    return backends;
  });
  return exporter.init(host_abi, out, message, message_size);
}
