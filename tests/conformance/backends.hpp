#pragma once
// The backends under test, shared by the conformance test files: XREDUCE_TEST_BACKENDS=a,b,prefix*
// narrows the run; backends that cannot run here are reported once and skipped.

#include <doctest/doctest.h>

#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "xreduce/xreduce.hpp"
#include "xreduce/backend/registry.hpp"
#include "xreduce/backend/features.hpp"
#include "xreduce/backend/reducer.hpp"

namespace xreduce::test {
namespace xr = xreduce;

inline bool selected(const std::string& name) {
  const char* filter = std::getenv("XREDUCE_TEST_BACKENDS");
  if (filter == nullptr || *filter == '\0') return true;
  std::stringstream list(filter);
  for (std::string item; std::getline(list, item, ',');) {
    if (!item.empty() && item.back() == '*' ? name.rfind(item.substr(0, item.size() - 1), 0) == 0 : name == item)
      return true;
  }
  return false;
}

//! Stands in for a GPU backend on machines without one, so that `hybrid`'s sharing of work between
//! two engines runs through the whole suite there too: an Engine::gpu backend that reads host
//! memory and hands the work to `sequential`.
class StandInGpu final : public xr::Reducer {
  // What the CUDA backends that stream host data do: flat arrays and records, exact sums of flat ones.
  static constexpr xr::Capabilities kCaps =
      xr::Capabilities(xr::Engine::gpu)
          .add(xr::FeatureSet().every_dtype().ops({xr::Op::sum, xr::Op::prod, xr::Op::min, xr::Op::max, xr::Op::argmin, xr::Op::argmax})
                   .layouts({xr::Layout::all}))
          .add(xr::FeatureSet().every_dtype().ops({xr::Op::sum, xr::Op::prod, xr::Op::min, xr::Op::max}).layouts({xr::Layout::outer}))
          .add(xr::FeatureSet().dtypes({xr::DType::f32, xr::DType::f64, xr::DType::f16, xr::DType::bf16}).ops({xr::Op::sum}).layouts({xr::Layout::all}).only_exact_sums());

 public:
  explicit StandInGpu(xr::Reducer& cpu) : cpu_(cpu) {}
  std::string_view name() const override { return "standin.gpu"; }
  xr::Capabilities capabilities() const override { return kCaps; }
  xr::Availability available() const override { return xr::Availability::yes(); }

 protected:
  // The core hands it a canonical request (with places for its results, records' in `out`); the
  // CPU backend it calls fills them through its own reduce.
  xr::Result do_reduce(const xr::Request& q, const xr::Options& o) override { return cpu_.reduce(q, o); }

 private:
  xr::Reducer& cpu_;
};

//! Adds StandInGpu to the default context when no GPU backend that reads host memory can run.
inline void add_gpu_stand_in() {
  xr::Registry& registry = xr::default_context().registry();
  for (const auto& e : registry.entries()) {
    const xr::Capabilities c = e.reducer->capabilities();
    if (c.engine() == xr::Engine::gpu && c.reads(xr::Memory::host) && e.reducer->available()) return;
  }
  if (xr::Reducer* cpu = registry.find("sequential")) registry.add(std::make_unique<StandInGpu>(*cpu), 1, "the test suite");
}

//! The backends under test that can run here; the others are reported once and skipped.
inline std::vector<xr::Reducer*> backends() {
  static std::vector<xr::Reducer*> runnable = [] {
    add_gpu_stand_in();
    std::vector<xr::Reducer*> v;
    for (const auto& e : xr::default_context().registry().entries()) {
      if (!selected(std::string(e.reducer->name()))) continue;
      if (xr::Availability a = e.reducer->available(); !a) {
        MESSAGE("skipping backend '" << e.reducer->name() << "': unavailable: " << a.reason);
        continue;
      }
      v.push_back(e.reducer);
    }
    for (const auto& r : xr::default_context().registry().plugin_reports())
      if (!r.loaded) MESSAGE("plugin not loaded: " << r.message);
    return v;
  }();
  return runnable;
}

inline xr::Memory memory_for(const xr::Reducer& r) {
  return r.capabilities().reads(xr::Memory::host) ? xr::Memory::host : xr::Memory::device;
}

//! How well `r` does request `q` (run with `accuracy`): what Reducer::reduce checks.
inline xr::Support support_of(const xr::Reducer& r, const xr::Request& q, xr::Accuracy accuracy = xr::Accuracy::standard) {
  return r.capabilities().support(xr::features_of(xr::canonical(q), accuracy));
}

//! XREDUCE_TEST_QUICK=1 (the compute-sanitizer runs, where every access is checked and a run
//! is a hundred times slower, and the asan preset, four times slower): fewer sizes and patterns,
//! no 2^31 case. Every code path is still taken; the release run draws the full set of cases.
inline bool quick() {
  const char* q = std::getenv("XREDUCE_TEST_QUICK");
  return q != nullptr && *q != '\0' && *q != '0';
}

}  // namespace xreduce::test
