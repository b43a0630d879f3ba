// libFuzzer target: the config reader (core/src/config.cpp) on text of any content: a clean
// Error(config) for anything malformed, never a crash; and what it accepts, its [backends.NAME]
// tables, reads back through the settings' own text form (the plugin ABI's) unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "xreduce/config.hpp"
#include "xreduce/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const xreduce::Config c = xreduce::Config::from_string(text, "fuzz.toml");
    for (const auto& [name, settings] : c.backend_settings) {
      const xreduce::Settings back = xreduce::Settings::from_text(settings.to_text(), "fuzz");
      if (back.entries().size() != settings.entries().size()) std::abort();
      for (const auto& [key, value] : settings.entries())
        if (!back.find(key) || back.find(key)->text != value.text) std::abort();
      for (const auto& [key, value] : settings.entries()) {  // the typed readers refuse cleanly
        try {
          (void)settings.number(key, 0, 1);
          (void)settings.integer(key, -5, 5);
        } catch (const xreduce::Error&) {
        }
      }
    }
  } catch (const xreduce::Error&) {
  }
  return 0;
}
