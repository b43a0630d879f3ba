#include "xreduce/nccl.hpp"

#include <cuda_runtime.h>

#include <cstring>
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

//! This thread's device buffers and stream for the gather, and their pinned host twin, kept
//! between calls (a call allocates nothing once warm) and remade when the current device
//! changes. Pinned, because a copy between the GPU and pageable memory stages through a driver
//! buffer each way, which cost a few microseconds of each combine's 50 (nvidia-h200-x2).
struct Gather {
  int device = -1;
  cudaStream_t stream = nullptr;
  void* buffer = nullptr;     // one rank's partials, then every rank's
  std::byte* host = nullptr;  // the same in pinned host memory
  std::size_t capacity = 0;
  ~Gather() { release(); }
  void release() {
    if (buffer) cudaFree(buffer);
    if (host) cudaFreeHost(host);
    if (stream) cudaStreamDestroy(stream);
    buffer = nullptr, host = nullptr, stream = nullptr, capacity = 0;
  }
  void reserve(std::size_t bytes) {
    int now = 0;
    check(cudaGetDevice(&now), "cudaGetDevice");
    if (now != device) {
      release();
      device = now;
      check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    }
    if (bytes > capacity) {
      if (buffer) cudaFree(buffer);
      if (host) cudaFreeHost(host);
      buffer = nullptr, host = nullptr, capacity = 0;
      check(cudaMalloc(&buffer, bytes), "cudaMalloc (partials to gather)");
      check(cudaMallocHost(reinterpret_cast<void**>(&host), bytes), "cudaMallocHost (partials to gather)");
      capacity = bytes;
    }
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
  const std::size_t all = bytes * static_cast<std::size_t>(ranks);
  gather.reserve(all + bytes);
  auto* device = static_cast<std::byte*>(gather.buffer);
  std::byte* mine = device + all;
  std::memcpy(gather.host + all, local.data(), bytes);
  check(cudaMemcpyAsync(mine, gather.host + all, bytes, cudaMemcpyHostToDevice, gather.stream), "cudaMemcpyAsync");
  check(ncclAllGather(mine, device, bytes, ncclUint8, comm, gather.stream), "ncclAllGather");
  check(cudaMemcpyAsync(gather.host, device, all, cudaMemcpyDeviceToHost, gather.stream), "cudaMemcpyAsync");
  check(cudaStreamSynchronize(gather.stream), "cudaStreamSynchronize");
  // In rank order, as MPI folds a non-commutative operator: combine(in, inout) puts `in` first.
  mpi::detail::Partials total = local;
  std::memcpy(total.data(), gather.host + all - bytes, bytes);
  for (int r = ranks - 2; r >= 0; --r) mpi::detail::Partials::combine(gather.host + bytes * static_cast<std::size_t>(r), total.data(), bytes);
  Result result = total.result({}, options.result_dtype, shard.correction, own.result_shape);
  result.backend = std::move(own.backend);
  return result;
}

}  // namespace xreduce::nccl
