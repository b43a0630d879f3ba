#pragma once
// Inside the CPU chunk driver: reductions whose results are rows of consecutive elements: ragged
// segments, equal rows (layout inner), strided views gathered into rows, and several ops of one
// array in one pass, which is one row.

#include "chunk_runner.hpp"
#include "xreduce/request.hpp"

namespace xreduce::backend {

//! Reduces every row of a canonical host request (layout ragged, inner, or strided with its
//! smallest stride reduced) into request.out (and out_index), or ops_out, through `runner` (null:
//! in this thread). Checks ragged offsets first: Error(invalid_argument).
//! `wide`: float sums, products and sums of squares written as f64, their accumulators' values
//! (Features::wide).
Result reduce_host_segments(const Request& request, const ChunkRunner* runner, Accuracy accuracy, bool wide = false);

//! A statistic (an op after the core ones) of one flat array, as Result::value (and index).
//! `wide`: a float result as the f64 it is computed in (Features::wide).
Result reduce_host_statistic(const Request& request, const ChunkRunner* runner, bool wide = false);
//! Several ops of one array (Request::ops, not segmented) in one read, into request.ops_out.
Result reduce_host_stats(const Request& request, const ChunkRunner* runner);

}  // namespace xreduce::backend
