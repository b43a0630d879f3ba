#pragma once
// The backends under test, shared by the conformance test files: XREDUCE_TEST_BACKENDS=a,b,prefix*
// narrows the run; backends that cannot run here are reported once and skipped.

#include <doctest/doctest.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "xreduce/xreduce.hpp"

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

//! The backends under test that can run here; the others are reported once and skipped.
inline std::vector<xr::Reducer*> backends() {
  static std::vector<xr::Reducer*> runnable = [] {
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
  return r.capabilities().accepts(xr::Memory::host) ? xr::Memory::host : xr::Memory::device;
}

//! XREDUCE_TEST_QUICK=1 (the compute-sanitizer runs, where every access is checked and a run
//! is a hundred times slower): fewer sizes and patterns, no 2^31 case.
inline bool quick() {
  const char* q = std::getenv("XREDUCE_TEST_QUICK");
  return q != nullptr && *q != '\0' && *q != '0';
}

}  // namespace xreduce::test
