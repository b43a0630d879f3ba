#pragma once
// Loads plugin libraries once per process and wraps their C backends as Reducers.

#include <filesystem>
#include <memory>
#include <vector>

#include "xreduce/plugin.h"
#include "xreduce/reducer.hpp"

namespace xreduce::detail {

struct LoadedPlugin {
  std::filesystem::path path;
  xreduce_plugin_v2 table;                    // points into the library, which is never unloaded
  const xreduce_memory_v1* memory = nullptr;  // its pinned-memory service, if it has one
};

//! dlopens `library` (once per process: later calls return the same plugin) and checks its
//! entry point and ABI version. Throws Error(plugin) with a message naming the file.
const LoadedPlugin& load_plugin_library(const std::filesystem::path& library);

//! A Reducer that forwards to one backend of a plugin's C table.
std::unique_ptr<Reducer> make_plugin_reducer(const xreduce_backend_v2& backend);

}  // namespace xreduce::detail
