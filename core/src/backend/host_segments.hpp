#pragma once
// Inside the CPU chunk driver: segmented requests (Request::segments).

#include "chunk_runner.hpp"
#include "xreduce/request.hpp"

namespace xreduce::backend {

//! Reduces every segment of a segmented host request into request.out (and out_index), through
//! `runner` (null: in this thread). Checks the offsets first: Error(invalid_argument).
Result reduce_host_segments(const Request& request, const ChunkRunner* runner, Accuracy accuracy);

}  // namespace xreduce::backend
