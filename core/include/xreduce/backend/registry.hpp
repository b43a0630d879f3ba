#pragma once
//! The set of reducers a Context can use: built-in ones registered explicitly, and those of
//! plugins loaded with dlopen.

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "xreduce/backend/features.hpp"
#include "xreduce/backend/plugin.h"
#include "xreduce/backend/reducer.hpp"
#include "xreduce/config.hpp"

namespace xreduce {

//! What a backend is chosen for: every selection of a backend (the dispatcher's "auto", the
//! template APIs, a backend that delegates, calibration) describes its work this way and asks
//! Registry::best or the Dispatcher, so that all of them choose alike.
struct Workload {
  Features features;             //!< what kind of request (memory resolved: host or device)
  std::uint64_t elements = 0;    //!< elements read
  //! Rows of layout inner, segments of layout ragged: reductions of their own, which
  //! DispatchConfig::work weighs; 0 for the other layouts.
  std::uint64_t segments = 0;
  bool pinned = false;     //!< host data that is page-locked
  //! A user's operator through Reducer::run_chunks (the template API): the features do not apply.
  bool user_code = false;

  //! The workload of a canonical request whose memory is resolved (Context::locate).
  static Workload of(const Request& canonical, bool pinned = false, Accuracy accuracy = Accuracy::standard,
                     std::optional<DType> result = std::nullopt);
  //! Everything but the element and segment counts: what selects a registry's candidate list.
  std::uint64_t kind() const { return features.key() | (pinned ? 1u << 4 : 0u) | (user_code ? 1u << 5 : 0u); }
};

class Registry {
 public:
  struct Entry {
    Reducer* reducer;
    int priority;        //!< higher is preferred by the dispatcher among equals
    std::string origin;  //!< "built-in" or the plugin's path
    std::string family;  //!< the plugin's name ("cuda"), or the backend's own for built-in ones
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
  void add(std::unique_ptr<Reducer> reducer, int priority, std::string origin = "built-in", std::string family = {});
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
  //! Whether `reducer` can take `workload` now: it is available and does its features to the
  //! semantics table (Support::exact), or, for user code, runs host chunks. The one filter every
  //! selection uses.
  static bool fits(Reducer& reducer, const Workload& workload);
  //! The reducers that fit `workload`, in entries() order. Worked out once per kind of workload
  //! (availability included) and kept until the next add(), so that "auto" costs a lookup rather
  //! than a walk over every backend. Thread-safe; the reference lives until add().
  struct Candidate {
    Reducer* reducer;
    Engine engine;
  };
  const std::vector<Candidate>& candidates(const Workload& workload) const;
  //! The same, among the backends of `engine` only: the others are not asked whether they can run.
  const std::vector<Candidate>& candidates(const Workload& workload, Engine engine) const;
  //! The backend of `engine` to run `workload`: among those that fit, the preferred CPU-parallel
  //! backend for that many elements (DispatchConfig::parallel_backend_for, from prefer()), else
  //! the highest priority. nullptr if none fits.
  Reducer* best(Engine engine, const Workload& workload) const;
  //! Whether any backend of `engine` fits `workload`, asked afresh (no cached list): for a
  //! backend's available() that depends on others, which runs while the cached lists are made.
  bool any(Engine engine, const Workload& workload) const;
  //! Counts the changes that can change a choice (add(), prefer()): a choice remembered at one
  //! generation holds until the next.
  std::uint64_t generation() const noexcept;
  //! The preferences prefer() took (a DispatchConfig's defaults before).
  const DispatchConfig& preferences() const noexcept;
  //! Takes the CPU-parallel preferences of `dispatch` (a Context passes its config's, when it is
  //! made). Not to be called while other threads use the registry.
  void prefer(const DispatchConfig& dispatch);

  std::vector<std::string> names() const;

  //! Where a pointer lives, asking every plugin that can tell: host (pageable) if none claims it.
  struct Location {
    Memory memory = Memory::host;
    bool pinned = false;  //!< page-locked host memory
  };
  Location where(const void* pointer) const;

  //! The first loaded plugin's pinned-memory service (xreduce/backend/plugin.h), or nullptr if no plugin
  //! offers one. PinnedBuffer and PinnedRegion (xreduce/pinned.hpp) are the way to use it.
  const xreduce_memory_v1* memory_service() const;
  //! The first loaded plugin's device-memory service, or nullptr if no plugin offers one.
  //! DeviceBuffer (xreduce/device_buffer.hpp) is the way to use it.
  const xreduce_device_memory_v1* device_memory_service() const;

 private:
  const std::vector<Candidate>& candidates_of(const Workload& workload, std::optional<Engine> engine) const;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::vector<PluginReport> reports_;
};

//! The folder of the loaded core library (or of the executable, in a static build):
//! plugins installed beside it are found without configuration.
std::filesystem::path core_library_directory();

}  // namespace xreduce
