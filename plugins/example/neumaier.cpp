// An example plugin: `example.neumaier`, a single-thread Neumaier-compensated sum of f32 and f64,
// of single values or of records (column by column).
// It shows the whole of what a plugin needs: a Reducer, and the entry point that exports it.

#include <cmath>
#include <memory>
#include <vector>

#include "xreduce/plugin.hpp"

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

 protected:
  // The core has already checked the request: count > 0, aligned host data, a supported dtype.
  xreduce::Result do_reduce(const xreduce::Request& q, const xreduce::Options&) override {
    xreduce::Result r;
    for (std::size_t j = 0; j < q.width; ++j) {  // column j of the records; width 1: the whole array
      if (q.dtype == xreduce::DType::f32)
        r.value = xreduce::Scalar(static_cast<float>(sum(static_cast<const float*>(q.data) + j, q.count, q.width)));
      else
        r.value = xreduce::Scalar(sum(static_cast<const double*>(q.data) + j, q.count, q.width));
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
  static double sum(const T* x, std::size_t n, std::size_t stride) {
    double s = 0, c = 0;
    for (std::size_t i = 0; i < n; ++i) {
      double v = x[i * stride], t = s + v;
      c += std::fabs(s) >= std::fabs(v) ? (s - t) + v : (v - t) + s;
      s = t;
    }
    return std::isfinite(s) ? s + c : s;
  }
};

}  // namespace

extern "C" XREDUCE_PLUGIN_EXPORT std::int32_t xreduce_plugin_init_v1(std::uint32_t host_abi, xreduce_plugin_v1* out,
                                                                     char* message, size_t message_size) {
  static xreduce::plugin::Exporter exporter("example", [] {
    std::vector<xreduce::plugin::Entry> backends;
    backends.push_back({std::make_unique<NeumaierSum>(), 10});
    return backends;
  });
  return exporter.init(host_abi, out, message, message_size);
}
