// The CUDA module: libxreduce_cuda.so, a plugin. It registers one backend per technique
// (techniques.hpp), tells the core which pointers are device pointers, and reports every backend
// unavailable, with the reason, on a machine without a usable GPU.

#include <dlfcn.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "techniques.hpp"
#include "xreduce/backend/plugin.hpp"

namespace xreduce::cuda {
namespace {

// A trivial kernel whose attributes tell whether this binary has code for the GPU at hand.
__global__ void probe_kernel() {}

//! Whether CUDA work can run here, checked once per process.
const Availability& gpu_availability() {
  static const Availability a = [] {
    int count = 0;
    cudaError_t status = cudaGetDeviceCount(&count);
    if (status == cudaErrorInsufficientDriver)  // also what CUDA says when there is no driver at all
      return Availability::no("no CUDA driver, or one older than this build's CUDA runtime");
    if (status != cudaSuccess) {
      cudaGetLastError();
      return Availability::no(std::string("no usable CUDA device (") + cudaGetErrorString(status) + ")");
    }
    if (count == 0) return Availability::no("no CUDA device");
    cudaFuncAttributes attributes{};
    status = cudaFuncGetAttributes(&attributes, probe_kernel);
    if (status != cudaSuccess) {
      cudaGetLastError();
      cudaDeviceProp prop{};
      cudaGetDeviceProperties(&prop, 0);
      return Availability::no(std::string("this build has no code for ") + prop.name + " (sm_" + std::to_string(prop.major) +
                              std::to_string(prop.minor) + "); rebuild with -DCMAKE_CUDA_ARCHITECTURES=" +
                              std::to_string(prop.major) + std::to_string(prop.minor));
    }
    return Availability::yes();
  }();
  return a;
}

//! GPUs visible to this process (0 without a usable one).
int gpu_count() {
  static const int count = [] {
    int n = 0;
    if (!gpu_availability() || cudaGetDeviceCount(&n) != cudaSuccess) return 0;
    return n;
  }();
  return count;
}

//! The memory space and device of a pointer; host (and the current device) if CUDA does not know it.
struct Location {
  Memory memory = Memory::host;
  int device = 0;
  bool pinned = false;  //!< host memory that is page-locked (cudaHostAlloc, cudaHostRegister)
};

Location locate_pointer(const void* p) {
  Location where;
  cudaGetDevice(&where.device);
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    cudaGetLastError();
    return where;
  }
  if (attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged) {
    where.memory = Memory::device;
    where.device = attributes.device;
  }
  where.pinned = attributes.type == cudaMemoryTypeHost;
  return where;
}

class CudaReducer final : public Reducer {
 public:
  explicit CudaReducer(const TechniqueInfo& info) : info_(info) {}
  std::string_view name() const override { return info_.name; }
  Capabilities capabilities() const override { return info_.capabilities; }
  Availability available() const override {
    if (!gpu_availability()) return gpu_availability();
    if (info_.multi_gpu && gpu_count() < 2)
      return Availability::no("one GPU here (cuda.shuffle streams host data to it)");
    return Availability::yes();
  }
  std::vector<SettingInfo> settings() const override {
    const Streaming d;
    std::vector<SettingInfo> keys{
        {"chunk_bytes", std::to_string(d.chunk_bytes), "host input: bytes per streamed chunk (4096 to 2^48; more than the GPU holds is out_of_memory)"},
        {"streams", std::to_string(d.streams), "host input: chunks in flight, each on its own stream (1 to 64)"},
        {"copy_threads", std::to_string(d.copy_threads),
         "pageable host input: host threads that copy it into pinned staging, each with its own streams (1 to 256)"},
        {"stage_bytes", std::to_string(d.stage_bytes), "pageable host input: bytes a copy thread stages at a time (4096 to 2^40)"}};
    if (takes_block_size())
      keys.push_back({"block_size", std::to_string(kDefaultBlockSize),
                      std::string("GPU threads per block: 128, 256, 512 or 1024") +
                          (info_.block_size ? "" : " (exact sums; the other kernels' blocks are tuned)")});
    return keys;
  }
  void configure(const Settings& s) override {
    streaming_ = streaming(s, streaming_);
    block_ = block_size(s, block_);
  }

