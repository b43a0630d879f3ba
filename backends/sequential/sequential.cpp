// `sequential`: one thread, fast and accurate: the chunk driver (xreduce/backend/chunk_driver.hpp)
// in one pass, with the core's blocked pairwise accumulation
// (independent lanes the compiler vectorises, combined pairwise).

#include <memory>

#include "xreduce/backend/chunk_driver.hpp"
#include "xreduce/backend/registry.hpp"

namespace xreduce::backends {
namespace {

class SequentialReducer final : public backend::HostChunkReducer {
  static constexpr Capabilities kCaps = backend::host_chunk_capabilities(Engine::cpu_serial);

 public:
  SequentialReducer() : HostChunkReducer(kCaps.engine()) {}
  std::string_view name() const override { return "sequential"; }
  Capabilities capabilities() const override { return kCaps; }
  Availability available() const override { return Availability::yes(); }
  bool run_chunks(std::size_t chunks, ChunkBody body, void* context, int) override {
    for (std::size_t c = 0; c < chunks; ++c) body(context, c);
    return true;
  }

};

}  // namespace

std::unique_ptr<Reducer> make_naive_reducer();

void register_sequential_backends(Registry& registry) {
  registry.add(std::make_unique<SequentialReducer>(), 100);
  // Priority 0 and inexact: the dispatcher never picks it; it is there to be compared against.
  registry.add(make_naive_reducer(), 0);
}

}  // namespace xreduce::backends
