#include "xreduce/mpi.hpp"

#include <cstdio>
#include <exception>
#include <map>
#include <mutex>
#include <string>

#include "partials.hpp"

namespace xreduce::mpi {
namespace {

using detail::Partials;

// The MPI operator over whole partial buffers (one element of a contiguous byte type each).
void combine_buffers(void* in, void* inout, int* len, MPI_Datatype* type) {
  int size = 0;
  MPI_Type_size(*type, &size);
  for (int i = 0; i < *len; ++i)
    Partials::combine(static_cast<const std::byte*>(in) + std::size_t(i) * size,
                      static_cast<std::byte*>(inout) + std::size_t(i) * size, static_cast<std::size_t>(size));
}

MPI_Op partial_op() {
  // Made once, and kept: it is valid until MPI_Finalize, which frees it.
  static const MPI_Op op = [] {
    MPI_Op o;
    // Non-commutative: MPI then combines in rank order, which places each rank's argmin/argmax
    // index after the records of the ranks before it (Partials::combine).
    MPI_Op_create(&combine_buffers, /*commute=*/0, &o);
    return o;
  }();
  return op;
}

//! A contiguous byte type of `bytes`: one partial buffer is one element, which MPI never splits.
//! Made once per size and kept (MPI_Finalize frees them), so a call pays no type's making.
MPI_Datatype buffer_type(std::size_t bytes) {
  static std::mutex mutex;
  static std::map<std::size_t, MPI_Datatype> types;
  if (bytes > static_cast<std::size_t>(INT32_MAX))
    throw Error(ErrorCode::invalid_argument, "too many columns to combine across ranks in one message");
  std::lock_guard lock(mutex);
  auto [at, made] = types.try_emplace(bytes, MPI_DATATYPE_NULL);
  if (made) {
    MPI_Type_contiguous(static_cast<int>(bytes), MPI_BYTE, &at->second);
    MPI_Type_commit(&at->second);
  }
  return at->second;
}

//! This rank's partials (detail::local_partials).
detail::LocalPartials reduce_shard(MPI_Comm comm, const Request& shard, const Options& options, Context& context, bool with_message) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  return detail::local_partials(rank, shard, options, context, with_message);
}

}  // namespace

Result allreduce(MPI_Comm comm, const Request& shard, const Options& options, Context& context) {
  detail::LocalPartials local = reduce_shard(comm, shard, options, context, /*with_message=*/false);
  MPI_Allreduce(MPI_IN_PLACE, local.partials.data(), 1, buffer_type(local.partials.bytes()), partial_op(), comm);
  std::string reason;
  if (const detail::Header& h = local.partials.header(); h.error_code != 0 && h.error_rank >= 0) {
    // Every rank knows who failed: the reason comes from there, only now (a failure's cost).
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    char text[512] = {};
    if (rank == h.error_rank) std::snprintf(text, sizeof text, "%s", local.reason.c_str());
    MPI_Bcast(text, sizeof text, MPI_CHAR, h.error_rank, comm);
    reason = text;
  }
  Result r = local.partials.result(reason, options.result_dtype, shard.correction, local.result_shape);
  r.backend = std::move(local.backend);
  return r;
}

std::optional<Result> reduce(MPI_Comm comm, const Request& shard, int root, const Options& options, Context& context) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  // The root alone learns of a failure elsewhere: the reason travels in the buffer.
  detail::LocalPartials local = reduce_shard(comm, shard, options, context, /*with_message=*/true);
  Partials received = local.partials;
  MPI_Reduce(local.partials.data(), rank == root ? received.data() : nullptr, 1,
             buffer_type(local.partials.bytes()), partial_op(), root, comm);
  if (rank != root) {
    if (local.partials.header().error_code != 0)
      throw Error(static_cast<ErrorCode>(local.partials.header().error_code), "rank " + std::to_string(rank) + ": " + local.reason);
    return std::nullopt;
  }
  Result r = received.result({}, options.result_dtype, shard.correction, local.result_shape);
  r.backend = std::move(local.backend);
  return r;
}

}  // namespace xreduce::mpi
