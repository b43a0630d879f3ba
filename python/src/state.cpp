#include "state.hpp"

#include "xreduce/backend/registry.hpp"

namespace xreduce::python {

State& State::get() {
  // Leaked on purpose: plugins (the CUDA module) must not be torn down after Python's exit has
  // begun unloading what they use.
  static State* state = new State;
  return *state;
}

std::shared_ptr<Context> State::context() {
  std::lock_guard lock(mutex_);
  if (!config_) config_ = std::make_unique<Config>(Config::load());
  if (!context_) context_ = std::make_shared<Context>(*config_);
  return context_;
}

Config State::config() {
  std::lock_guard lock(mutex_);
  if (!config_) config_ = std::make_unique<Config>(Config::load());
  return *config_;
}

void State::set_config(Config config) {
  // Made before it replaces anything: a bad setting is reported now, and the old one stays.
  auto context = std::make_shared<Context>(config);
  if (config.backend != "auto") context->registry().get(config.backend);  // throws unknown_backend, naming the valid ones
  std::lock_guard lock(mutex_);
  config_ = std::make_unique<Config>(std::move(config));
  context_ = std::move(context);
}

}  // namespace xreduce::python
