#pragma once
// The package's one Context and the Config it was made from. `xreduce.config` edits the Config;
// the next call makes a new Context from it (calls under way finish with the one they hold).

#include <memory>
#include <mutex>

#include "xreduce/context.hpp"

namespace xreduce::python {

class State {
 public:
  static State& get();

  //! The context to run a call with, made on first use (this loads the plugins).
  std::shared_ptr<Context> context();
  //! A copy of the configuration in force.
  Config config();
  //! Replaces the configuration; the next call gets a context made from it. Throws Error(config)
  //! if a context cannot be made from it, Error(unknown_backend) if its backend is not registered;
  //! the old one then stays.
  void set_config(Config config);

 private:
  std::mutex mutex_;
  std::unique_ptr<Config> config_;    // loaded on first use: importing the package reads no file
  std::shared_ptr<Context> context_;  // made on first use from config_
};

}  // namespace xreduce::python
