#include "workspace.hpp"

#include <map>
#include <mutex>
#include <vector>

#include "xreduce/error.hpp"

namespace xreduce::cuda {

void check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  cudaGetLastError();  // clear a sticky-free error so the next call starts clean
  const std::string message = std::string(what) + ": " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")";
  throw Error(status == cudaErrorMemoryAllocation ? ErrorCode::out_of_memory : ErrorCode::internal, message);
}

Workspace::Workspace(int dev) : device(dev) {
  XREDUCE_CUDA(cudaSetDevice(device));
  XREDUCE_CUDA(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device));
  // A blocking stream: it waits for work the caller issued on the legacy default stream (such as
  // the cudaMemcpy that filled device input, whose DMA may still be under way when it returns).
  XREDUCE_CUDA(cudaStreamCreate(&stream));
  XREDUCE_CUDA(cudaMalloc(reinterpret_cast<void**>(&counter), sizeof(unsigned int)));
  XREDUCE_CUDA(cudaMemset(counter, 0, sizeof(unsigned int)));
  int can_map = 0;
  XREDUCE_CUDA(cudaDeviceGetAttribute(&can_map, cudaDevAttrCanMapHostMemory, device));
  XREDUCE_CUDA(cudaHostAlloc(&host_result, kResultBytes, can_map ? cudaHostAllocMapped : cudaHostAllocDefault));
  if (can_map) {
    XREDUCE_CUDA(cudaHostGetDevicePointer(&result, host_result, 0));
    result_mapped = true;
  } else {
    XREDUCE_CUDA(cudaMalloc(&result, kResultBytes));
  }
}

void Workspace::fetch_result(std::size_t bytes) {
  if (!result_mapped) XREDUCE_CUDA(cudaMemcpyAsync(host_result, result, bytes, cudaMemcpyDeviceToHost, stream));
}

Workspace::~Workspace() {
  cudaSetDevice(device);
  if (stream) cudaStreamDestroy(stream);
  if (result && !result_mapped) cudaFree(result);
  if (counter) cudaFree(counter);
  if (exact_total) cudaFree(exact_total);
  if (host_result) cudaFreeHost(host_result);
}

namespace {
std::mutex pool_mutex;
std::map<int, std::vector<std::unique_ptr<Workspace>>>& pool() {
  // Leaked on purpose: destroying workspaces after the CUDA runtime has shut down at exit fails.
  static auto* p = new std::map<int, std::vector<std::unique_ptr<Workspace>>>;
  return *p;
}
}  // namespace

WorkspaceLease::WorkspaceLease(int device) {
  {
    std::lock_guard lock(pool_mutex);
    auto& free = pool()[device];
    if (!free.empty()) {
      ws_ = std::move(free.back());
      free.pop_back();
    }
  }
  if (!ws_) ws_ = std::make_unique<Workspace>(device);
  XREDUCE_CUDA(cudaSetDevice(device));
}

WorkspaceLease::~WorkspaceLease() {
  if (!ws_) return;
  // A workspace whose stream saw an error is dropped, not reused.
  if (cudaStreamQuery(ws_->stream) != cudaSuccess) {
    cudaGetLastError();
    return;
  }
  std::lock_guard lock(pool_mutex);
  pool()[ws_->device].push_back(std::move(ws_));
}

}  // namespace xreduce::cuda
