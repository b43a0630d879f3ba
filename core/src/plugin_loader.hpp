#pragma once
// Loads plugin libraries once per process and wraps their C backends as Reducers: ABI 3 plugins,
// and ABI 2 ones through an adapter (plugin_v2.cpp) that hands them requests in their own form.

#include <filesystem>
#include <memory>
#include <vector>

#include "xreduce/backend/plugin.h"
#include "xreduce/backend/reducer.hpp"

namespace xreduce::detail {

struct LoadedPlugin {
  std::filesystem::path path;
  std::uint32_t abi = XREDUCE_PLUGIN_ABI_VERSION;  // 3, or 2
  xreduce_plugin_v3 table{};                       // ABI 3; points into the library, never unloaded
  xreduce_plugin_v2 table_v2{};                    // ABI 2
  const xreduce_memory_v1* memory = nullptr;       // its pinned-memory service, if it has one
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

//! A Reducer that forwards to one backend of a plugin's C table.
std::unique_ptr<Reducer> make_plugin_reducer(const xreduce_backend_v3& backend);
//! The same for an ABI 2 backend: its capabilities from its support table and flags, and the
//! requests it declared handed to it in ABI 2's form (plugin_v2.cpp).
std::unique_ptr<Reducer> make_plugin_reducer(const xreduce_backend_v2& backend);

//! An ErrorCode a plugin returned, or internal for one that is none.
ErrorCode plugin_error_code(std::int32_t code);

}  // namespace xreduce::detail