 protected:
  Result do_reduce(const Request& q, const Options& o) override {
    const Features f = features_of(q, o.accuracy.value_or(Accuracy::standard));
    const bool exact = f.accuracy == Accuracy::exact;
    // The seed kernels take the block size they are given; the others only for exact sums.
    const int block = info_.block_size || exact ? block_size(o.settings, block_) : kDefaultBlockSize;
    Location where = locate_pointer(q.data);
    if (q.memory == Memory::host) where.memory = Memory::host;
    if (q.memory == Memory::device && !q.data) where.memory = Memory::device;  // segments of nothing
    if (q.memory == Memory::device && where.memory != Memory::device)
      throw Error(ErrorCode::invalid_argument, "'" + std::string(info_.name) + "': the request says device memory, but " +
                                                   "CUDA does not know the pointer as device memory");
    // A device pointer given as automatic memory reaches cuda.multi_gpu (the core resolves
    // automatic memory as host data for it): its data is on one GPU, and the backends that read
    // it are there.
    if (info_.multi_gpu && where.memory == Memory::device)
      throw Error(ErrorCode::unsupported, "'" + std::string(info_.name) + "' spreads host data over the GPUs; " +
                                              "data in GPU memory is reduced where it lives (cuda.shuffle, cuda.single_pass, cub)");
    const Streaming stream_settings = o.settings.empty() ? streaming_ : streaming(o.settings, streaming_);
    if (f.layout == Layout::inner || f.layout == Layout::ragged) return reduce_segmented(q, where, exact, stream_settings);
    if (f.layout == Layout::middle || f.layout == Layout::strided) return reduce_view(q, where, exact);
    if (f.layout != Layout::all && f.layout != Layout::outer)
      throw Error(ErrorCode::internal, "'" + std::string(info_.name) + "' has no kernels for " + to_string(f));
    // Records (layout outer): `count` rows of `width` values, a result per column, into q.out.
    const bool records = f.layout == Layout::outer;
    const std::size_t width = records ? static_cast<std::size_t>(q.view.shape[1]) : 1;
    const std::size_t count = records ? static_cast<std::size_t>(q.view.shape[0]) : q.count;
    const bool statistic = !is_core_op(q.op) && !f.several;  // one op of statistics.cuh
    // Exact: a sum or mean hands on the exact partial of x, a var or std those of x and x squared;
    // the core rounds the result once from them.
    const bool exact_squares = exact && (q.op == Op::var || q.op == Op::std);
    if (info_.multi_gpu) {
      if (exact) {
        Result r;
        r.exact = exact_partials_on_gpus(info_.technique, q.data, q.count, q.dtype, exact_squares, block, gpu_count(),
                                         where.pinned, stream_settings);
        return r;
      }
      if (statistic)
        return into_out(reduce_host_statistic_on_gpus(q.data, count, width, q.dtype, q.op, q.correction, wide_results(o),
                                                      gpu_count(), where.pinned, stream_settings),
                        q, records);
      return into_out(reduce_host_on_gpus(info_.technique, q.data, count, width, q.dtype, q.op, block, gpu_count(),
                                          where.pinned, stream_settings),
                      q, records);
    }
    if (exact && where.memory == Memory::host) {
      Result r;
      if (exact_squares) r.exact = exact_moments_of_host(q.data, q.count, q.dtype, where.device, where.pinned, stream_settings);
      else r.exact = {exact_sum_of_host(info_.technique, q.data, q.count, q.dtype, block, where.device, where.pinned, stream_settings)};
      return r;
    }
    if (where.memory == Memory::host && statistic) {
      const std::vector<unsigned char> partials =
          reduce_host_statistic(q.data, count, width, q.dtype, q.op, where.device, where.pinned, stream_settings);
      return into_out(statistic_results(statistic_partials(q.dtype, q.op), partials.data(), width, count, q.correction,
                                        wide_results(o)),
                      q, records);
    }
    if (where.memory == Memory::host && f.several) {
      reduce_host_stats(q.data, q.count, q.dtype, q.ops, q.correction, *q.ops_out, where.device, where.pinned, stream_settings);
      return Result{};
    }
    if (where.memory == Memory::host)
      return into_out(reduce_host(info_.technique, q.data, count, width, q.dtype, q.op, block, where.device, where.pinned,
                                  stream_settings),
                      q, records);
    // Columns of whole 16-byte vectors, aligned: the views kernel, which reads rows a warp at a
    // time and writes the results where they go (3-12% faster than the records kernel on an
    // H200, bench/results/nvidia-h200/views.md). The records kernel keeps odd widths, which it
    // still reads in vectors, but not argmin and argmax, nor the statistics, which only the views
    // kernel does.
    if (records && !exact &&
        (statistic || returns_index(q.op) ||
         (reinterpret_cast<std::uintptr_t>(q.data) % 16 == 0 && width % (16 / size_of(q.dtype)) == 0)))
      return reduce_view(q, where);
    WorkspaceLease ws(where.device);
    const std::size_t bytes = q.count * size_of(q.dtype);
    const void* data = q.data;
    if (reinterpret_cast<std::uintptr_t>(q.data) % size_of(q.dtype) != 0) {
      void* staging = ws->staging.reserve(bytes, "realigned device input");
      XREDUCE_CUDA(cudaMemcpyAsync(staging, q.data, bytes, cudaMemcpyDeviceToDevice, ws->stream));
      data = staging;
    }
    if (exact) {
      Result r;
      if (records) r.exact = exact_column_sums_of_device(data, count, width, q.dtype, *ws);  // the core rounds each column
      else if (exact_squares) r.exact = exact_moments_of_device(data, q.count, q.dtype, *ws);
      else r.exact = {exact_sum_of_device(info_.technique, data, q.count, q.dtype, block, *ws)};
      return r;
    }
    if (statistic) {
      enqueue_statistic(data, q.count, q.dtype, q.op, *ws);
      return collect_statistic(q.count, q.dtype, q.op, q.correction, wide_results(o), *ws);
    }
    if (f.several) {
      enqueue_stats(data, q.count, q.dtype, q.ops, *ws);
      collect_stats(q.dtype, q.ops, q.correction, *q.ops_out, *ws);
      return Result{};  // the results are in q.ops_out; Reducer::reduce fills the rest
    }
    if (records) {
      enqueue_records(data, count, width, q.dtype, q.op, *ws);
      return into_out(collect_records(q.dtype, q.op, width, *ws), q, true);
    }
    enqueue(info_.technique, data, q.count, q.dtype, q.op, block, *ws);
    return collect(q.dtype, q.op, *ws);
  }

