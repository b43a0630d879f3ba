#pragma once
//! Reductions of one array whose shards live on several GPUs, one rank (process or thread) per
//! GPU, combined through NCCL (library xreduce_nccl, built when CMake finds CUDA and NCCL). Each
//! rank reduces its device-resident shard with its own dispatcher (a GPU backend, on the GPU the
//! shard is on); the ranks' partials then cross in one ncclAllGather, and every rank folds them in
//! rank order. The semantics are those of xreduce::mpi::allreduce (xreduce/mpi.hpp): global
//! argmin/argmax indices, the lowest among ties, the first NaN; empty shards; integer sums that
//! wrap; exact sums (Accuracy::exact) the same bits for any number of ranks; and a failing rank
//! makes every rank throw the same Error, naming it.
//!
//! Why a gather and not ncclAllReduce: NCCL's built-in operators add, multiply or take extremes
//! of numbers, but an argmin needs the index that goes with the value, and an exact sum's partial
//! is 72 words whose carries must propagate. So the partials (a 32-byte header, a 224-byte reason
//! and 8, 24 or 576 bytes a column) are gathered whole, a few hundred bytes a rank, and combined
//! by the same code as the MPI operator's.
//!
//! The communicator's ranks must each call, with the same dtype, op, kept extents (of a view) and accuracy; the
//! current CUDA device must be the communicator's.

#include <nccl.h>

#include "xreduce/context.hpp"
#include "xreduce/request.hpp"

namespace xreduce::nccl {

//! The whole array's result on every rank of `comm`; `backend` names this rank's backend.
Result allreduce(ncclComm_t comm, const Request& shard, const Options& options = {},
                 Context& context = default_context());

}  // namespace xreduce::nccl
