// `tbb`: the chunks of core's blocked kernel spread over oneTBB's work-stealing scheduler.
//
// The chunks run under tbb::parallel_for and their partials are combined in a fixed pairwise
// order afterwards, rather than joined by tbb::parallel_reduce, whose join tree follows the run's
// stealing: this way the result is the same bits on every run and for every thread count.

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include "xreduce/backend/chunk_driver.hpp"
#include "xreduce/backend/registry.hpp"

namespace xreduce::backends {
namespace {

class TbbReducer final : public backend::HostChunkReducer {
  static constexpr Capabilities kCaps = backend::host_chunk_capabilities(Engine::cpu_parallel);

 public:
  TbbReducer() : HostChunkReducer(kCaps.engine()) {}
  std::string_view name() const override { return "tbb"; }
  Capabilities capabilities() const override { return kCaps; }
  Availability available() const override { return Availability::yes(); }
  bool run_chunks(std::size_t chunks, ChunkBody body, void* context, int threads) override {
    auto run = [&] {
      tbb::parallel_for(tbb::blocked_range<std::size_t>(0, chunks), [&](const tbb::blocked_range<std::size_t>& r) {
        for (std::size_t c = r.begin(); c != r.end(); ++c) body(context, c);
      });
    };
    if (threads <= 0) {
      run();
      return true;
    }
    ArenaLease arena(*this, threads);
    arena->execute(run);
    return true;
  }

 private:
  // Calls with a thread count run in an arena of that size. A new arena for every call cost
  // hybrid's CPU part, which calls once per slice it claims, about 8% of its rate on the H200 host
  // (pinned 2^28 f32: 66-71 GB/s against 72-79 for `openmp` in the same rounds,
  // bench/results/nvidia-h200/logs/hybrid-cpu-part-52405f7.txt), so finished arenas are kept for
  // the next call of the same size. Each concurrent caller still gets an arena of its own: callers
  // asking for 8 threads each from two threads get 8 each, as with an arena per call.
  class ArenaLease {
   public:
    ArenaLease(TbbReducer& owner, int threads) : owner_(owner), threads_(threads) {
      std::lock_guard lock(owner_.arenas_mutex_);
      auto& idle = owner_.idle_arenas_[threads_];
      if (!idle.empty()) {
        arena_ = std::move(idle.back());
        idle.pop_back();
      }
      if (!arena_) arena_ = std::make_unique<tbb::task_arena>(threads_);
    }
    ~ArenaLease() {
      std::lock_guard lock(owner_.arenas_mutex_);
      auto& idle = owner_.idle_arenas_[threads_];
      if (idle.size() < kIdleArenasPerSize) idle.push_back(std::move(arena_));
    }
    ArenaLease(const ArenaLease&) = delete;
    ArenaLease& operator=(const ArenaLease&) = delete;
    tbb::task_arena* operator->() { return arena_.get(); }

   private:
    TbbReducer& owner_;
    int threads_;
    std::unique_ptr<tbb::task_arena> arena_;
  };
  static constexpr std::size_t kIdleArenasPerSize = 4;

  std::mutex arenas_mutex_;
  std::map<int, std::vector<std::unique_ptr<tbb::task_arena>>> idle_arenas_;  // by thread count
};

}  // namespace

void register_tbb_backend(Registry& registry) { registry.add(std::make_unique<TbbReducer>(), 200); }

}  // namespace xreduce::backends
