// `openmp`: the chunks of core's blocked kernel under an OpenMP parallel loop, partials combined
// in a fixed order (so the result does not depend on the thread count).

#include <omp.h>

#include <memory>

#include "xreduce/backend/chunk_driver.hpp"
#include "xreduce/backend/registry.hpp"

namespace xreduce::backends {
namespace {

class OpenMpReducer final : public backend::HostChunkReducer {
  static constexpr Capabilities kCaps = backend::host_chunk_capabilities(Engine::cpu_parallel);

 public:
  OpenMpReducer() : HostChunkReducer(kCaps.engine()) {}
  std::string_view name() const override { return "openmp"; }
  Capabilities capabilities() const override { return kCaps; }
  Availability available() const override { return Availability::yes(); }
  bool run_chunks(std::size_t chunks, ChunkBody body, void* context, int threads) override {
    if (chunks == 0) return true;  // no team for no work
    const auto count = static_cast<long long>(chunks);
    // The team keeps its size from call to call even when chunks are fewer than threads: a
    // smaller team parks the rest of the pool, and parked threads spin before they sleep, beside
    // the team's (on the H200 host, calls of changing team sizes next to hybrid's GPU thread
    // stalled for 8 ms at a time, most calls at 2^22).
    const int team = threads > 0 ? threads : omp_get_max_threads();
    // With a few chunks a thread, a static schedule gives each thread the same chunks on every
    // call, which are still in its own cache when a program reduces one array again and again;
    // there is little to balance anyway. With more, the input streams from memory and one slow
    // thread (a busy core, a preempted vCPU) would hold up the rest: threads take chunks as they
    // finish. On a 16-core Xeon host, static was up to 1.2x faster at 1 to 4 chunks a thread and
    // dynamic up to 1.3x faster from 16 on (bench/results/nvidia-h200/logs/openmp-schedule.md).
    if (count <= 4LL * team) {
#pragma omp parallel for schedule(static) num_threads(team)
      for (long long c = 0; c < count; ++c) body(context, static_cast<std::size_t>(c));
    } else {
#pragma omp parallel for schedule(dynamic) num_threads(team)
      for (long long c = 0; c < count; ++c) body(context, static_cast<std::size_t>(c));
    }
    return true;
  }

};

}  // namespace

void register_openmp_backend(Registry& registry) { registry.add(std::make_unique<OpenMpReducer>(), 190); }

}  // namespace xreduce::backends
