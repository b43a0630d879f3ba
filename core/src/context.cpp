#include "xreduce/context.hpp"

#include <algorithm>

#include "xreduce/backend/dispatcher.hpp"
#include "xreduce/error.hpp"
#include "xreduce/backend/registry.hpp"

namespace xreduce {

struct Context::Impl {
  explicit Impl(Config c) : config(std::move(c)), notes(config.notes) { registry.prefer(config.dispatch); }
  Config config;
  Registry registry;
  Dispatcher dispatcher{registry, config.dispatch};  //!< made once: "auto" runs it on every call
  std::vector<std::string> notes;
};

Context::Context(Config config) : impl_(std::make_unique<Impl>(std::move(config))) {
  impl_->registry.add_builtin_backends();
  std::vector<std::filesystem::path> places;
  if (auto here = core_library_directory(); !here.empty()) places.push_back(here);
  places.insert(places.end(), impl_->config.plugin_path.begin(), impl_->config.plugin_path.end());
  impl_->registry.load_plugins(places);
  configure_backends();
}

Context::Context(Empty, Config config) : impl_(std::make_unique<Impl>(std::move(config))) {}
Context::~Context() = default;

Registry& Context::registry() { return impl_->registry; }
const Registry& Context::registry() const { return impl_->registry; }
const Dispatcher& Context::dispatcher() const { return impl_->dispatcher; }
const Config& Context::config() const { return impl_->config; }
const std::vector<std::string>& Context::notes() const { return impl_->notes; }

void Context::configure_backends() {
  // Backends the dispatch config names must exist: a misspelt name would otherwise be passed
  // over in silence, and auto would run another backend than the one the file asks for.
  // The defaults name backends too (openmp, tbb), which a build may leave out: only a file's names
  // must exist; a default that does not is passed over for the highest priority.
  const DispatchConfig& d = impl_->config.dispatch;
  const auto& from_file = impl_->config.dispatch_origins;
  for (const auto& [key, name] : {std::pair{"parallel_backend", &d.parallel_backend}, std::pair{"parallel_backend_large", &d.parallel_backend_large}})
    if (!name->empty() && from_file.contains(std::string_view(key)) && !impl_->registry.find(*name)) {
      std::string valid;
      for (const auto& n : impl_->registry.names()) valid += (valid.empty() ? "" : ", ") + n;
      throw Error(ErrorCode::config, "config: [dispatch] names backend '" + *name +
                                         "', which is not registered here; valid names: " + valid);
    }
  const auto& tables = impl_->config.backend_settings;
  const auto& entries = impl_->registry.entries();
  impl_->notes = impl_->config.notes;
  try {
    for (const auto& [name, settings] : tables) {
      // A plugin's table is shared by its backends: each key must be one that some backend of it reads.
      std::vector<SettingInfo> known;
      bool used = false;
      for (const auto& e : entries)
        if (e.family == name || e.reducer->name() == name) {
          used = true;
          for (SettingInfo& info : e.reducer->settings()) known.push_back(std::move(info));
        }
      if (!used)
        impl_->notes.push_back("[backends." + name + "]: no loaded backend or plugin is named '" + name +
                               "'; its settings are not used");
      else
        settings.check_keys(known, "[backends." + name + "]");
    }
    for (const auto& e : entries) {
      const std::string name(e.reducer->name());
      Settings mine;
      if (auto family = tables.find(e.family); family != tables.end() && e.family != name)
        mine = family->second.only(e.reducer->settings());
      if (auto own = tables.find(name); own != tables.end()) mine.merge(own->second);
      if (mine.empty()) continue;
      try {
        e.reducer->configure(mine);
      } catch (const Error& error) {
        // A plugin's message cannot know where its values came from: say it here.
        std::string given;
        for (const auto& [key, value] : mine.entries())
          given += (given.empty() ? "" : ", ") + key + " = " + value.text + " at " + value.origin;
        throw Error(error.code(), std::string(error.what()) + " (backend '" + name + "', given " + given + ")");
      }
    }
  } catch (const Error& error) {
    throw Error(ErrorCode::config, std::string("config: ") + error.what());
  }
}

std::string Context::backend_for(const Options& options) const {
  return options.backend.empty() ? impl_->config.backend : options.backend;
}

Residency Context::locate(const Request& q) const {
  if (q.memory == Memory::device) return {Memory::device, false};
  if (!q.data) return {Memory::host, false};
  // Host data the caller vouches for: whether it is pinned only matters from the smallest GPU or
  // CPU+GPU threshold on, and asking the driver costs more than reducing a small array.
  if (q.memory == Memory::host) {
    std::uint64_t elements = q.count;
    if (q.view.rank > 0) {  // a view's size, short of what the address space holds
      elements = 1;
      for (std::size_t k = 0; k < q.view.rank && k < kMaxRank; ++k)
        elements = q.view.shape[k] <= 0 ? 0 : std::min<std::uint64_t>(elements * static_cast<std::uint64_t>(q.view.shape[k]), std::uint64_t{1} << 62);
    }
    const DispatchConfig& d = impl_->config.dispatch;
    bool matters = false;
    for (std::uint64_t t : {d.gpu_min_count_pinned, d.gpu_min_count_pageable, d.cpu_gpu_min_count_pinned, d.cpu_gpu_min_count_pageable})
      matters = matters || (t != 0 && elements >= t);
    if (!matters) return {Memory::host, false};
  }
  const Registry::Location where = impl_->registry.where(q.data);
  const Memory memory = q.memory == Memory::automatic ? where.memory : q.memory;
  return {memory, memory == Memory::host && where.pinned};
}

Context::Selection Context::resolve(const Request& request, const Options& options) const {
  Request q = request;
  const Residency where = locate(q);
  q.memory = where.memory;
  const std::string name = backend_for(options);
  if (name == "auto") {
    const Accuracy accuracy = options.accuracy.value_or(impl_->config.accuracy);
    Dispatcher::Choice c = impl_->dispatcher.choose(Workload::of(canonical(q), where.pinned, accuracy, options.result_dtype));
    return {c.reducer, std::move(c.reason)};
  }
  const std::string source = options.backend.empty() ? impl_->config.backend_source : "the caller";
  try {
    return {&impl_->registry.get(name), "named by " + source};
  } catch (const Error& e) {
    throw Error(e.code(), std::string(e.what()) + " (the name came from " + source + ")");
  }
}

Result Context::reduce(const Request& request, const Options& options) {
  Request q = request;
  const Residency where = locate(q);
  q.memory = where.memory;
  // No reasons built on this path: "auto" and a named backend both cost a lookup. The options
  // are copied only where the config fills them in (a copy is a third of a small call's cost).
  const Config& config = impl_->config;
  const Accuracy accuracy = options.accuracy.value_or(config.accuracy);
  const std::string& name = options.backend.empty() ? config.backend : options.backend;
  const bool automatic = name == "auto";
  Reducer* r = !automatic      ? impl_->registry.find(name)
               : q.view.rank > 0 ? &impl_->dispatcher.pick(Workload::of(canonical(q), where.pinned, accuracy, options.result_dtype))
                                 : &impl_->dispatcher.pick(Workload::of(q, where.pinned, accuracy, options.result_dtype));
  if (r == nullptr) r = resolve(q, options).reducer;  // throws, naming the valid backends and the name's source
  const bool fill_threads = options.threads == 0 && config.threads != 0;
  const bool fill_accuracy = !options.accuracy && accuracy != Accuracy::standard;  // unset is standard to a backend
  const bool trim_settings = automatic && !options.settings.empty();
  if (!fill_threads && !fill_accuracy && !trim_settings) return r->reduce(q, options);
  Options o = options;
  if (fill_threads) o.threads = config.threads;
  o.accuracy = accuracy;
  if (trim_settings) o.settings = o.settings.only(r->settings());
  return r->reduce(q, o);
}

Context& default_context() {
  static Context context;
  return context;
}

Result reduce(const Request& request, const Options& options) { return default_context().reduce(request, options); }

}  // namespace xreduce
