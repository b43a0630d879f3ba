#pragma once
// Inside the CPU chunk driver: how its parts hand chunks of work to a backend's schedule.

#include <cstddef>
#include <functional>

namespace xreduce::backend {

//! A backend's schedule: `run` calls body(c) for every chunk c in [0, chunks), in any order and
//! on any threads, at most `threads` at once (how finely work is worth cutting).
struct ChunkRunner {
  std::function<void(std::size_t chunks, const std::function<void(std::size_t)>& body)> run;
  unsigned threads = 1;
};

//! Through `runner`, or in order in this thread when there is none.
inline void run_each(const ChunkRunner* runner, std::size_t chunks, const std::function<void(std::size_t)>& body) {
  if (runner) runner->run(chunks, body);
  else for (std::size_t c = 0; c < chunks; ++c) body(c);
}

//! The threads that `runner` runs chunks on at most: 1 without one.
inline unsigned threads_of(const ChunkRunner* runner) { return runner ? runner->threads : 1u; }

}  // namespace xreduce::backend
