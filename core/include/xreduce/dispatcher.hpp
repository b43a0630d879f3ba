#pragma once
//! Turns backend = "auto" into one registered reducer, by element count and memory space.

#include <string>

#include "xreduce/config.hpp"
#include "xreduce/registry.hpp"

namespace xreduce {

class Dispatcher {
 public:
  struct Choice {
    Reducer* reducer;
    std::string reason;  //!< one line: why this backend
  };

  Dispatcher(const Registry& registry, DispatchConfig config) : registry_(registry), config_(config) {}

  //! The backend for `request`, whose memory must be resolved (host or device); `pinned` says
  //! whether host data is page-locked. Considers only available backends that do the
  //! combination exactly. Throws Error(unavailable) if none can.
  Choice choose(const Request& request, bool pinned = false) const;
  //! The same choice without the reason: what every "auto" call runs.
  Reducer& pick(const Request& request, bool pinned = false) const;

 private:
  Reducer& decide(const Request& request, bool pinned, std::string* why) const;
  const Registry& registry_;
  DispatchConfig config_;
};

}  // namespace xreduce
