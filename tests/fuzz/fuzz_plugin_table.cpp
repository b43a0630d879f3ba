// libFuzzer target: the checks the plugin loader makes of what a plugin's init fills in
// (core/src/plugin_loader.cpp), on tables of any content: up to four backends with names,
// engines, support tables, memory masks and settings declarations drawn from the input. A table
// the checks accept becomes Reducers as the loader makes them, whose capabilities and settings
// are read; one they refuse is an Error(plugin). Never a crash.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "plugin_loader.hpp"
#include "xreduce/error.hpp"
#include "xreduce/settings.hpp"

namespace {

std::int32_t available(void*, char*, std::size_t) { return 1; }
std::int32_t reduce(void*, const xreduce_request_v2*, const xreduce_options_v2*, xreduce_result_v2*, char*, std::size_t) {
  return 0;
}

//! Takes bytes off the front of the input; zeros once it runs out.
struct Input {
  const std::uint8_t* data;
  std::size_t size;
  template <class T>
  T take() {
    T v{};
    const std::size_t n = std::min(sizeof v, size);
    std::memcpy(&v, data, n);
    data += n;
    size -= n;
    return v;
  }
  std::string text(std::size_t max) {
    const std::size_t n = std::min<std::size_t>(take<std::uint8_t>() % (max + 1), size);
    std::string s(reinterpret_cast<const char*>(data), n);
    data += n;
    size -= n;
    return s;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Input in{data, size};
  xreduce_plugin_v2 table{};
  table.abi_version = in.take<std::uint8_t>() % 4 == 0 ? in.take<std::uint32_t>() : XREDUCE_PLUGIN_ABI_VERSION;
  table.struct_size = in.take<std::uint8_t>() % 4 == 0 ? in.take<std::uint32_t>() : sizeof(xreduce_plugin_v2);
  const std::size_t count = in.take<std::uint8_t>() % 5;
  std::vector<std::string> names(count), infos(count);
  std::vector<xreduce_backend_v2> backends(count);
  for (std::size_t i = 0; i < count; ++i) {
    xreduce_backend_v2& b = backends[i];
    names[i] = in.text(24);
    infos[i] = in.text(64);
    b.name = in.take<std::uint8_t>() % 8 == 0 ? nullptr : names[i].c_str();
    b.priority = in.take<std::int32_t>();
    b.engine = in.take<std::int8_t>();
    for (auto& row : b.support)
      for (auto& level : row) level = in.take<std::uint8_t>() % 5;
    b.memory_mask = in.take<std::uint32_t>();
    b.available = in.take<std::uint8_t>() % 8 == 0 ? nullptr : &available;
    b.reduce = &reduce;
    b.settings_info = infos[i].c_str();
  }
  table.backend_count = count;
  table.backends = count > 0 && in.take<std::uint8_t>() % 8 != 0 ? backends.data() : nullptr;
  try {
    xreduce::detail::check_plugin_table("fuzz.so", table);
    for (std::size_t i = 0; i < count; ++i) {
      auto r = xreduce::detail::make_plugin_reducer(backends[i]);
      const xreduce::Capabilities caps = r->capabilities();
      for (xreduce::DType t : xreduce::all_dtypes)
        for (xreduce::Op op : xreduce::all_ops) (void)caps.support(t, op);
      (void)to_string(caps.engine());
      for (const xreduce::SettingInfo& s : r->settings()) (void)s.key.size();
    }
  } catch (const xreduce::Error&) {
  }
  return 0;
}
