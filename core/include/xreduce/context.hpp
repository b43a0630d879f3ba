#pragma once
//! A Context owns a registry, a configuration and a dispatcher; the free functions use the
//! process-wide default one.

#include <memory>
#include <span>

#include "xreduce/config.hpp"
#include "xreduce/dispatcher.hpp"
#include "xreduce/registry.hpp"

namespace xreduce {

class Context {
 public:
  //! Built-in backends, plus the plugins beside the core library and on config.plugin_path.
  explicit Context(Config config = Config::load());
  //! An empty registry, for tests and embedders that register their own reducers.
  struct Empty {};
  Context(Empty, Config config);

  Registry& registry() { return registry_; }
  const Registry& registry() const { return registry_; }
  const Config& config() const { return config_; }

  //! The backend name that applies to `options`: Options > XREDUCE_BACKEND > file > "auto".
  std::string backend_for(const Options& options) const;
  //! The reducer that would run `request` with `options`, and why. Resolves Memory::automatic.
  Dispatcher::Choice resolve(Request request, const Options& options) const;
  //! Runs one request. Throws Error.
  Result reduce(const Request& request, const Options& options = {});

 private:
  //! Resolves Memory::automatic; returns whether the data is pinned host memory.
  bool resolve_memory(Request& q) const;
  Dispatcher::Choice choose(const Request& q, const Options& options, bool pinned) const;
  Config config_;
  Registry registry_;
  Dispatcher dispatcher_{registry_, config_.dispatch};  //!< made once: "auto" runs it on every call
};

//! The process-wide context, made on first use from Config::load(). Thread-safe to use.
Context& default_context();

//! Reduces with the default context.
Result reduce(const Request& request, const Options& options = {});

//! Typed front end: `xreduce::reduce(std::span<const float>(v), xreduce::Op::sum)`.
template <class T>
Result reduce(std::span<const T> data, Op op, const Options& options = {}) {
  return reduce(Request{data.data(), data.size(), dtype_of<T>(), op, Memory::automatic}, options);
}

}  // namespace xreduce
