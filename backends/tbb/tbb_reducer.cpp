// `tbb`: the chunks of core's blocked kernel spread over oneTBB's work-stealing scheduler.
//
// The chunks run under tbb::parallel_for and their partials are combined in a fixed pairwise
// order afterwards, rather than joined by tbb::parallel_reduce, whose join tree follows the run's
// stealing: this way the result is the same bits on every run and for every thread count.

#include <memory>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include "xreduce/backend/chunk_driver.hpp"
#include "xreduce/registry.hpp"

namespace xreduce::backends {
namespace {

class TbbReducer final : public backend::HostChunkReducer {
  static constexpr Capabilities kCaps = Capabilities(Engine::cpu_parallel).set_all(Support::exact)
      .accept_records().accept_exact_sums().accept_segments(/*exact_sums=*/true).accept_ops(/*segments=*/true);

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
    if (threads > 0) tbb::task_arena(threads).execute(run);
    else run();
    return true;
  }

};

}  // namespace

void register_tbb_backend(Registry& registry) { registry.add(std::make_unique<TbbReducer>(), 200); }

}  // namespace xreduce::backends
