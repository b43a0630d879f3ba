#pragma once
//! Reductions of one array spread over the ranks of an MPI communicator (library xreduce_mpi,
//! built when CMake finds MPI). Each rank reduces its own shard with its own dispatcher (any
//! backend, CPU or GPU, or "auto"); the ranks' partials are then combined by one MPI collective,
//! with a datatype and an operator of the library's own, under the semantics table:
//!
//! - The shards are the whole array in rank order: rank r's elements follow rank r-1's.
//!   Any shard may be empty; an empty whole gives sum 0, prod 1, and Error(empty_input) for min,
//!   max, argmin and argmax.
//! - argmin/argmax: the index in the whole array, the lowest among equal extremes; the first NaN
//!   wins. (The operator is declared non-commutative, so MPI combines in rank order, and each
//!   rank's index moves past the records of the ranks before it: no scan of the counts needed.)
//! - Integer sums and products wrap modulo 2^64, as on one rank.
//! - Float sums with Accuracy::exact: the ranks send their exact partials (ExactSum, 576 bytes a
//!   column), which add exactly: the exact sum rounded once, the same bits for any number of
//!   ranks, any split and any mix of backends. Without it, each rank's partial is within its
//!   backend's bound, 64 eps(T) sum|x| of its shard, rounded to T, and the partials add in double
//!   in the order MPI chooses: within (64 + ranks) eps(T) sum|x|, and not the same bits from one
//!   number of ranks (or one MPI algorithm) to another.
//! - Float products: the ranks' partials multiply in double, in the order MPI chooses: within
//!   (n + 64 + ranks) eps(T) |exact|.
//! - f16 and bf16 (sums, products, sums of squares): each rank sends its partial in f64 (it
//!   reduces its shard with Options::result_dtype f64), and the whole is rounded to the type once:
//!   the bounds above with eps(f32), plus half an ulp of the result. A shard in GPU memory does
//!   this for sums, which it then sums exactly; its products and sums of squares are rounded to
//!   the type on the rank too, an eps of the type more each.
//! - Options::result_dtype: the whole's result in the type asked (as on one rank: f32 or f64 for
//!   float sums, products and sums of squares), each rank's partial asked in it too.
//! - The statistics (every one but nanmean, nanvar and nanstd, refused with Error(unsupported)):
//!   each rank's accumulator of the op table (xreduce/backend/ops.hpp), rebuilt from its result,
//!   combined by the table's own combine and finished once: mean, var and std by Chan, Golub and
//!   LeVeque's update from each rank's count, mean and variance (in f64 for floats: one read of
//!   a flat shard whose backend hands on its moments, Result::moments, else two; Request::correction
//!   applies to the whole), logsumexp around the larger maximum,
//!   norm2 scaled as Blue's algorithm scales, counts, any and all exactly. With Accuracy::exact,
//!   a float mean, var or std sends the exact partials of x and of x squared (1152 bytes a
//!   column): the exact value rounded once, the same bits for any number of ranks and any split
//!   (flat shards; the core refuses exact statistics of records).
//! - A shard is a flat array, or a view (Request::over, Request::records: any shape and strides,
//!   keepdims) of the rank's rows of an array split along axis 0, whose reduced axes include
//!   axis 0: one partial a result, the results as one rank gives them (Result::values, shape),
//!   an argmin/argmax index along the reduced axes flattened in C order. A view that keeps axis
//!   0, and segments, are refused with Error(unsupported), on every rank alike. A shard's
//!   Request::out is not written: the whole's results come back in the Result. Exact sums of a
//!   view cross where the backend gives an exact partial per result (records); exact statistics
//!   of flat shards only.
//!
//! What crosses the wire is a 32-byte header and one partial a column: 8 bytes (sums, products),
//! 24 (extremes, statistics), 576 (exact sums) or 1152 (exact statistics): one collective of a
//! few dozen bytes (a few hundred, exact), whatever N is.
//!
//! Every rank of `comm` must call, with the same dtype, op, kept extents (of a view) and accuracy. Ranks whose
//! partials have the same size but a different dtype or op get Error(invalid_argument) on every
//! rank; a different width or accuracy changes the message's size, which MPI reports itself (by
//! default, by ending the job). A failure on a rank (an unknown or unavailable backend, an
//! unsupported combination) never leaves the others waiting: allreduce throws the same Error on
//! every rank, naming the lowest failing rank and its reason. The partials cross the wire as
//! bytes: the ranks must share one byte order (every platform the library builds for is
//! little-endian).

#include <mpi.h>

#include <optional>

#include "xreduce/context.hpp"
#include "xreduce/request.hpp"

namespace xreduce::mpi {

//! The whole array's result, on every rank. `backend` names this rank's backend; `exact` holds the
//! whole array's exact partials (Accuracy::exact float sums).
Result allreduce(MPI_Comm comm, const Request& shard, const Options& options = {},
                 Context& context = default_context());

//! The same, with the result on `root` only (nullopt on the other ranks), by one MPI_Reduce. A
//! failure on a rank throws there and on `root`; the other ranks return nullopt.
std::optional<Result> reduce(MPI_Comm comm, const Request& shard, int root, const Options& options = {},
                             Context& context = default_context());

}  // namespace xreduce::mpi
