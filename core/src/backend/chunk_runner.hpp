#pragma once
// Inside the CPU chunk driver: how its parts hand chunks of work to a backend's schedule.

#include <cstddef>
#include <functional>

namespace xreduce::backend {

//! Runs body(c) for every chunk c in [0, chunks), in any order and on any threads.
using ChunkRunner = std::function<void(std::size_t chunks, const std::function<void(std::size_t)>& body)>;

//! Through `runner`, or in order in this thread when there is none.
inline void run_each(const ChunkRunner* runner, std::size_t chunks, const std::function<void(std::size_t)>& body) {
  if (runner) (*runner)(chunks, body);
  else for (std::size_t c = 0; c < chunks; ++c) body(c);
}

}  // namespace xreduce::backend
