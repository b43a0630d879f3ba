#include "xreduce/context.hpp"

#include "xreduce/error.hpp"

namespace xreduce {

Context::Context(Config config) : config_(std::move(config)) {
  registry_.add_builtin_backends();
  std::vector<std::filesystem::path> places;
  if (auto here = core_library_directory(); !here.empty()) places.push_back(here);
  places.insert(places.end(), config_.plugin_path.begin(), config_.plugin_path.end());
  registry_.load_plugins(places);
}

Context::Context(Empty, Config config) : config_(std::move(config)) {}

std::string Context::backend_for(const Options& options) const {
  return options.backend.empty() ? config_.backend : options.backend;
}

Dispatcher::Choice Context::resolve(Request q, const Options& options) const {
  const bool pinned = resolve_memory(q);
  return choose(q, options, pinned);
}

bool Context::resolve_memory(Request& q) const {
  if (q.memory == Memory::device || !q.data) {
    if (q.memory == Memory::automatic) q.memory = Memory::host;
    return false;
  }
  // Host data the caller vouches for: whether it is pinned only matters from the smallest GPU or
  // hybrid threshold on, and asking the driver costs more than reducing a small array.
  if (q.memory == Memory::host) {
    const std::uint64_t elements = static_cast<std::uint64_t>(q.count) * q.width;
    const DispatchConfig& d = config_.dispatch;
    bool matters = false;
    for (std::uint64_t t : {d.gpu_min_count_pinned, d.gpu_min_count_pageable, d.hybrid_min_count_pinned, d.hybrid_min_count_pageable})
      matters = matters || (t != 0 && elements >= t);
    if (!matters) return false;
  }
  const Registry::Location where = registry_.where(q.data);
  if (q.memory == Memory::automatic) q.memory = where.memory;
  return q.memory == Memory::host && where.pinned;
}

Dispatcher::Choice Context::choose(const Request& q, const Options& options, bool pinned) const {
  const std::string name = backend_for(options);
  if (name == "auto") return dispatcher_.choose(q, pinned);
  const std::string source = options.backend.empty() ? config_.backend_source : "the caller";
  try {
    return {&registry_.get(name), "named by " + source};
  } catch (const Error& e) {
    throw Error(e.code(), std::string(e.what()) + " (the name came from " + source + ")");
  }
}

Result Context::reduce(const Request& request, const Options& options) {
  Request q = request;
  const bool pinned = resolve_memory(q);
  Options o = options;
  if (o.threads == 0) o.threads = config_.threads;
  if (o.gpu_fraction == 0) o.gpu_fraction = pinned ? config_.hybrid.gpu_fraction_pinned : config_.hybrid.gpu_fraction_pageable;
  if (o.cpu_backend.empty()) o.cpu_backend = config_.dispatch.parallel_backend_for(static_cast<std::uint64_t>(q.count) * q.width);
  // No reasons built on this path: "auto" and a named backend both cost a lookup.
  const std::string& name = options.backend.empty() ? config_.backend : options.backend;
  Reducer* r = name == "auto" ? &dispatcher_.pick(q, pinned) : registry_.find(name);
  if (r == nullptr) r = choose(q, o, pinned).reducer;  // throws, naming the valid backends and the name's source
  return r->reduce(q, o);
}

Context& default_context() {
  static Context context;
  return context;
}

Result reduce(const Request& request, const Options& options) { return default_context().reduce(request, options); }

}  // namespace xreduce
