#pragma once
// Inside the CPU chunk driver: reductions whose results run along the view's smallest stride
// (layouts outer and middle, and strided views whose smallest stride is kept). Each task adds a
// block of neighbouring columns along the reduced axes, so every load feeds a result and the
// reads stream through memory, as a row-major matrix's column sums do.

#include "chunk_runner.hpp"
#include "xreduce/request.hpp"

namespace xreduce::backend {

//! Reduces canonical request `q` column by column into q.out (and out_index), or ops_out for
//! several ops; an exact sum of layout outer returns its columns' partials in Result::exact
//! instead. Through `runner` (null: in this thread); the same bits for any thread count.
//! `wide`: float sums, products and sums of squares written as f64, their accumulators' values
//! (Features::wide).
Result reduce_host_columns(const Request& q, const ChunkRunner* runner, Accuracy accuracy, bool wide = false);

//! Whether the columns path is the one for canonical view `q`: some kept axis has the smallest
//! stride of all (of extent above 1).
bool runs_along_columns(const Request& q);

}  // namespace xreduce::backend
