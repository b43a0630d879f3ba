#include "xreduce/dispatcher.hpp"

#include "xreduce/error.hpp"

namespace xreduce {

Dispatcher::Choice Dispatcher::choose(const Request& q, bool pinned) const {
  Choice c{nullptr, {}};
  c.reducer = &decide(q, pinned, &c.reason);
  return c;
}

Reducer& Dispatcher::pick(const Request& q, bool pinned) const { return decide(q, pinned, nullptr); }

// The reasons are built only when asked for: pick() runs on every "auto" call.
Reducer& Dispatcher::decide(const Request& q, bool pinned, std::string* why) const {
  const Memory memory = q.memory == Memory::automatic ? Memory::host : q.memory;
  // Only backends that can run here and promise exact semantics for this combination.
  const std::vector<Registry::Candidate>& fit = registry_.candidates(q.dtype, q.op, memory, q.width > 1);
  const std::uint64_t elements = static_cast<std::uint64_t>(q.count) * q.width;  // a record of width k is k elements
  const std::string& preferred_parallel = config_.parallel_backend_for(elements);
  auto first = [&](Engine engine) -> Reducer* {
    if (engine == Engine::cpu_parallel && !preferred_parallel.empty())
      for (const auto& c : fit)
        if (c.engine == engine && c.reducer->name() == preferred_parallel) return c.reducer;
    for (const auto& c : fit)
      if (c.engine == engine) return c.reducer;
    return nullptr;
  };
  auto what = [&] {
    return std::to_string(q.count) + (q.width > 1 ? " records of width " + std::to_string(q.width) : " elements") + " in " +
           std::string(to_string(memory)) + " memory";
  };
  auto chosen = [&](Reducer* r, auto&& reason) -> Reducer& {
    if (why) *why = reason();
    return *r;
  };
  const char* residency = pinned ? "pinned" : "pageable";

  if (memory == Memory::device) {
    if (Reducer* r = first(Engine::gpu)) return chosen(r, [&] { return what() + ": best GPU backend"; });
  } else {
    auto at_least = [&](std::uint64_t threshold) { return threshold != 0 && elements >= threshold; };
    const std::uint64_t hybrid_min = pinned ? config_.hybrid_min_count_pinned : config_.hybrid_min_count_pageable;
    if (at_least(hybrid_min))
      if (Reducer* r = first(Engine::hybrid))
        return chosen(r, [&] {
          return what() + " (" + residency + ") >= hybrid_min_count_" + residency + " (" + std::to_string(hybrid_min) +
                 "): CPU and GPU together";
        });
    const std::uint64_t gpu_min = pinned ? config_.gpu_min_count_pinned : config_.gpu_min_count_pageable;
    if (at_least(gpu_min))
      if (Reducer* r = first(Engine::gpu))
        return chosen(r, [&] {
          return what() + " (" + residency + ") >= gpu_min_count_" + residency + " (" + std::to_string(gpu_min) +
                 "): best GPU backend";
        });
    const bool large = elements >= config_.parallel_min_count;
    auto threshold = [&] { return " parallel_min_count (" + std::to_string(config_.parallel_min_count) + ")"; };
    if (large) {
      if (Reducer* r = first(Engine::cpu_parallel))
        return chosen(r, [&] {
          return what() + " >=" + threshold() + ": best CPU-parallel backend" +
                 (config_.large_parallel(elements) ? " from parallel_large_min_count (" + std::to_string(config_.parallel_large_min_count) + ") on"
                                 : std::string());
        });
      if (Reducer* r = first(Engine::cpu_serial))
        return chosen(r, [&] { return what() + " >=" + threshold() + ", but no CPU-parallel backend can run"; });
    } else {
      if (Reducer* r = first(Engine::cpu_serial))
        return chosen(r, [&] { return what() + " <" + threshold() + ": best single-thread backend"; });
      if (Reducer* r = first(Engine::cpu_parallel))
        return chosen(r, [&] { return what() + " <" + threshold() + ", but no single-thread backend can run"; });
    }
    if (!fit.empty()) return chosen(fit.front().reducer, [&] { return what() + ": the only kind of backend that can run"; });
  }
  throw Error(ErrorCode::unavailable, "no available backend does " + std::string(to_string(q.op)) + " of " +
                                          std::string(to_string(q.dtype)) + " on " + what() + " exactly");
}

}  // namespace xreduce
