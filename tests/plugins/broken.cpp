// A backend that claims exact f32 sums and answers one too many: validation must catch it.
#include <memory>
#include <stdexcept>
#include <vector>

#include "xreduce/backend/plugin.hpp"

namespace {
class OffByOne final : public xreduce::Reducer {
 public:
  std::string_view name() const override { return "test.off_by_one"; }
  xreduce::Capabilities capabilities() const override {
    return xreduce::Capabilities(xreduce::Engine::cpu_serial)
        .add(xreduce::FeatureSet().dtypes({xreduce::DType::f32}).ops({xreduce::Op::sum}).layouts({xreduce::Layout::all}));
  }
  xreduce::Availability available() const override { return xreduce::Availability::yes(); }

 protected:
  xreduce::Result do_reduce(const xreduce::Request& q, const xreduce::Options&) override {
    double s = 1;
    for (std::size_t i = 0; i < q.count; ++i) s += static_cast<const float*>(q.data)[i];
    return {xreduce::Scalar(static_cast<float>(s)), {}, {}};
  }
};
// A backend whose reduce throws something that is no xreduce::Error: the plugin boundary must
// turn it into an error code, and the caller into an Error(internal) with the message.
class Throws final : public xreduce::Reducer {
 public:
  std::string_view name() const override { return "test.throws"; }
  xreduce::Capabilities capabilities() const override {
    return xreduce::Capabilities(xreduce::Engine::cpu_serial)
        .add(xreduce::FeatureSet().dtypes({xreduce::DType::i32}).ops({xreduce::Op::min}).layouts({xreduce::Layout::all}));
  }
  xreduce::Availability available() const override { return xreduce::Availability::yes(); }

 protected:
  xreduce::Result do_reduce(const xreduce::Request&, const xreduce::Options&) override {
    throw std::logic_error("a bug in the plugin");
  }
};
}  // namespace

extern "C" XREDUCE_PLUGIN_EXPORT std::int32_t xreduce_plugin_init_v3(std::uint32_t abi, xreduce_plugin_v3* out, char* m, size_t n) {
  static xreduce::plugin::Exporter exporter("broken", [] {
    std::vector<xreduce::plugin::Entry> v;
    v.push_back({std::make_unique<OffByOne>(), -10});
    v.push_back({std::make_unique<Throws>(), -10});
    return v;
  });
  return exporter.init(abi, out, m, n);
}
