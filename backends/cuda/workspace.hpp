#pragma once
// Per-call device resources, pooled per device so that no call allocates once warm: a stream,
// scratch for partials, a staging buffer for host input, CUB's temporary storage, the result slot
// and the completion counter of the single-pass kernel, and (for the streamed host path) pinned
// staging. A call leases the workspaces it uses for its whole duration, which makes the module
// safe to call from several host threads at once.

#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <string>

#include "xreduce/error.hpp"

namespace xreduce::cuda {

//! Throws xreduce::Error for a failed CUDA call: out_of_memory for allocation failures,
//! internal otherwise, with the call and CUDA's message.
void check(cudaError_t status, const char* what);
#define XREDUCE_CUDA(call) ::xreduce::cuda::check((call), #call)

//! An allocation that only grows (and is kept between calls): device memory, or pinned host
//! memory for the streamed path's staging. Allocation failure is Error(out_of_memory).
template <class Allocation>
class GrowingBuffer {
 public:
  GrowingBuffer() = default;
  GrowingBuffer(const GrowingBuffer&) = delete;
  GrowingBuffer& operator=(const GrowingBuffer&) = delete;
  ~GrowingBuffer() {
    if (ptr_) Allocation::release(ptr_);
  }
  void* reserve(std::size_t bytes, const char* what) {
    if (bytes <= capacity_) return ptr_;
    if (ptr_) Allocation::release(ptr_);
    ptr_ = nullptr;
    capacity_ = 0;
    if (cudaError_t status = Allocation::allocate(&ptr_, bytes); status != cudaSuccess) {
      ptr_ = nullptr;
      cudaGetLastError();
      throw Error(ErrorCode::out_of_memory, "cannot allocate " + std::to_string(bytes) + " bytes of " + Allocation::kind +
                                                " for " + what + ": " + cudaGetErrorString(status));
    }
    capacity_ = bytes;
    return ptr_;
  }
  void* get() const { return ptr_; }
  std::size_t capacity() const { return capacity_; }

 private:
  void* ptr_ = nullptr;
  std::size_t capacity_ = 0;
};

struct DeviceAllocation {
  static constexpr const char* kind = "GPU memory";
  static cudaError_t allocate(void** p, std::size_t bytes) { return cudaMalloc(p, bytes); }
  static void release(void* p) { cudaFree(p); }
};
struct PinnedAllocation {
  static constexpr const char* kind = "pinned host memory";
  static cudaError_t allocate(void** p, std::size_t bytes) { return cudaMallocHost(p, bytes); }
  static void release(void* p) { cudaFreeHost(p); }
};
using DeviceBuffer = GrowingBuffer<DeviceAllocation>;
using PinnedHostBuffer = GrowingBuffer<PinnedAllocation>;

struct Workspace {
  int device = 0;
  int sm_count = 0;
  cudaStream_t stream = nullptr;
  DeviceBuffer scratch;   //!< partial results between passes
  DeviceBuffer staging;   //!< host input copied in, or misaligned device input realigned
  DeviceBuffer cub_temp;  //!< cub::DeviceReduce temporary storage
  PinnedHostBuffer pinned;  //!< host staging for pageable input of the streamed path
  DeviceBuffer columns;           //!< records: the column accumulators
  DeviceBuffer result_partials;   //!< a statistic of a view: each result's partial, before its finish; exact f64 segment sums: the segments their pairs of doubles left, to sum again
  PinnedHostBuffer host_columns;  //!< records: their host copy
  //! Bytes of `result`: the largest final acc_t (several ops with the moments, 72 bytes).
  static constexpr std::size_t kResultBytes = 128;
  //! Where kernels write the final acc_t (kResultBytes): the device's view of host_result, pinned
  //! host memory mapped into the device's address space, so that the result needs no copy back
  //! (a call on 2^10 device elements took 10-11 us instead of 17-19 with the copy, on an H200);
  //! device memory where the device cannot map host memory, and fetch_result() copies it back.
  void* result = nullptr;
  bool result_mapped = false;         //!< result is host_result, seen from the device
  unsigned int* counter = nullptr;    //!< device: blocks done, single_pass (kept at 0 between calls)
  long long* exact_total = nullptr;   //!< device: exact sums' accumulator, 72 words (kept at 0 between calls; made on first use)
  void* host_result = nullptr;        //!< pinned host memory: the result, once the stream is done

  //! Enqueues what brings the first `bytes` of `result` to host_result (nothing where it is
  //! mapped): read host_result once the stream is done.
  void fetch_result(std::size_t bytes);

  explicit Workspace(int device);
  ~Workspace();
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  template <class A>
  A* result_as() const { return static_cast<A*>(result); }
  //! Two areas of `count` A's each, for ping-ponging partials between passes.
  template <class A>
  A* scratch_as(std::size_t count) {
    return static_cast<A*>(scratch.reserve(2 * count * sizeof(A) + 256, "scratch for partial results"));
  }
};

//! A workspace on loan for the duration of one call; returned to the pool by the destructor.
class WorkspaceLease {
 public:
  explicit WorkspaceLease(int device);
  ~WorkspaceLease();
  WorkspaceLease(const WorkspaceLease&) = delete;
  WorkspaceLease& operator=(const WorkspaceLease&) = delete;
  Workspace& operator*() const { return *ws_; }
  Workspace* operator->() const { return ws_.get(); }

 private:
  std::unique_ptr<Workspace> ws_;
};

}  // namespace xreduce::cuda
