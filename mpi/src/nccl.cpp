#include "xreduce/nccl.hpp"

#include <cuda_runtime.h>

#include <cstdlib>
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

//! This thread's gather buffer and stream, kept between calls (a call allocates nothing once
//! warm) and remade when the current device changes. Where the device maps host memory, the
//! buffer is pinned host memory that NCCL reads and writes through its device address: no copy
//! to the GPU before the gather nor back after it (XREDUCE_NCCL_GATHER=copy: a device buffer and
//! its pinned twin, copied each way, as before).
struct Gather {
  int device = -1;
  bool mapped = false;
  cudaStream_t stream = nullptr;
  void* buffer = nullptr;     // one rank's partials, then every rank's: what NCCL reads and writes
  std::byte* host = nullptr;  // the same in pinned host memory (mapped: the very bytes)
  std::size_t capacity = 0;
  ~Gather() { release(); }
  void free_buffers() {
    if (buffer && !mapped) cudaFree(buffer);
    if (host) cudaFreeHost(host);
    buffer = nullptr, host = nullptr, capacity = 0;
  }
  void release() {
    free_buffers();
    if (stream) cudaStreamDestroy(stream);
    stream = nullptr;
  }
  void reserve(std::size_t bytes) {
    int now = 0;
    check(cudaGetDevice(&now), "cudaGetDevice");
    if (now != device) {
      release();
      device = now;
      int can_map = 0;
      check(cudaDeviceGetAttribute(&can_map, cudaDevAttrCanMapHostMemory, device), "cudaDeviceGetAttribute");
      const char* how = std::getenv("XREDUCE_NCCL_GATHER");
      mapped = can_map && !(how && std::string(how) == "copy");
      check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    }
    if (bytes > capacity) {
      free_buffers();
      if (mapped) {
        check(cudaHostAlloc(reinterpret_cast<void**>(&host), bytes, cudaHostAllocMapped), "cudaHostAlloc (partials to gather)");
        check(cudaHostGetDevicePointer(&buffer, host, 0), "cudaHostGetDevicePointer");
      } else {
        check(cudaMalloc(&buffer, bytes), "cudaMalloc (partials to gather)");
        check(cudaMallocHost(reinterpret_cast<void**>(&host), bytes), "cudaMallocHost (partials to gather)");
      }
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
  if (!gather.mapped)
    check(cudaMemcpyAsync(mine, gather.host + all, bytes, cudaMemcpyHostToDevice, gather.stream), "cudaMemcpyAsync");
  check(ncclAllGather(mine, device, bytes, ncclUint8, comm, gather.stream), "ncclAllGather");
  if (!gather.mapped)
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
