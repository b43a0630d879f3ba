#include "xreduce/dispatcher.hpp"

#include "xreduce/error.hpp"

namespace xreduce {

Dispatcher::Choice Dispatcher::choose(const Request& q, bool pinned) const {
  const Memory memory = q.memory == Memory::automatic ? Memory::host : q.memory;
  // Only backends that can run here and promise exact semantics for this combination.
  std::vector<Registry::Entry> fit;
  for (const Registry::Entry& e : registry_.entries()) {
    Capabilities caps = e.reducer->capabilities();
    if (caps.support(q.dtype, q.op) == Support::exact && caps.accepts(memory) && (q.width <= 1 || caps.records()) &&
        e.reducer->available())
      fit.push_back(e);
  }
  auto first = [&](Engine engine) -> Reducer* {
    if (engine == Engine::cpu_parallel && !config_.parallel_backend.empty())
      for (const auto& e : fit)
        if (e.reducer->name() == config_.parallel_backend && e.reducer->capabilities().engine() == engine) return e.reducer;
    for (const auto& e : fit)
      if (e.reducer->capabilities().engine() == engine) return e.reducer;
    return nullptr;
  };
  const std::string what = std::to_string(q.count) + (q.width > 1 ? " records of width " + std::to_string(q.width) : " elements") +
                           " in " + std::string(to_string(memory)) + " memory";

  if (memory == Memory::device) {
    if (Reducer* r = first(Engine::gpu)) return {r, what + ": best GPU backend"};
  } else {
    // Thresholds count elements: a record of width k is k of them.
    const std::uint64_t elements = static_cast<std::uint64_t>(q.count) * q.width;
    auto at_least = [&](std::uint64_t threshold) { return threshold != 0 && elements >= threshold; };
    const std::uint64_t hybrid_min = pinned ? config_.hybrid_min_count_pinned : config_.hybrid_min_count_pageable;
    if (at_least(hybrid_min))
      if (Reducer* r = first(Engine::hybrid))
        return {r, what + (pinned ? " (pinned)" : " (pageable)") + " >= hybrid_min_count_" + (pinned ? "pinned" : "pageable") +
                       " (" + std::to_string(hybrid_min) + "): CPU and GPU together"};
    const std::uint64_t gpu_min = pinned ? config_.gpu_min_count_pinned : config_.gpu_min_count_pageable;
    if (at_least(gpu_min))
      if (Reducer* r = first(Engine::gpu))
        return {r, what + (pinned ? " (pinned)" : " (pageable)") + " >= gpu_min_count_" + (pinned ? "pinned" : "pageable") +
                       " (" + std::to_string(gpu_min) + "): best GPU backend"};
    const bool large = elements >= config_.parallel_min_count;
    const std::string threshold = " parallel_min_count (" + std::to_string(config_.parallel_min_count) + ")";
    if (large) {
      if (Reducer* r = first(Engine::cpu_parallel)) return {r, what + " >=" + threshold + ": best CPU-parallel backend"};
      if (Reducer* r = first(Engine::cpu_serial)) return {r, what + " >=" + threshold + ", but no CPU-parallel backend can run"};
    } else {
      if (Reducer* r = first(Engine::cpu_serial)) return {r, what + " <" + threshold + ": best single-thread backend"};
      if (Reducer* r = first(Engine::cpu_parallel)) return {r, what + " <" + threshold + ", but no single-thread backend can run"};
    }
    if (!fit.empty()) return {fit.front().reducer, what + ": the only kind of backend that can run"};
  }
  throw Error(ErrorCode::unavailable, "no available backend does " + std::string(to_string(q.op)) + " of " +
                                          std::string(to_string(q.dtype)) + " on " + what + " exactly");
}

}  // namespace xreduce
