// The non-template half of the template API (xreduce/custom.hpp): which backend's threads run
// a user's operator.

#include <string>

#include "xreduce/context.hpp"
#include "xreduce/custom.hpp"

namespace xreduce::detail {
namespace {

//! Whether `r` runs host code for the template API (asked with zero chunks: no work). Only CPU
//! engines can; asking them first spares the GPU backends' availability checks on every call.
bool runs_user_code(Reducer& r) {
  const Engine e = r.capabilities().engine();
  return (e == Engine::cpu_serial || e == Engine::cpu_parallel) && r.available() &&
         r.run_chunks(0, [](void*, std::size_t) {}, nullptr, 0);
}

std::string executors(const Registry& registry) {
  std::string names;
  for (const auto& e : registry.entries())
    if (runs_user_code(*e.reducer)) names += (names.empty() ? "" : ", ") + std::string(e.reducer->name());
  return names;
}

}  // namespace

Reducer& custom_executor(const std::string& backend, std::size_t elements) {
  Context& context = default_context();
  const Registry& registry = context.registry();
  if (backend.empty() || backend == "auto") {
    const DispatchConfig& d = context.config().dispatch;
    const Engine wanted = elements >= d.parallel_min_count ? Engine::cpu_parallel : Engine::cpu_serial;
    if (const std::string& preferred = d.parallel_backend_for(elements); wanted == Engine::cpu_parallel && !preferred.empty())
      if (Reducer* r = registry.find(preferred); r && runs_user_code(*r)) return *r;
    Reducer* fallback = nullptr;
    for (const auto& e : registry.entries()) {
      if (!runs_user_code(*e.reducer)) continue;
      if (e.reducer->capabilities().engine() == wanted) return *e.reducer;
      if (!fallback) fallback = e.reducer;
    }
    if (fallback) return *fallback;
    throw Error(ErrorCode::unavailable, "custom reduction: no CPU backend can run a user's operator here");
  }
  Reducer& r = registry.get(backend);
  if (!runs_user_code(r))
    throw Error(ErrorCode::unsupported, "custom reduction: backend '" + backend +
                                            "' cannot run a user's operator; these can: " + executors(registry) +
                                            " (and the GPU, through xreduce/cuda.cuh)");
  return r;
}

int custom_threads(int threads) { return threads > 0 ? threads : default_context().config().threads; }

}  // namespace xreduce::detail
