#pragma once
//! Turns backend = "auto" into one registered reducer: the engine by element count and where the
//! data lives (thresholds from DispatchConfig), then the engine's best backend (Registry::best).

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "xreduce/config.hpp"
#include "xreduce/backend/registry.hpp"

namespace xreduce {

//! A set of engines: bit (1 << Engine).
using EngineSet = std::uint32_t;
constexpr EngineSet engine_bit(Engine e) { return EngineSet{1} << static_cast<unsigned>(e); }

class Dispatcher {
 public:
  struct Choice {
    Reducer* reducer;
    std::string reason;  //!< one line: why this backend
  };

  Dispatcher(const Registry& registry, DispatchConfig config);

  //! The backend for `workload`. Considers only backends that fit it (Registry::fits). Throws
  //! Error(unavailable) if none does.
  Choice choose(const Workload& workload) const;
  //! The same choice without the reason: what every "auto" call runs. Each thread remembers its
  //! last choice, for workloads of the same kind whose work crosses no threshold (a lookup costs
  //! more than reducing a few hundred elements).
  Reducer& pick(const Workload& workload) const;
  //! The engine the thresholds give `workload` among the `offered` ones; nullopt if the rules
  //! name none of them. `why` (if given) gets the reason. The GPU template API (xreduce/cuda.cuh),
  //! whose GPU path is no registered backend, asks this directly.
  std::optional<Engine> engine_for(const Workload& workload, EngineSet offered, std::string* why = nullptr) const;

 private:
  Reducer& decide(const Workload& workload, std::string* why) const;
  template <class Has>
  std::optional<Engine> engine_among(const Workload& workload, Has&& has, std::string* why) const;
  //! The work range [lo, hi) around `work` in which no threshold of config_ is crossed: within
  //! it, workloads of one kind get the same backend (what pick() remembers).
  std::pair<std::uint64_t, std::uint64_t> band(const Workload& workload, std::uint64_t work) const;
  const Registry& registry_;
  DispatchConfig config_;
  std::uint64_t id_;  //!< this dispatcher among all, for the remembered choice
};

}  // namespace xreduce
