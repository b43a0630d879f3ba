#pragma once
// Loads plugin libraries once per process and wraps their C backends as Reducers.

#include <filesystem>
#include <memory>
#include <vector>

#include "xreduce/backend/plugin.h"
#include "xreduce/backend/reducer.hpp"

namespace xreduce::detail {

struct LoadedPlugin {
  std::filesystem::path path;
  xreduce_plugin_v2 table;                    // points into the library, which is never unloaded
  const xreduce_memory_v1* memory = nullptr;  // its pinned-memory service, if it has one
};

//! Checks what a plugin's init filled in: ABI version, table size, and that every backend has a
//! name and functions and claims only engines, support levels and memory spaces that exist.
//! Throws Error(plugin) naming `library` and what is wrong. (The loader runs it on every plugin;
//! the plugin-table fuzzer, tests/fuzz/, runs it on tables of any content.)
void check_plugin_table(const std::filesystem::path& library, const xreduce_plugin_v2& table);

//! dlopens `library` (once per process: later calls return the same plugin) and checks its
//! entry point and ABI version. Throws Error(plugin) with a message naming the file.
const LoadedPlugin& load_plugin_library(const std::filesystem::path& library);

//! A Reducer that forwards to one backend of a plugin's C table.
std::unique_ptr<Reducer> make_plugin_reducer(const xreduce_backend_v2& backend);

}  // namespace xreduce::detail
