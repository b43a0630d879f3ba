#include "xreduce/nccl.hpp"

#include <cuda_runtime.h>

#include <exception>
#include <string>
#include <vector>

#include "partials.hpp"

namespace xreduce::nccl {
namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw Error(ErrorCode::internal, std::string(what) + ": " + cudaGetErrorString(status));
}
void check(ncclResult_t status, const char* what) {
  if (status != ncclSuccess) throw Error(ErrorCode::internal, std::string(what) + ": " + ncclGetErrorString(status));
}

//! This thread's device buffers and stream for the gather, kept between calls (a call allocates
//! nothing once warm) and remade when the current device changes.
struct Gather {
  int device = -1;
  cudaStream_t stream = nullptr;
  void* buffer = nullptr;  // one rank's partials, then every rank's
  std::size_t capacity = 0;
  ~Gather() {
    if (buffer) cudaFree(buffer);
    if (stream) cudaStreamDestroy(stream);
  }
  void* reserve(std::size_t bytes) {
    int now = 0;
    check(cudaGetDevice(&now), "cudaGetDevice");
    if (now != device) {
      if (buffer) cudaFree(buffer);
      if (stream) cudaStreamDestroy(stream);
      buffer = nullptr, stream = nullptr, capacity = 0, device = now;
      check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    }
    if (bytes > capacity) {
      if (buffer) cudaFree(buffer);
      buffer = nullptr;
      check(cudaMalloc(&buffer, bytes), "cudaMalloc (partials to gather)");
      capacity = bytes;
    }
    return buffer;
  }
};

}  // namespace

Result allreduce(ncclComm_t comm, const Request& shard, const Options& options, Context& context) {
  int rank = 0, ranks = 1;
  check(ncclCommUserRank(comm, &rank), "ncclCommUserRank");
  check(ncclCommCount(comm, &ranks), "ncclCommCount");
  // The reason of a failure travels in the partials (with_message): there is no second message.
  mpi::detail::LocalPartials own = mpi::detail::local_partials(rank, shard, options, context, /*with_message=*/true);
  mpi::detail::Partials& local = own.partials;

  const std::size_t bytes = local.bytes();
  static thread_local Gather gather;
  auto* device = static_cast<std::byte*>(gather.reserve(bytes * (static_cast<std::size_t>(ranks) + 1)));
  std::byte* mine = device + bytes * static_cast<std::size_t>(ranks);
  check(cudaMemcpyAsync(mine, local.data(), bytes, cudaMemcpyHostToDevice, gather.stream), "cudaMemcpyAsync");
  check(ncclAllGather(mine, device, bytes, ncclUint8, comm, gather.stream), "ncclAllGather");
  std::vector<std::byte> all(bytes * static_cast<std::size_t>(ranks));
  check(cudaMemcpyAsync(all.data(), device, all.size(), cudaMemcpyDeviceToHost, gather.stream), "cudaMemcpyAsync");
  check(cudaStreamSynchronize(gather.stream), "cudaStreamSynchronize");
  // In rank order, as MPI folds a non-commutative operator: combine(in, inout) puts `in` first.
  mpi::detail::Partials total = local;
  std::copy(all.end() - static_cast<std::ptrdiff_t>(bytes), all.end(), static_cast<std::byte*>(total.data()));
  for (int r = ranks - 2; r >= 0; --r) mpi::detail::Partials::combine(all.data() + bytes * static_cast<std::size_t>(r), total.data(), bytes);
  Result result = total.result({}, options.result_dtype, shard.correction);
  result.backend = std::move(own.backend);
  return result;
}

}  // namespace xreduce::nccl
