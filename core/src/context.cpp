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
  if (q.memory == Memory::automatic) q.memory = q.data ? registry_.locate(q.data) : Memory::host;
  const std::string name = backend_for(options);
  if (name == "auto") return Dispatcher(registry_, config_.dispatch).choose(q, pinned_host(q));
  const std::string source = options.backend.empty() ? config_.backend_source : "the caller";
  try {
    return {&registry_.get(name), "named by " + source};
  } catch (const Error& e) {
    throw Error(e.code(), std::string(e.what()) + " (the name came from " + source + ")");
  }
}

Result Context::reduce(const Request& request, const Options& options) {
  Request q = request;
  if (q.memory == Memory::automatic) q.memory = q.data ? registry_.locate(q.data) : Memory::host;
  Options o = options;
  if (o.threads == 0) o.threads = config_.threads;
  if (o.gpu_fraction == 0) o.gpu_fraction = pinned_host(q) ? config_.hybrid.gpu_fraction_pinned : config_.hybrid.gpu_fraction_pageable;
  return resolve(q, o).reducer->reduce(q, o);
}

bool Context::pinned_host(const Request& q) const {
  return q.memory != Memory::device && q.data && registry_.is_pinned(q.data);
}

Context& default_context() {
  static Context context;
  return context;
}

Result reduce(const Request& request, const Options& options) { return default_context().reduce(request, options); }

}  // namespace xreduce
