#pragma once
// Inside the CPU chunk driver: segmented requests (Request::segments), and several ops in one
// pass (Request::ops), which are tiles of segments too.

#include "chunk_runner.hpp"
#include "xreduce/request.hpp"

namespace xreduce::backend {

//! Reduces every segment of a segmented host request into request.out (and out_index), through
//! `runner` (null: in this thread). Checks the offsets first: Error(invalid_argument).
Result reduce_host_segments(const Request& request, const ChunkRunner* runner, Accuracy accuracy);

//! Several ops of one array (Request::ops, not segmented) in one read, into request.ops_out.
Result reduce_host_stats(const Request& request, const ChunkRunner* runner);

}  // namespace xreduce::backend
