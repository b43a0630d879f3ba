#pragma once
//! The set of reducers a Context can use: built-in ones registered explicitly, and those of
//! plugins loaded with dlopen.

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "xreduce/plugin.h"
#include "xreduce/reducer.hpp"

namespace xreduce {

class Registry {
 public:
  struct Entry {
    Reducer* reducer;
    int priority;        //!< higher is preferred by the dispatcher among equals
    std::string origin;  //!< "built-in" or the plugin's path
  };
  //! What happened to one plugin file: loaded, or why not.
  struct PluginReport {
    std::filesystem::path path;
    bool loaded = false;
    std::string message;  //!< plugin name and backends, or the reason it was refused
  };

  Registry();
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  //! Adds a reducer. Throws Error(invalid_argument) if the name is taken or empty.
  void add(std::unique_ptr<Reducer> reducer, int priority, std::string origin = "built-in");
  //! Registers the backends compiled into the library (sequential, tbb, openmp, ...).
  void add_builtin_backends();

  //! Loads one plugin library and returns the names of the backends it added. Throws
  //! Error(plugin) with the reason; a plugin stays loaded.
  std::vector<std::string> load_plugin(const std::filesystem::path& library);
  //! Loads every `libxreduce_*.so` in each folder (files are loaded as they are). Never throws:
  //! the outcome of each file is in plugin_reports().
  void load_plugins(const std::vector<std::filesystem::path>& places);
  const std::vector<PluginReport>& plugin_reports() const { return reports_; }

  //! nullptr if unknown.
  Reducer* find(std::string_view name) const;
  //! Throws Error(unknown_backend) listing the registered names.
  Reducer& get(std::string_view name) const;
  //! All entries, highest priority first (ties by name); kept in that order as they are added.
  const std::vector<Entry>& entries() const;
  //! The available reducers, in entries() order, that do (dtype, op) exactly, read `memory`, and
  //! reduce records if `records`: what the dispatcher chooses among. Worked out once per
  //! combination (availability included) and kept until the next add(), so that "auto" costs a
  //! lookup rather than a walk over every backend. Thread-safe; the reference lives until add().
  struct Candidate {
    Reducer* reducer;
    Engine engine;
  };
  const std::vector<Candidate>& candidates(DType dtype, Op op, Memory memory, bool records) const;
  std::vector<std::string> names() const;

  //! Where a pointer lives, asking every plugin that can tell: host (pageable) if none claims it.
  struct Location {
    Memory memory = Memory::host;
    bool pinned = false;  //!< page-locked host memory
  };
  Location where(const void* pointer) const;
  Memory locate(const void* pointer) const { return where(pointer).memory; }

  //! The first loaded plugin's pinned-memory service (xreduce/plugin.h), or nullptr if no plugin
  //! offers one. PinnedBuffer and PinnedRegion (xreduce/pinned.hpp) are the way to use it.
  const xreduce_memory_v1* memory_service() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::vector<PluginReport> reports_;
};

//! The folder of the loaded core library (or of the executable, in a static build):
//! plugins installed beside it are found without configuration.
std::filesystem::path core_library_directory();

}  // namespace xreduce