 private:
  //! A segmented request: its offsets must be where its data are (the kernels read both); its
  //! results may go to either memory. Rows of host data, one op at a time, are streamed (over
  //! every GPU by cuda.multi_gpu); segments, several ops and exact sums are copied in whole.
  Result reduce_segmented(const Request& q, const Location& where, bool exact, const Streaming& stream_settings) const {
    const bool on_device = where.memory == Memory::device;
    if (q.segments.offsets && (locate_pointer(q.segments.offsets).memory == Memory::device) != on_device)
      throw Error(ErrorCode::invalid_argument, "'" + std::string(info_.name) + "': the segment offsets must be in the data's memory (" +
                                                   std::string(to_string(where.memory)) + ")");
    // Every result array in one memory: one op's out and out_index, or each asked stat's.
    std::vector<const void*> outputs{q.out, q.out_index};
    for (Op s : all_ops)
      if (q.ops.contains(s)) outputs.insert(outputs.end(), {q.ops_out->values[static_cast<int>(s)], q.ops_out->indices[static_cast<int>(s)]});
    const bool out_on_device = locate_pointer(q.ops.empty() ? q.out : outputs[2]).memory == Memory::device;
    for (const void* p : outputs)
      if (p && (locate_pointer(p).memory == Memory::device) != out_on_device)
        throw Error(ErrorCode::invalid_argument, "'" + std::string(info_.name) + "': the results must all go to one memory");
    if (!on_device && !q.segments.segmented() && q.ops.empty() && !exact) {
      if (info_.multi_gpu) reduce_host_rows_on_gpus(info_.technique, q, gpu_count(), where.pinned, out_on_device, stream_settings);
      else reduce_host_rows(info_.technique, q, where.device, where.pinned, out_on_device, stream_settings);
      return Result{};
    }
    if (info_.multi_gpu) throw Error(ErrorCode::internal, "'" + std::string(info_.name) + "' takes rows of host data, one op at a time");
    return reduce_segments(info_.technique, q, on_device, out_on_device, where.device, exact);
  }

