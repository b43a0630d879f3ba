#pragma once
//! A Context owns a registry of backends, a configuration and a dispatcher; the free functions
//! use the process-wide default one.

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "xreduce/config.hpp"
#include "xreduce/request.hpp"

namespace xreduce {

class Dispatcher;
class Reducer;
class Registry;

//! Where a request's data lives.
struct Residency {
  Memory memory = Memory::host;  //!< host or device, never automatic
  bool pinned = false;           //!< host memory that is page-locked
};

class Context {
 public:
  //! Built-in backends, plus the plugins beside the core library and on config.plugin_path, each
  //! given its [backends.NAME] settings. Throws Error(config) for a bad setting.
  explicit Context(Config config = Config::load());
  //! An empty registry, for tests and embedders that register their own reducers (then call
  //! configure_backends() if the config has settings for them).
  struct Empty {};
  Context(Empty, Config config);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  Registry& registry();
  const Registry& registry() const;
  const Dispatcher& dispatcher() const;
  const Config& config() const;

  //! The backend name that applies to `options`: Options > XREDUCE_BACKEND > file > "auto".
  std::string backend_for(const Options& options) const;
  struct Selection {
    Reducer* reducer;
    std::string reason;  //!< one line: why this backend
  };
  //! The reducer that would run `request` with `options`, and why.
  Selection resolve(const Request& request, const Options& options) const;
  //! Where `request`'s data lives: Memory::automatic asks the loaded modules. Whether host data is
  //! pinned is asked only where it can change the choice (from the smallest GPU threshold on).
  Residency locate(const Request& request) const;
  //! Runs one request. Throws Error.
  Result reduce(const Request& request, const Options& options = {});

  //! Gives every registered backend its settings from the config ([backends.FAMILY], then
  //! [backends.NAME] over it), and checks that the backends [dispatch] names are registered.
  //! Throws Error(config) naming the file and line of a bad setting, or the valid names.
  void configure_backends();
  //! The config's notes (Config::notes), and tables that name no loaded backend or plugin.
  const std::vector<std::string>& notes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
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
