#pragma once
//! For backend authors: the CPU chunk driver. A CPU backend says how it schedules chunks of work
//! (Reducer::run_chunks); the driver cuts the request into fixed chunks, runs the core's blocked
//! kernels on them through that schedule, and combines the partials in a fixed order, so every
//! CPU backend gives the same bits for any thread count. Derive from HostChunkReducer and
//! implement name(), capabilities(), available() and run_chunks(); nothing else.
//!
//!   class MyPool final : public xreduce::backend::HostChunkReducer {
//!     static constexpr xreduce::Capabilities kCaps = xreduce::backend::host_chunk_capabilities(xreduce::Engine::cpu_parallel);
//!    public:
//!     MyPool() : HostChunkReducer(kCaps.engine()) {}
//!     std::string_view name() const override { return "mypool"; }
//!     xreduce::Capabilities capabilities() const override { return kCaps; }
//!     ...
//!     bool run_chunks(std::size_t chunks, ChunkBody body, void* context, int threads) override {
//!       my_pool.parallel_for(chunks, [&](std::size_t c) { body(context, c); });
//!       return true;
//!     }
//!   };

#include <cstddef>

#include "xreduce/backend/reducer.hpp"

namespace xreduce::backend {

//! Elements per chunk of a parallel run from 2^20 elements on (smaller arrays are cut into 16
//! chunks, of at least 2^13), and per tile of a segmented or several-op request: a multiple of
//! the kernels' leaf, large enough that scheduling costs nothing, small enough to balance two to
//! a few hundred threads.
inline constexpr std::size_t kChunkElements = std::size_t{1} << 16;

//! What the driver does: every dtype, op and layout of host data, exact sums (of every layout)
//! and exact means, variances and standard deviations (of one result: layout all), results in
//! f64 for another result type (wide_results), and several ops (all but prod) in one pass. A
//! backend whose do_reduce is the driver declares this.
constexpr Capabilities host_chunk_capabilities(Engine engine) {
  constexpr OpSet moments{Op::mean, Op::var, Op::std};
  constexpr OpSet others = OpSet::from_bits(OpSet::all().bits() & ~moments.bits());
  return Capabilities(engine)
      .add(FeatureSet().every_dtype().ops(others).every_layout().exact_sums().wide_results())
      .add(FeatureSet().every_dtype().ops(moments).every_layout().wide_results())
      .add(FeatureSet().dtypes({DType::f32, DType::f64, DType::f16, DType::bf16}).ops(moments).layouts({Layout::all}).exact_sums())
      .add(FeatureSet().every_dtype().ops(OpSet::from_bits(OpSet::all().bits() & ~OpSet{Op::prod}.bits())).every_layout().only_together());
}

//! Reduces host data through `scheduler`'s run_chunks with options.threads threads (0: all);
//! with no scheduler, in one pass in the calling thread. Every request of
//! host_chunk_capabilities(), once it has passed Reducer::reduce's checks (a canonical request,
//! count > 0 but for segments, aligned host data), as Reducer::do_reduce returns it.
Result reduce_host_chunks(const Request& request, Reducer* scheduler, const Options& options);

//! A CPU backend that is only a schedule: do_reduce is the driver. A cpu_serial engine runs in
//! one pass in the calling thread; a cpu_parallel one through its run_chunks.
class HostChunkReducer : public Reducer {
 protected:
  //! `engine`: cpu_serial or cpu_parallel, as capabilities() says (pass its constant's engine()).
  //! Kept here rather than asked of capabilities() on every call: 7 ns of a 53 ns reduction of 8
  //! elements.
  explicit HostChunkReducer(Engine engine) : engine_(engine) {}
  Result do_reduce(const Request& request, const Options& options) override {
    return reduce_host_chunks(request, engine_ == Engine::cpu_serial ? nullptr : this, options);
  }

 private:
  Engine engine_;
};

}  // namespace xreduce::backend