  //! A view of device data that is not flat, rows or ragged (layouts middle and strided, which
  //! the capabilities take of device data only, outer of whole vectors, and argmin/argmax and the
  //! statistics of outer): read in place by kernels/views.cuh, the results written to q.out (the
  //! indices to q.out_index), each in host or device memory.
  Result reduce_view(const Request& q, const Location& where, bool exact = false) const {
    if (where.memory != Memory::device)
      throw Error(ErrorCode::internal, "'" + std::string(info_.name) + "' reads views of device data only");
    if (reinterpret_cast<std::uintptr_t>(q.data) % size_of(q.dtype) != 0)
      throw Error(ErrorCode::unsupported, "'" + std::string(info_.name) + "' reads N-D views of device data aligned to " +
                                              "their element size; this one starts between elements");
    WorkspaceLease ws(where.device);
    const std::size_t bytes = result_count(q) * size_of(result_dtype(q.dtype, q.op));
    const bool out_on_device = locate_pointer(q.out).memory == Memory::device;
    void* out = out_on_device ? q.out : ws->columns.reserve(bytes, "results of a view");
    // The indices likewise: staging is free here (the view is read in place).
    const std::size_t index_bytes = returns_index(q.op) ? result_count(q) * sizeof(std::uint64_t) : 0;
    const bool index_on_device = index_bytes > 0 && locate_pointer(q.out_index).memory == Memory::device;
    auto* out_index = index_bytes == 0 ? nullptr
                      : index_on_device ? q.out_index
                                        : static_cast<std::uint64_t*>(ws->staging.reserve(index_bytes, "indices of a view"));
    if (exact) enqueue_exact_view(q, out, *ws);  // each result rounded once on the GPU
    else enqueue_view(q, out, out_index, *ws);
    if (!out_on_device) XREDUCE_CUDA(cudaMemcpyAsync(q.out, out, bytes, cudaMemcpyDeviceToHost, ws->stream));
    if (index_bytes > 0 && !index_on_device)
      XREDUCE_CUDA(cudaMemcpyAsync(q.out_index, out_index, index_bytes, cudaMemcpyDeviceToHost, ws->stream));
    XREDUCE_CUDA(cudaStreamSynchronize(ws->stream));
    return Result{};
  }

  bool takes_block_size() const {
    Features exact_sum;
    exact_sum.accuracy = Accuracy::exact;
    return info_.block_size || info_.capabilities.support(exact_sum) != Support::none;
  }

  //! Records' column results (Result::values) packed into q.out, and their rows (Result::indices,
  //! nanargmin and nanargmax) into q.out_index, host or device memory: what the core expects of
  //! layout outer. A flat result is returned as it is.
  static Result into_out(Result r, const Request& q, bool records) {
    if (!records) return r;
    std::vector<unsigned char> packed;
    for (const Scalar& v : r.values) {
      const auto* bytes = static_cast<const unsigned char*>(v.bytes());
      packed.insert(packed.end(), bytes, bytes + size_of(v.dtype()));
    }
    XREDUCE_CUDA(cudaMemcpy(q.out, packed.data(), packed.size(), cudaMemcpyDefault));
    if (q.out_index && !r.indices.empty())
      XREDUCE_CUDA(cudaMemcpy(q.out_index, r.indices.data(), r.indices.size() * sizeof(std::uint64_t), cudaMemcpyDefault));
    return Result{};
  }

  //! The `block_size` of `s`, else `base`.
  int block_size(const Settings& s, int base) const {
    const auto b = s.integer("block_size", 0, std::int64_t{1} << 30);
    if (!b) return base;
    if (*b != 128 && *b != 256 && *b != 512 && *b != 1024)
      throw Error(ErrorCode::invalid_argument, "setting 'block_size' = '" + std::to_string(*b) + "' (from " +
                                                   s.find("block_size")->origin + ") for '" + std::string(info_.name) +
                                                   "': choose 128, 256, 512 or 1024");
    return static_cast<int>(*b);
  }

  //! `base` with the streaming settings of `s` over it.
  static Streaming streaming(const Settings& s, Streaming base) {
    base.chunk_bytes = static_cast<std::size_t>(s.integer("chunk_bytes", 4096, std::int64_t{1} << 48).value_or(
        static_cast<std::int64_t>(base.chunk_bytes)));
    base.streams = static_cast<int>(s.integer("streams", 1, 64).value_or(base.streams));
    base.copy_threads = static_cast<int>(s.integer("copy_threads", 1, 256).value_or(base.copy_threads));
    base.stage_bytes = static_cast<std::size_t>(s.integer("stage_bytes", 4096, std::int64_t{1} << 40).value_or(
        static_cast<std::int64_t>(base.stage_bytes)));
    return base;
  }

