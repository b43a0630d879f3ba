#pragma once
// Loads plugin libraries once per process and wraps their C backends as Reducers: ABI 3 plugins,
// and ABI 2 ones through an adapter (plugin_v2.cpp) that hands them requests in their own form.

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "xreduce/backend/plugin.h"
#include "xreduce/backend/reducer.hpp"
#include "xreduce/error.hpp"

namespace xreduce::detail {

//! An ErrorCode a plugin returned, or internal for one that is none.
ErrorCode plugin_error_code(std::int32_t code);

struct LoadedPlugin {
  std::filesystem::path path;
  std::uint32_t abi = XREDUCE_PLUGIN_ABI_VERSION;  // 3, or 2
  xreduce_plugin_v3 table{};                       // ABI 3; points into the library, never unloaded
  xreduce_plugin_v2 table_v2{};                    // ABI 2
  const xreduce_memory_v1* memory = nullptr;       // its pinned-memory service, if it has one
  const xreduce_device_memory_v1* device_memory = nullptr;  // its device-memory service, if it has one
  const char* name() const { return abi == 2 ? table_v2.name : table.name; }
  std::size_t backend_count() const { return abi == 2 ? table_v2.backend_count : table.backend_count; }
  const char* backend_name(std::size_t i) const { return abi == 2 ? table_v2.backends[i].name : table.backends[i].name; }
  int backend_priority(std::size_t i) const { return abi == 2 ? table_v2.backends[i].priority : table.backends[i].priority; }
  std::int32_t (*locate() const)(const void*) { return abi == 2 ? table_v2.locate : table.locate; }
};

//! Checks what a plugin's init filled in: ABI version, table size, and that every backend has a
//! name and functions and claims only engines, support levels, feature values and memory spaces
//! that exist. Throws Error(plugin) naming `library` and what is wrong. (The loader runs it on
//! every plugin; the plugin-table fuzzer, tests/fuzz/, runs it on tables of any content.)
void check_plugin_table(const std::filesystem::path& library, const xreduce_plugin_v3& table);
void check_plugin_table(const std::filesystem::path& library, const xreduce_plugin_v2& table);

//! dlopens `library` (once per process: later calls return the same plugin) and checks its
//! entry point and ABI version. Throws Error(plugin) with a message naming the file.
const LoadedPlugin& load_plugin_library(const std::filesystem::path& library);

//! What the Reducers of ABI 2 and ABI 3 backends share: the name, the settings parsed from the
//! table's text, and configure and available through its function pointers. `Table` is
//! xreduce_backend_v2 or _v3; each ABI's class adds its capabilities and do_reduce.
template <class Table>
class PluginReducerBase : public Reducer {
 public:
  PluginReducerBase(const Table& b, Capabilities caps) : b_(b), name_(b.name), caps_(caps) {
    if (b.settings_info) settings_ = settings_info_from_text(b.settings_info);
  }
  std::string_view name() const override { return name_; }
  Capabilities capabilities() const override { return caps_; }
  std::vector<SettingInfo> settings() const override { return settings_; }
  void configure(const Settings& s) override {
    if (!b_.configure) return;
    char message[1024] = {};
    const std::string text = s.to_text();
    if (std::int32_t code = b_.configure(b_.self, text.c_str(), message, sizeof message); code != 0)
      throw Error(plugin_error_code(code), message[0] ? message : "backend '" + name_ + "' refused its settings without a message");
  }
  Availability available() const override {
    char reason[512] = {};
    if (b_.available(b_.self, reason, sizeof reason)) return Availability::yes();
    return Availability::no(reason[0] ? reason : "the plugin gave no reason");
  }

 protected:
  Table b_;
  std::string name_;

 private:
  Capabilities caps_;
  std::vector<SettingInfo> settings_;
};

//! A Reducer that forwards to one backend of a plugin's C table.
std::unique_ptr<Reducer> make_plugin_reducer(const xreduce_backend_v3& backend);
//! The same for an ABI 2 backend: its capabilities from its support table and flags, and the
//! requests it declared handed to it in ABI 2's form (plugin_v2.cpp).
std::unique_ptr<Reducer> make_plugin_reducer(const xreduce_backend_v2& backend);

}  // namespace xreduce::detail
