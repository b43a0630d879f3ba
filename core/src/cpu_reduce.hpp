#pragma once
// The driver the CPU backends share: they differ only in how chunks are scheduled.

#include <cstddef>
#include <functional>

#include "xreduce/reducer.hpp"

namespace xreduce::detail {

//! Elements per chunk of a parallel run: a multiple of the kernel's leaf, large enough that
//! scheduling costs nothing, small enough to balance two to a few hundred threads.
inline constexpr std::size_t kChunk = std::size_t{1} << 16;

//! Runs body(c) for every chunk c in [0, chunks), in any order and on any threads.
using ChunkRunner = std::function<void(std::size_t chunks, const std::function<void(std::size_t)>& body)>;

//! The ChunkRunner of a backend's Reducer::run_chunks, with `threads` threads (0: all).
inline ChunkRunner chunk_runner(Reducer& reducer, int threads) {
  return [&reducer, threads](std::size_t chunks, const std::function<void(std::size_t)>& body) {
    auto call = [](void* f, std::size_t c) { (*static_cast<const std::function<void(std::size_t)>*>(f))(c); };
    reducer.run_chunks(chunks, call, const_cast<std::function<void(std::size_t)>*>(&body), threads);
  };
}

//! Reduces host data. With no runner, one pass in the calling thread; with one, each chunk is
//! reduced on its own and the partials are combined in a fixed order, so the result depends
//! neither on the number of threads nor on the schedule. Records (width > 1) too.
Result reduce_on_cpu(const Request& request, const ChunkRunner* runner);

}  // namespace xreduce::detail
