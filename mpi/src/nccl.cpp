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

//! How the partials reach NCCL (XREDUCE_NCCL_GATHER): `mapped` (the default where the device maps
//! host memory) is pinned host memory that NCCL reads and writes through its device address, no
//! copy to the GPU before the gather nor back after it; `copy` a device buffer and its pinned
//! twin, copied each way; `symmetric` the same copies around a buffer of ncclMemAlloc that every
//! rank registers as a symmetric window (NCCL's symmetric kernels read the peers' memory directly).
enum class GatherWay { mapped, copy, symmetric };

//! This thread's gather buffer and stream, kept between calls (a call allocates nothing once
//! warm) and remade when the current device (or, for a window, the communicator) changes. With
//! XREDUCE_NCCL_GRAPH=1 the copies and the gather are captured once in a CUDA graph for a size
//! and a communicator, and each call launches the graph: one launch instead of up to three.
struct Gather {
  int device = -1;
  ncclComm_t comm = nullptr;
  GatherWay way = GatherWay::mapped;
  bool graphed = false;
  cudaStream_t stream = nullptr;
  void* buffer = nullptr;     // one rank's partials, then every rank's: what NCCL reads and writes
  std::byte* host = nullptr;  // the same in pinned host memory (mapped: the very bytes)
  ncclWindow_t window = nullptr;
  std::size_t capacity = 0;
  cudaGraphExec_t graph = nullptr;  // the gather of graph_bytes a rank, captured
  std::size_t graph_bytes = 0;
  ~Gather() { release(/*comm_alive=*/false); }
  void drop_graph() {
    if (graph) cudaGraphExecDestroy(graph);
    graph = nullptr, graph_bytes = 0;
  }
  //! A window belongs to its communicator, which may be gone by now (at a thread's exit, or when
  //! a call brings another communicator): then the window and its memory are left as they are.
  void free_buffers(bool comm_alive) {
    drop_graph();
    if (way == GatherWay::symmetric) {
      if (comm_alive && window) ncclCommWindowDeregister(comm, window);
      if (comm_alive && buffer) ncclMemFree(buffer);
    } else if (buffer && way == GatherWay::copy) {
      cudaFree(buffer);
    }
    if (host) cudaFreeHost(host);
    buffer = nullptr, host = nullptr, window = nullptr, capacity = 0;
  }
  void release(bool comm_alive) {
    free_buffers(comm_alive);
    if (stream) cudaStreamDestroy(stream);
    stream = nullptr;
  }
  void reserve(ncclComm_t with, std::size_t bytes) {
    int now = 0;
    check(cudaGetDevice(&now), "cudaGetDevice");
    if (now != device || (way == GatherWay::symmetric && with != comm)) {
      release(/*comm_alive=*/with == comm);
      device = now;
      int can_map = 0;
      check(cudaDeviceGetAttribute(&can_map, cudaDevAttrCanMapHostMemory, device), "cudaDeviceGetAttribute");
      const char* how = std::getenv("XREDUCE_NCCL_GATHER");
      const std::string asked = how ? how : "";
      way = asked == "symmetric" ? GatherWay::symmetric : asked == "copy" || !can_map ? GatherWay::copy : GatherWay::mapped;
      const char* graph_asked = std::getenv("XREDUCE_NCCL_GRAPH");
      graphed = graph_asked && std::string(graph_asked) == "1";
      check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    }
    if (with != comm) drop_graph();
    comm = with;
    if (bytes > capacity) {
      free_buffers(/*comm_alive=*/true);
      switch (way) {
        case GatherWay::mapped:
          check(cudaHostAlloc(reinterpret_cast<void**>(&host), bytes, cudaHostAllocMapped), "cudaHostAlloc (partials to gather)");
          check(cudaHostGetDevicePointer(&buffer, host, 0), "cudaHostGetDevicePointer");
          break;
        case GatherWay::copy:
          check(cudaMalloc(&buffer, bytes), "cudaMalloc (partials to gather)");
          check(cudaMallocHost(reinterpret_cast<void**>(&host), bytes), "cudaMallocHost (partials to gather)");
          break;
        case GatherWay::symmetric:
          check(ncclMemAlloc(&buffer, bytes), "ncclMemAlloc (partials to gather)");
          check(ncclCommWindowRegister(comm, buffer, bytes, &window, NCCL_WIN_COLL_SYMMETRIC), "ncclCommWindowRegister");
          check(cudaMallocHost(reinterpret_cast<void**>(&host), bytes), "cudaMallocHost (partials to gather)");
          break;
      }
      capacity = bytes;
    }
  }
  //! Enqueues the copies and the gather of `bytes` a rank out of `ranks`, the rank's own at
  //! host + all, every rank's to host[0, all).
  void enqueue(std::size_t bytes, int ranks) {
    const std::size_t all = bytes * static_cast<std::size_t>(ranks);
    auto* device_bytes = static_cast<std::byte*>(buffer);
    std::byte* mine = device_bytes + all;
    if (way != GatherWay::mapped)
      check(cudaMemcpyAsync(mine, host + all, bytes, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync");
    check(ncclAllGather(mine, device_bytes, bytes, ncclUint8, comm, stream), "ncclAllGather");
    if (way != GatherWay::mapped)
      check(cudaMemcpyAsync(host, device_bytes, all, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync");
  }
  void gather(std::size_t bytes, int ranks) {
    if (!graphed) {
      enqueue(bytes, ranks);
    } else {
      if (!graph || graph_bytes != bytes) {
        drop_graph();
        cudaGraph_t captured = nullptr;
        check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
        enqueue(bytes, ranks);
        check(cudaStreamEndCapture(stream, &captured), "cudaStreamEndCapture");
        const cudaError_t made = cudaGraphInstantiate(&graph, captured, 0);
        cudaGraphDestroy(captured);
        check(made, "cudaGraphInstantiate");
        graph_bytes = bytes;
      }
      check(cudaGraphLaunch(graph, stream), "cudaGraphLaunch");
    }
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
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
  gather.reserve(comm, all + bytes);
  std::memcpy(gather.host + all, local.data(), bytes);
  gather.gather(bytes, ranks);
  // In rank order, as MPI folds a non-commutative operator: combine(in, inout) puts `in` first.
  mpi::detail::Partials total = local;
  std::memcpy(total.data(), gather.host + all - bytes, bytes);
  for (int r = ranks - 2; r >= 0; --r) mpi::detail::Partials::combine(gather.host + bytes * static_cast<std::size_t>(r), total.data(), bytes);
  Result result = total.result({}, options.result_dtype, shard.correction, own.result_shape);
  result.backend = std::move(own.backend);
  return result;
}

}  // namespace xreduce::nccl
