#include "xreduce/backend/dispatcher.hpp"

#include <atomic>
#include <limits>

#include "xreduce/backend/chunk_driver.hpp"
#include "xreduce/error.hpp"

namespace xreduce {
namespace {

std::string describe(const Workload& w) {
  const std::string segments = w.segments ? " in " + std::to_string(w.segments) + " rows or segments" : std::string();
  const std::string layout = w.features.layout == Layout::all || w.segments ? std::string() : " (layout " + std::string(to_string(w.features.layout)) + ")";
  return std::to_string(w.elements) + " elements" + segments + layout + " in " + std::string(to_string(w.features.memory)) + " memory";
}

//! Everything but the element and segment counts: what selects a registry's candidate list.
bool same_kind(const Workload& a, const Workload& b) { return a.kind() == b.kind(); }

//! A request of rows or segments within one tile runs on one thread (engine_among).
bool in_one_tile(const Workload& w) { return w.segments != 0 && w.elements <= backend::kChunkElements; }

//! A thread's last choice (Dispatcher::pick).
struct Remembered {
  std::uint64_t dispatcher = 0;  // 0: none
  std::uint64_t generation = 0;
  Workload kind;  // the workload it was made for
  std::uint64_t lo = 0, hi = 0;
  Reducer* reducer = nullptr;
};
thread_local Remembered remembered;

std::atomic<std::uint64_t> dispatchers{0};

}  // namespace

Dispatcher::Dispatcher(const Registry& registry, DispatchConfig config)
    : registry_(registry), config_(std::move(config)), id_(dispatchers.fetch_add(1, std::memory_order_relaxed) + 1) {}

Dispatcher::Choice Dispatcher::choose(const Workload& w) const {
  Choice c{nullptr, {}};
  c.reducer = &decide(w, &c.reason);
  return c;
}

std::pair<std::uint64_t, std::uint64_t> Dispatcher::band(const Workload& w, std::uint64_t work) const {
  std::uint64_t lo = 0, hi = std::numeric_limits<std::uint64_t>::max();
  if (w.features.memory == Memory::device) return {lo, hi};  // no threshold applies
  // Registry::best prefers a CPU-parallel backend by its own preferences' threshold, which a
  // dispatcher made with another config does not share.
  for (std::uint64_t t : {config_.parallel_min_count, config_.parallel_large_min_count, registry_.preferences().parallel_large_min_count,
                          w.pinned ? config_.gpu_min_count_pinned : config_.gpu_min_count_pageable,
                          w.pinned ? config_.cpu_gpu_min_count_pinned : config_.cpu_gpu_min_count_pageable}) {
    if (t == 0) continue;  // never
    if (t <= work) lo = std::max(lo, t);
    else hi = std::min(hi, t);
  }
  return {lo, hi};
}

Reducer& Dispatcher::pick(const Workload& w) const {
  const std::uint64_t work = config_.work(w.elements, w.segments);
  const std::uint64_t generation = registry_.generation();
  Remembered& r = remembered;
  // The same segment count too: Registry::best weighs segments by its own preferences.
  if (r.dispatcher == id_ && r.generation == generation && same_kind(r.kind, w) && r.kind.segments == w.segments &&
      in_one_tile(r.kind) == in_one_tile(w) && r.lo <= work && work < r.hi)
    return *r.reducer;
  Reducer& chosen = decide(w, nullptr);
  const auto [lo, hi] = band(w, work);
  r = Remembered{id_, generation, w, lo, hi, &chosen};
  return chosen;
}

// The reasons are built only when asked for: pick() runs on every "auto" call. `has` is asked
// about an engine only when the rules reach it, so that a CPU choice never asks the GPU backends
// whether they can run (which starts the GPU's driver).
template <class Has>
std::optional<Engine> Dispatcher::engine_among(const Workload& w, Has&& has, std::string* why) const {
  auto chosen = [&](Engine e, auto&& reason) -> std::optional<Engine> {
    if (why) *why = describe(w) + reason();
    return e;
  };
  if (w.features.memory == Memory::device) {
    if (has(Engine::gpu)) return chosen(Engine::gpu, [] { return std::string(": best GPU backend"); });
    return std::nullopt;
  }
  const std::string_view residency = w.pinned ? "pinned" : "pageable";
  // Segments weigh more than their elements (DispatchConfig::segment_cost): the thresholds are
  // compared with the work, and the reasons say so where it differs.
  const std::uint64_t work = config_.work(w.elements, w.segments);
  auto as_work = [&] { return work != w.elements ? ", work of " + std::to_string(work) + " elements," : std::string(); };
  auto at_least = [&](std::uint64_t threshold) { return threshold != 0 && work >= threshold; };
  const std::uint64_t cpu_gpu_min = w.pinned ? config_.cpu_gpu_min_count_pinned : config_.cpu_gpu_min_count_pageable;
  if (at_least(cpu_gpu_min) && has(Engine::cpu_gpu))
    return chosen(Engine::cpu_gpu, [&] {
      return " (" + std::string(residency) + ")" + as_work() + " >= cpu_gpu_min_count_" + std::string(residency) + " (" + std::to_string(cpu_gpu_min) + "): CPU and GPU together";
    });
  const std::uint64_t gpu_min = w.pinned ? config_.gpu_min_count_pinned : config_.gpu_min_count_pageable;
  if (at_least(gpu_min) && has(Engine::gpu))
    return chosen(Engine::gpu, [&] {
      return " (" + std::string(residency) + ")" + as_work() + " >= gpu_min_count_" + std::string(residency) + " (" + std::to_string(gpu_min) + "): best GPU backend";
    });
  auto threshold = [&] { return as_work() + " parallel_min_count (" + std::to_string(config_.parallel_min_count) + ")"; };
  // A segmented request is cut into tiles of kChunkElements, its unit of parallel work: one tile
  // runs on one thread whatever its segments weigh.
  const bool one_tile = in_one_tile(w);
  if (one_tile && has(Engine::cpu_serial) && at_least(config_.parallel_min_count))
    return chosen(Engine::cpu_serial, [&] {
      return " >=" + threshold() + ", but in one tile of " + std::to_string(backend::kChunkElements) + ": best single-thread backend";
    });
  if (at_least(config_.parallel_min_count)) {
    if (has(Engine::cpu_parallel))
      return chosen(Engine::cpu_parallel, [&] {
        return " >=" + threshold() + ": best CPU-parallel backend" +
               (config_.large_parallel(work)
                    ? " from parallel_large_min_count (" + std::to_string(config_.parallel_large_min_count) + ") on"
                    : std::string());
      });
    if (has(Engine::cpu_serial))
      return chosen(Engine::cpu_serial, [&] { return " >=" + threshold() + ", but no CPU-parallel backend can run"; });
  } else {
    if (has(Engine::cpu_serial))
      return chosen(Engine::cpu_serial, [&] { return " <" + threshold() + ": best single-thread backend"; });
    if (has(Engine::cpu_parallel))
      return chosen(Engine::cpu_parallel, [&] { return " <" + threshold() + ", but no single-thread backend can run"; });
  }
  return std::nullopt;
}

std::optional<Engine> Dispatcher::engine_for(const Workload& w, EngineSet offered, std::string* why) const {
  return engine_among(w, [&](Engine e) { return (offered & engine_bit(e)) != 0; }, why);
}

Reducer& Dispatcher::decide(const Workload& w, std::string* why) const {
  const auto has = [&](Engine e) { return !registry_.candidates(w, e).empty(); };
  if (const std::optional<Engine> engine = engine_among(w, has, why))
    if (Reducer* r = registry_.best(*engine, w)) return *r;
  const std::vector<Registry::Candidate>& fit = registry_.candidates(w);  // the rules named none that can run
  if (!fit.empty()) {
    if (why) *why = describe(w) + ": the only kind of backend that can run";
    return *fit.front().reducer;
  }
  const std::string what = w.user_code ? "a user's operator on " + describe(w) : to_string(w.features) + " (" + std::to_string(w.elements) + " elements)";
  throw Error(ErrorCode::unavailable, "no available backend does " + what + (w.user_code ? "" : " to the semantics table"));
}

}  // namespace xreduce