  TechniqueInfo info_;
  Streaming streaming_;  // the defaults, with the config file's settings over them
  int block_ = kDefaultBlockSize;  // likewise
};

//! Whether this process has started the GPU's driver (cuInit), asked without starting it: libcuda
//! not loaded, or loaded and answering CUDA_ERROR_NOT_INITIALIZED, means it has not. Once started
//! it stays so, and the answer is remembered.
bool driver_started() {
  static std::atomic<bool> seen_started{false};
  if (seen_started.load(std::memory_order_relaxed)) return true;
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (!driver) return false;
  using DeviceCount = int (*)(int*);
  const auto device_count = reinterpret_cast<DeviceCount>(dlsym(driver, "cuDeviceGetCount"));
  int count = 0;
  constexpr int kNotInitialized = 3;  // CUDA_ERROR_NOT_INITIALIZED: no cuInit yet
  const bool started = !device_count || device_count(&count) != kNotInitialized;
  dlclose(driver);
  if (started) seen_started.store(true, std::memory_order_relaxed);
  return started;
}

std::int32_t locate(const void* p) {
  // Memory is pinned or a device's only through a driver this process has started, so until then
  // the answer is known, and asking the driver would start it (about 300 ms on the H200 host) for a
  // caller who may never use the GPU: this is what lets the default thresholds send pinned data to
  // `hybrid` at no cost to CPU-only callers.
  if (!driver_started()) return XREDUCE_LOCATION_UNKNOWN;
  if (!gpu_availability()) return XREDUCE_LOCATION_UNKNOWN;
  const Location where = locate_pointer(p);
  if (where.memory == Memory::device) return XREDUCE_LOCATION_DEVICE;
  return where.pinned ? XREDUCE_LOCATION_PINNED_HOST : XREDUCE_LOCATION_HOST;
}

//! Whether `call` (a CUDA runtime call, named `what`) succeeded on a usable GPU: false with the
//! reason in `message` (no GPU, or CUDA's error), for the memory services below.
template <class Call>
bool succeeded(const char* what, Call&& call, char* message, size_t size) {
  if (const Availability& a = gpu_availability(); !a) {
    detail::copy_message(a.reason, message, size);
    return false;
  }
  if (cudaError_t status = call(); status != cudaSuccess) {
    cudaGetLastError();
    detail::copy_message(std::string(what) + ": " + cudaGetErrorString(status), message, size);
    return false;
  }
  return true;
}

// Pinned host memory for the core's PinnedBuffer and PinnedRegion.
void* allocate_pinned(size_t bytes, char* message, size_t size) {
  void* p = nullptr;
  return succeeded("cudaMallocHost", [&] { return cudaMallocHost(&p, bytes == 0 ? 1 : bytes); }, message, size) ? p : nullptr;
}
void release_pinned(void* p) { cudaFreeHost(p); }
std::int32_t pin(void* p, size_t bytes, char* message, size_t size) {
  return succeeded("cudaHostRegister", [&] { return cudaHostRegister(p, bytes, cudaHostRegisterDefault); }, message, size);
}
void unpin(void* p) { cudaHostUnregister(p); }

// Device memory for the core's DeviceBuffer.
void* allocate_device(size_t bytes, char* message, size_t size) {
  void* p = nullptr;
  return succeeded("cudaMalloc", [&] { return cudaMalloc(&p, bytes == 0 ? 1 : bytes); }, message, size) ? p : nullptr;
}
void release_device(void* p) { cudaFree(p); }
std::int32_t copy_memory(void* target, const void* source, size_t bytes, char* message, size_t size) {
  return succeeded("cudaMemcpy", [&] { return cudaMemcpy(target, source, bytes, cudaMemcpyDefault); }, message, size);
}

}  // namespace
}  // namespace xreduce::cuda

extern "C" XREDUCE_PLUGIN_EXPORT std::int32_t xreduce_plugin_init_v3(std::uint32_t host_abi, xreduce_plugin_v3* out,
                                                                     char* message, size_t message_size) {
  static xreduce::plugin::Exporter exporter("cuda", [] {
    std::vector<xreduce::plugin::Entry> backends;
    for (const auto& info : xreduce::cuda::techniques)
      backends.push_back({std::make_unique<xreduce::cuda::CudaReducer>(info), info.priority});
    return backends;
  });
  return exporter.init(host_abi, out, message, message_size, &xreduce::cuda::locate);
}

extern "C" XREDUCE_PLUGIN_EXPORT const xreduce_memory_v1* xreduce_plugin_memory_v1() {
  static const xreduce_memory_v1 memory{sizeof(xreduce_memory_v1), &xreduce::cuda::allocate_pinned,
                                        &xreduce::cuda::release_pinned, &xreduce::cuda::pin, &xreduce::cuda::unpin};
  return &memory;
}

extern "C" XREDUCE_PLUGIN_EXPORT const xreduce_device_memory_v1* xreduce_plugin_device_memory_v1() {
  static const xreduce_device_memory_v1 memory{sizeof(xreduce_device_memory_v1), &xreduce::cuda::allocate_device,
                                               &xreduce::cuda::release_device, &xreduce::cuda::copy_memory};
  return &memory;
}
