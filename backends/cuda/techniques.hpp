#pragma once
// The CUDA backends: which technique each is, what it supports, and the host-side entry that
// enqueues one reduction of device data on a workspace's stream, leaving the result in ws.result.

#include <array>
#include <string>
#include <utility>
#include <vector>
#include <cstddef>
#include <cstring>
#include <functional>
#include <string_view>
#include <type_traits>

#include "workspace.hpp"
#include "xreduce/backend/reducer.hpp"
#include "xreduce/request.hpp"

namespace xreduce::cuda {

enum class Technique {
  global_halving,
  interleaved,
  interleaved_strided,
  sequential,
  first_add,
  unroll_warp,
  unroll_full,
  cascaded,
  shuffle,
  single_pass,
  cub,
  thrust,
};

//! Whether the seed kernels and thrust are built for T: the six 32- and 64-bit types
//! (dtypes_32_64). The library kernels (cuda.shuffle, cuda.single_pass, cub) take every type.
template <class T>
inline constexpr bool is_32_64_v = std::is_arithmetic_v<T> && sizeof(T) >= 4;

//! The floating types whose sums have an exact form on the GPU (kernels/exact_sum.cuh), flat, as
//! records, rows and segments (kernels/exact_segments.cuh, exact_segments_f64.cuh) and other N-D
//! views of device data (kernels/exact_views.cuh).
inline constexpr std::array<DType, 4> kExactDTypes{DType::f32, DType::f64, DType::f16, DType::bf16};

//! Calls f with a value of the C++ type of `t`, one of kExactDTypes (the capabilities refuse the others).
template <class F>
decltype(auto) visit_exact_dtype(DType t, F&& f) {
  switch (t) {
    case DType::f64: return f(double{});
    case DType::f16: return f(f16{});
    case DType::bf16: return f(bf16{});
    case DType::f32: break;
    default: throw Error(ErrorCode::internal, "exact sums on the GPU: no kernels for " + std::string(to_string(t)));
  }
  return f(float{});
}

// What the techniques do, as feature sets of host and device data.
namespace caps {
inline constexpr OpSet kSeedOps{Op::sum, Op::prod, Op::min, Op::max};
inline constexpr OpSet kOneOps{Op::sum, Op::prod, Op::min, Op::max, Op::argmin, Op::argmax};
//! What StatsOp computes together (the sum of squares only there: no kernel of its own).
inline constexpr OpSet kTogether{Op::sum, Op::min, Op::max, Op::argmin, Op::argmax, Op::sumsq};
//! What StatsMomentsOp computes beside them, of floats: mean, var and std, from one moments partial.
inline constexpr OpSet kMomentsTogether{Op::mean, Op::var, Op::std};
constexpr bool names_moments(OpSet ops) { return ops.contains(Op::mean) || ops.contains(Op::var) || ops.contains(Op::std); }
//! The statistics cuda.shuffle computes, of floats, a flat array at a time (statistics.cuh;
//! host data streamed, and over every GPU by cuda.multi_gpu); nanprod, and the statistics of
//! integers and bools, are the CPU's.
inline constexpr OpSet kGpuStatistics{Op::mean,          Op::var,    Op::std,     Op::nanmean, Op::nanvar,    Op::nanstd,
                                      Op::norm1,         Op::norm2,  Op::norminf, Op::logsumexp, Op::count_nonzero, Op::any,
                                      Op::all,           Op::nansum, Op::nanmin,  Op::nanmax,  Op::nanargmin, Op::nanargmax};
//! Every element type: the library kernels' (cuda.shuffle, cuda.single_pass, cub).
constexpr FeatureSet on_gpu(OpSet ops, std::initializer_list<Layout> layouts) {
  return FeatureSet().every_dtype().ops(ops).layouts(layouts).memory({Memory::host, Memory::device});
}
//! The six 32- and 64-bit types: the seed kernels' and thrust's.
constexpr FeatureSet on_gpu_32_64(OpSet ops, std::initializer_list<Layout> layouts) {
  return FeatureSet().dtypes(dtypes_32_64).ops(ops).layouts(layouts).memory({Memory::host, Memory::device});
}
constexpr FeatureSet exact_sums(std::initializer_list<Memory> memory, std::initializer_list<Layout> layouts = {Layout::all}) {
  return FeatureSet().dtypes(kExactDTypes).ops({Op::sum}).layouts(layouts).memory(memory).only_exact_sums();
}
//! The exact mean (from the exact sum), var and std (kernels/exact_moments.cuh) of a whole array
//! of floats, rounded once by the core: one result, as the CPU's.
constexpr FeatureSet exact_statistics(std::initializer_list<Memory> memory) {
  return FeatureSet().dtypes(kExactDTypes).ops({Op::mean, Op::var, Op::std}).layouts({Layout::all}).memory(memory).only_exact_sums();
}
//! The statistics of floats (kGpuStatistics, or `ops`) in `memory` over `layouts`: over axes the
//! views kernels and rows and segments the segments kernels leave each result's partial, which a
//! kernel finishes on the GPU; host records are streamed, each column's partials folded on the host.
constexpr FeatureSet gpu_statistics_over_axes(std::initializer_list<Memory> memory, std::initializer_list<Layout> layouts,
                                              OpSet ops = kGpuStatistics) {
  return FeatureSet().dtypes(kExactDTypes).ops(ops).layouts(layouts).memory(memory);
}
//! The same of a whole array, also with wide results (Features::wide), which a combine of ranks
//! takes: of one result only.
constexpr FeatureSet gpu_statistics(std::initializer_list<Memory> memory) {
  return gpu_statistics_over_axes(memory, {Layout::all}).wide_results();
}
//! Several ops with mean, var or std among them (StatsMomentsOp), of a whole array of floats in
//! either memory. Rows and segments take kTogether only.
constexpr FeatureSet moments_together() {
  return FeatureSet().dtypes(kExactDTypes).ops(kTogether).ops(kMomentsTogether).layouts({Layout::all}).memory({Memory::host, Memory::device}).only_together();
}
//! The seed kernels: sum, prod, min and max of a flat array.
inline constexpr Capabilities kSeed = Capabilities(Engine::gpu).add(on_gpu_32_64(kSeedOps, {Layout::all}));
inline constexpr Capabilities kSinglePass =
    Capabilities(Engine::gpu).add(on_gpu(kOneOps, {Layout::all})).add(exact_sums({Memory::host, Memory::device}));
//! Rows and segments with its binned kernels (their exact sums with kernels/exact_segments.cuh,
//! and f64's with exact_segments_f64.cuh), records with kernels/records.cuh (their exact sums, of device
//! data, with exact_columns_kernel), the other views of device data with
//! kernels/views.cuh (their exact sums, of the 32- and 16-bit floats, with
//! kernels/exact_views.cuh), several ops with StatsOp, the statistics with the op table's policies
//! (statistics.cuh). cuda.single_pass, which shares the exact column kernel, does not declare it:
//! Capabilities::takes(Layout::outer), which Python's backends() and the tests read as "does
//! records", would then say yes for its exact sums alone.
inline constexpr Capabilities kShuffle = Capabilities(Engine::gpu)
                                             .add(on_gpu(kOneOps, {Layout::all, Layout::inner, Layout::ragged}))
                                             .add(on_gpu(kSeedOps, {Layout::outer}))
                                             .add(on_gpu(kOneOps, {Layout::outer, Layout::middle, Layout::strided}).memory({Memory::device}))
                                             .add(exact_sums({Memory::host, Memory::device}))
                                             .add(exact_sums({Memory::device}, {Layout::outer}))
                                             .add(exact_sums({Memory::host, Memory::device}, {Layout::inner, Layout::ragged}))
                                             .add(exact_sums({Memory::device}, {Layout::middle, Layout::strided}))
                                             .add(gpu_statistics({Memory::host, Memory::device}))
                                             .add(exact_statistics({Memory::host, Memory::device}))
                                             .add(gpu_statistics_over_axes({Memory::device}, {Layout::outer, Layout::middle, Layout::strided}))
                                             .add(gpu_statistics_over_axes({Memory::host}, {Layout::outer}))
                                             .add(gpu_statistics_over_axes({Memory::host, Memory::device}, {Layout::inner, Layout::ragged}))
                                             .add(on_gpu(kTogether, {Layout::all, Layout::inner, Layout::ragged}).only_together())
                                             .add(moments_together());
//! Host data over every GPU: flat arrays and records (the statistics too), the parts'
//! accumulators folded; rows, each GPU's results written where they go; the exact sum, mean,
//! var and std of a flat array, the parts' exact partials added.
inline constexpr Capabilities kMultiGpu = Capabilities(Engine::gpu)
                                              .add(on_gpu(kOneOps, {Layout::all}).memory({Memory::host}))
                                              .add(gpu_statistics({Memory::host}))
                                              .add(gpu_statistics_over_axes({Memory::host}, {Layout::outer, Layout::inner}))
                                              .add(on_gpu(kSeedOps, {Layout::outer}).memory({Memory::host}))
                                              .add(on_gpu(kOneOps, {Layout::inner}).memory({Memory::host}))
                                              .add(exact_sums({Memory::host}))
                                              .add(exact_statistics({Memory::host}));
//! cub::DeviceReduce, and DeviceSegmentedReduce for rows and segments.
inline constexpr Capabilities kCub = Capabilities(Engine::gpu).add(on_gpu(kOneOps, {Layout::all, Layout::inner, Layout::ragged}));
inline constexpr Capabilities kThrust = Capabilities(Engine::gpu).add(on_gpu_32_64(kSeedOps, {Layout::all}));
}  // namespace caps

struct TechniqueInfo {
  Technique technique;
  std::string_view name;
  int priority;  //!< among GPU backends, for the dispatcher
  Capabilities capabilities;
  //! Takes the setting `block_size` for every launch (the seed kernels); the others take it for
  //! exact sums only (kernels/exact_sum.cuh in the technique's form: one launch for single_pass,
  //! two for shuffle).
  bool block_size = false;
  //! Host data over every visible GPU at once (reduce_host_on_gpus), with this technique on each;
  //! available with two GPUs or more.
  bool multi_gpu = false;
};

// The dispatcher prefers the fastest; the seed kernels rank by how far along the progression
// they are, below the library anchors.
// cuda.multi_gpu ranks below the single-GPU ones: `auto` does not split host data over GPUs
// unless configured to (name it, or make it the config's backend).
inline constexpr std::array<TechniqueInfo, 13> techniques{{
    {Technique::single_pass, "cuda.single_pass", 300, caps::kSinglePass},
    {Technique::shuffle, "cuda.shuffle", 290, caps::kShuffle},
    {Technique::shuffle, "cuda.multi_gpu", 105, caps::kMultiGpu, false, true},
    {Technique::cub, "cub", 280, caps::kCub},
    {Technique::thrust, "thrust", 250, caps::kThrust},
    {Technique::cascaded, "cuda.cascaded", 170, caps::kSeed, true},
    {Technique::unroll_full, "cuda.unroll_full", 160, caps::kSeed, true},
    {Technique::unroll_warp, "cuda.unroll_warp", 150, caps::kSeed, true},
    {Technique::first_add, "cuda.first_add", 140, caps::kSeed, true},
    {Technique::sequential, "cuda.sequential", 130, caps::kSeed, true},
    {Technique::interleaved_strided, "cuda.interleaved_strided", 120, caps::kSeed, true},
    {Technique::interleaved, "cuda.interleaved", 110, caps::kSeed, true},
    {Technique::global_halving, "cuda.global_halving", 100, caps::kSeed, true},
}};

inline constexpr int kDefaultBlockSize = 256;

//! Enqueues the reduction of `count` elements of `dtype` at device pointer `data` (aligned to
//! the element size). Throws Error on a CUDA failure.
void enqueue(Technique t, const void* data, std::size_t count, DType dtype, Op op, int block, Workspace& ws);

//! Waits for the stream, fetching ws.result, and turns it into the request's result.
Result collect(DType dtype, Op op, Workspace& ws);

//! Records: enqueues the column-by-column reduction of `count` records of `width` values at
//! device pointer `data`, leaving `width` accumulators in ws.columns; collect_records copies them
//! back (waits) and turns them into the results.
void enqueue_records(const void* data, std::size_t count, std::size_t width, DType dtype, Op op, Workspace& ws);
Result collect_records(DType dtype, Op op, std::size_t width, Workspace& ws);
//! What the views kernels choose at run time (tuning as data, CUB's style; `xreduce bench views`
//! sweeps it): the most threads across a row (a power of two up to the block), and the blocks a
//! split column or view aims at, in waves of the GPU (blocks it holds at once). The defaults are
//! the sweep's best over the N-D targets' shapes on an H200 (bench/results/nvidia-h200/
//! views-device.md: 95.6-97.1% of the read probe, against 94.2-96.1% at 256 threads and two
//! waves; views.md's later run agrees).
//! The exact sums of f32, f16 and bf16 in the columns kernel take `exact_max_tile_x` instead: a
//! thread closes its partials (a pair of doubles each, and its bins) and the block combines them
//! once an item, so the fewer threads down a column, the less of that work a row. (On an H100,
//! over the middle axis of (1024, 256, 1024), 32 threads across against 256: f32 1.20x the plain
//! kernel on uniform data and 1.93-1.96x on wide, against 1.05x and 1.27-1.28x; bf16 1.78x and
//! 3.35-3.39x, against 1.21x and 1.84-1.85x; bench/results/nvidia-h100/logs/run-a2a85aa, run-2af4f31.)
struct ViewTuning {
  int max_tile_x = 32;
  int exact_max_tile_x = 256;
  int waves = 1;
};
//! A canonical view of device data aligned to its element size (enqueue_view_typed) into device
//! `out`, and for argmin/argmax the indices into device `out_index`.
void enqueue_view(const Request& c, void* out, std::uint64_t* out_index, Workspace& ws, const ViewTuning& tuning = {});
//! Bytes of one column accumulator of (dtype, op).
std::size_t accumulator_bytes(DType dtype, Op op);

//! How host input reaches the GPU (streamed.cu): in chunks of `chunk_bytes`, `streams` of them in
//! flight, each on its own workspace, when the input is pinned; in chunks of `stage_bytes`,
//! staged by `copy_threads` workers with `streams` chunks in flight each, when it is pageable
//! (pageable input of two staging chunks or less takes the driver's own copy). The defaults:
//! chunk_bytes and streams are the best of a sweep on an H200 host (an earlier run of
//! bench/results/nvidia-h200/host-reduce.md, in its history); stage_bytes the best for one GPU
//! and for two together in bench/results/nvidia-h200-x2/stage-sweep.md (small chunks stay in the
//! last-level cache between the copy and the DMA: staging.md there; one GPU of the single-GPU
//! H200 host reads faster at 4 MiB, two GPUs slower: host-reduce.md), copy_threads in
//! copy-threads-sweep.md there (12 a GPU: two GPUs 17-45% faster than at 8, one GPU as fast).
struct Streaming {
  std::size_t chunk_bytes = std::size_t{32} << 20;
  int streams = 3;
  int copy_threads = 12;
  std::size_t stage_bytes = std::size_t{2} << 20;
};

//! Runs body(0) here and body(1) .. body(count - 1) on threads of their own, waits for every one,
//! and then rethrows the first failure, if any: the host threads that drive GPUs or staging.
void run_in_parallel(int count, const std::function<void(int)>& body);

//! Reduces `count` elements of host memory at `data` with technique `t` on `device`, chunk by
//! chunk; chunk partials are combined on the host in the accumulator type (indices offset).
//! With width > 1, `count` records of `width` values, chunked between records.
Result reduce_host(Technique t, const void* data, std::size_t count, std::size_t width, DType dtype, Op op, int block,
                   int device, bool pinned, const Streaming& streaming);

//! The accumulators (F::acc_t of the op's policy, one per column, as bytes) of what reduce_host
//! reduces, before any rounding: what cuda.multi_gpu folds across GPUs, so that a fold of 16-bit
//! float sums rounds once, as one GPU's does.
struct HostAccumulators {
  DType dtype;
  Op op;
  std::vector<unsigned char> bytes;

  //! The `width` accumulators of (dtype, op) at `host` (host memory), copied.
  static HostAccumulators copied(DType dtype, Op op, const void* host, std::size_t width) {
    const auto* bytes = static_cast<const unsigned char*>(host);
    return {dtype, op, std::vector<unsigned char>(bytes, bytes + width * accumulator_bytes(dtype, op))};
  }
  //! `width` accumulators of type A, each `a` (bytes, not a std::vector<A>: A may be bool).
  template <class A>
  static HostAccumulators filled(DType dtype, Op op, std::size_t width, const A& a) {
    HostAccumulators h{dtype, op, std::vector<unsigned char>(width * sizeof(A))};
    for (std::size_t j = 0; j < width; ++j) h.set(j, a);
    return h;
  }
  template <class A>
  A get(std::size_t j) const {
    A a;
    std::memcpy(&a, bytes.data() + j * sizeof(A), sizeof a);
    return a;
  }
  template <class A>
  void set(std::size_t j, const A& a) {
    std::memcpy(bytes.data() + j * sizeof(A), &a, sizeof a);
  }
};
HostAccumulators reduce_host_accumulators(Technique t, const void* data, std::size_t count, std::size_t width, DType dtype,
                                          Op op, int block, int device, bool pinned, const Streaming& streaming);
//! The results of `width` accumulators: Result::values one per column, Result::value (and
//! Result::index) the first's.
Result results_of(const HostAccumulators& a, std::size_t width);

//! Reduces `count` records of host memory over GPUs 0 to devices - 1 at once: one contiguous part
//! each, streamed to its GPU as reduce_host streams, by its own host thread; the parts'
//! accumulators folded in order.
Result reduce_host_on_gpus(Technique t, const void* data, std::size_t count, std::size_t width, DType dtype, Op op,
                           int block, int devices, bool pinned, const Streaming& streaming);
//! The exact partials (Accuracy::exact) of `count` elements of host memory over GPUs 0 to
//! devices - 1, cut as reduce_host_on_gpus cuts them: the exact sum's (a sum or mean), or with
//! `squares` those of x and x squared (a var or std), each GPU's added exactly, counts set.
std::vector<ExactSum> exact_partials_on_gpus(Technique t, const void* data, std::size_t count, DType dtype, bool squares,
                                             int block, int devices, bool pinned, const Streaming& streaming);

//! Exact sums (Accuracy::exact) of f32, f64, f16 and bf16: enqueues the sum of n <= exact_launch_elements()
//! elements at device pointer `data` with technique t's form and `block` threads a block, and,
//! unless `host_out` is null, the copy of its partial (without the element count) to `host_out`,
//! pinned host memory. Returns where the partial's words are on the device (in ws.scratch).
const void* enqueue_exact(Technique t, const void* data, std::size_t n, DType dtype, int block, Workspace& ws,
                          void* host_out);
std::size_t exact_launch_elements();
//! The exact partial of n elements at device pointer `data`, in as many launches as it takes (waits).
ExactSum exact_sum_of_device(Technique t, const void* data, std::size_t n, DType dtype, int block, Workspace& ws);
//! Enqueues the exact partials of the columns of `rows` records of `width` values at device
//! pointer `data` (layout outer, at most 2^30 elements): width ExactSum word sets in the
//! workspace's scratch, returned, whose counts the caller sets.
long long* enqueue_exact_columns(const void* data, std::size_t rows, std::size_t width, DType dtype, Workspace& ws);
//! The exact partials of the columns of `rows` records of `width` values at device pointer
//! `data`, one a column, in as many launches as it takes (waits).
std::vector<ExactSum> exact_column_sums_of_device(const void* data, std::size_t rows, std::size_t width, DType dtype,
                                                  Workspace& ws);
//! The exact partial of n elements of host memory, streamed as reduce_host streams.
ExactSum exact_sum_of_host(Technique t, const void* data, std::size_t n, DType dtype, int block, int device, bool pinned,
                           const Streaming& streaming);

//! The exact partials of x and of x squared (kernels/exact_moments.cuh), for an exact var or std
//! of f32, f64, f16 or bf16: enqueues those of n <= exact_launch_elements() elements at device
//! pointer `data` and, unless `host_out` is null, their copy (2 ExactSums, without the element
//! counts) to `host_out`, pinned host memory. Returns where the words are on the device (in
//! ws.scratch). Q's count word counts the f64 elements whose squares leave the partial's range.
const void* enqueue_exact_moments(const void* data, std::size_t n, DType dtype, Workspace& ws, void* host_out);
//! Sets the counts of the partials of x and x squared of n elements, added over launches; throws
//! Error(unsupported) where an f64 square left the range (as the CPU refuses it).
void finish_exact_moments(std::vector<ExactSum>& moments, std::size_t n);
//! The exact partials of x and x squared of n elements at device pointer `data` (waits).
std::vector<ExactSum> exact_moments_of_device(const void* data, std::size_t n, DType dtype, Workspace& ws);
//! The same of n elements of host memory, streamed as reduce_host streams.
std::vector<ExactSum> exact_moments_of_host(const void* data, std::size_t n, DType dtype, int device, bool pinned,
                                            const Streaming& streaming);

//! Reduces rows (layout inner) or segments (layout ragged) of a canonical request, Request::out
//! set, with technique t (shuffle's tiles, or cub) on `device`: data and offsets in device memory,
//! or in host memory (copied in first); out and out_index in device memory if `out_on_device`,
//! else host. Throws Error(invalid_argument) for bad offsets (checked on the device as they are
//! read). `exact`: exact sums (enqueue_exact_segments).
Result reduce_segments(Technique t, const Request& q, bool data_on_device, bool out_on_device, int device, bool exact = false);

//! Rows (layout inner) of host memory with one op (Request::op, a core op or a statistic of
//! floats), streamed to `device` in chunks of whole rows (as reduce_host streams records), with
//! technique t's segments kernels; each chunk's results written to q.out and q.out_index, in
//! device memory if `out_on_device`, else host. Rows longer than a chunk (chunk_bytes, or
//! stage_bytes of pageable memory) are copied in whole by reduce_segments.
void reduce_host_rows(Technique t, const Request& q, int device, bool pinned, bool out_on_device, const Streaming& streaming);
//! The same over GPUs 0 to devices - 1 at once: one contiguous block of rows each (as
//! reduce_host_on_gpus cuts records), each GPU's results written where they go.
void reduce_host_rows_on_gpus(Technique t, const Request& q, int devices, bool pinned, bool out_on_device,
                              const Streaming& streaming);

//! Several ops in one pass (Request::ops) of `count` elements at device pointer `data` (aligned
//! to the element size), with cuda.shuffle's kernel over StatsOp, or StatsMomentsOp where `ops`
//! name mean, var or std (floats only): leaves the accumulator in ws.result. collect_stats waits
//! for it and writes the `ops` asked for to `out`'s first slots (host memory), var and std
//! divided by n - `correction`.
void enqueue_stats(const void* data, std::size_t count, DType dtype, OpSet ops, Workspace& ws);
void collect_stats(DType dtype, OpSet ops, double correction, const OpsOut& out, Workspace& ws);
//! The accumulator of several ops as bytes, for the host to fold host data's chunks (as
//! StatisticPartials): `fold` adds a chunk's accumulator, its indices counted from `first`, to
//! `total`; `write` writes the asked ops of a total as collect_stats does.
struct StatsPartials {
  std::size_t bytes = 0;
  void (*identity)(void* out) = nullptr;
  void (*fold)(void* total, const void* part, std::size_t first) = nullptr;
  void (*write)(const void* total, OpSet ops, double correction, const OpsOut& out) = nullptr;
};
StatsPartials stats_partials(DType dtype, OpSet ops);
//! The same of `count` elements of host memory, streamed as reduce_host streams.
void reduce_host_stats(const void* data, std::size_t count, DType dtype, OpSet ops, double correction, const OpsOut& out,
                       int device, bool pinned, const Streaming& streaming);

//! One statistic (an op after the core ones, of kGpuStatistics) of `count` elements of a float
//! `dtype` at device pointer `data` (aligned to the element size), with cuda.shuffle's kernels
//! (statistics.cuh): enqueue_statistic leaves the op's partial in ws.result; collect_statistic
//! waits for it and returns the result of the op's own type, or with `wide` of a float statistic
//! its f64 value unrounded (Features::wide); var and std divided by n - correction, with their
//! moments (Result::moments) whatever the type.
void enqueue_statistic(const void* data, std::size_t count, DType dtype, Op op, Workspace& ws);
Result collect_statistic(std::size_t count, DType dtype, Op op, double correction, bool wide, Workspace& ws);
//! What the host does with a statistic's partial (the accumulator enqueue_statistic leaves, as
//! bytes), to fold the partials of chunks and of GPUs: its size, its identity, `fold` (total =
//! total then part, the part's index, if any, moved past the `first` elements before it), and the
//! result of n elements, as collect_statistic gives it.
//! Records keep a row of `width` partials, one a column: `identities` and `fold_columns` apply the
//! two to each.
struct StatisticPartials {
  std::size_t bytes = 0;
  void (*identity)(void* out) = nullptr;
  void (*fold)(void* total, const void* part, std::size_t first) = nullptr;
  Result (*result)(const void* partial, std::size_t n, double correction, bool wide) = nullptr;

  std::vector<unsigned char> identities(std::size_t width) const {
    std::vector<unsigned char> row(width * bytes);
    for (std::size_t j = 0; j < width; ++j) identity(row.data() + j * bytes);
    return row;
  }
  void fold_columns(void* total, const void* part, std::size_t width, std::size_t first) const {
    for (std::size_t j = 0; j < width; ++j)
      fold(static_cast<unsigned char*>(total) + j * bytes, static_cast<const unsigned char*>(part) + j * bytes, first);
  }
};
StatisticPartials statistic_partials(DType dtype, Op op);
//! Enqueues the partials of statistic `op` of the columns of `rows` records of `width` values at
//! device pointer `data` (kernels/views.cuh's columns kernel): `width` partials of
//! StatisticPartials::bytes each, returned (in ws.columns).
const void* enqueue_column_statistic(const void* data, std::size_t rows, std::size_t width, DType dtype, Op op, Workspace& ws);
//! The results of `width` partials (one a column, StatisticPartials::bytes each) of n elements
//! each: Result::values one a column, Result::value the first's (and with width 1 its moments).
Result statistic_results(const StatisticPartials& p, const void* partials, std::size_t width, std::size_t n, double correction,
                         bool wide);
//! The partials of statistic `op` of `count` records of `width` values (width 1: a flat array) of
//! host memory, streamed to `device` as reduce_host streams (the chunks' partials folded in
//! order, column by column); statistic_results finishes them.
std::vector<unsigned char> reduce_host_statistic(const void* data, std::size_t count, std::size_t width, DType dtype, Op op,
                                                 int device, bool pinned, const Streaming& streaming);
//! The same over GPUs 0 to devices - 1 at once (one contiguous part each, as
//! reduce_host_on_gpus cuts it), the parts' partials folded in order, and finished.
Result reduce_host_statistic_on_gpus(const void* data, std::size_t count, std::size_t width, DType dtype, Op op,
                                     double correction, bool wide, int devices, bool pinned, const Streaming& streaming);

struct SegmentBounds;
//! A statistic of each row or segment of `dtype` (a float) at device pointer `data`
//! (enqueue_segment_statistic_typed), into device `out` (nanargmin's and nanargmax's indices,
//! within each segment, into device `out_index`).
void enqueue_segment_statistic(const void* data, const SegmentBounds& bounds, DType dtype, Op op, double correction, void* out,
                               std::uint64_t* out_index, Workspace& ws, unsigned long long** bad);
//! The exact sum of each row or segment of `dtype` (f32, f16 or bf16) at device pointer `data`
//! (kernels/exact_segments.cuh), rounded once into device `out`, of the element type.
void enqueue_exact_segments(const void* data, const SegmentBounds& bounds, DType dtype, void* out, Workspace& ws,
                            unsigned long long** bad);
//! The exact sum of each result of canonical view `c` (layouts middle and strided) of device data
//! of f32, f16 or bf16 (kernels/exact_views.cuh), rounded once into device `out`, of the element type.
void enqueue_exact_view(const Request& c, void* out, Workspace& ws, const ViewTuning& tuning = {});
//! Applies M to each of the six 32- and 64-bit element types (explicit instantiations).
#define XREDUCE_FOR_EACH_32_64_TYPE(M) \
  M(float) M(double) M(std::int32_t) M(std::int64_t) M(std::uint32_t) M(std::uint64_t)
//! Applies M to each of the thirteen element types.
#define XREDUCE_FOR_EACH_ELEMENT_TYPE(M) \
  XREDUCE_FOR_EACH_32_64_TYPE(M) M(f16) M(bf16) M(std::int8_t) M(std::uint8_t) M(std::int16_t) M(std::uint16_t) M(bool)

// One definition per element type (enqueue_<dtype>.cu), so that they compile in parallel.
template <class T>
void enqueue_typed(Technique t, const T* data, std::size_t count, Op op, int block, Workspace& ws);
template <class T>
void enqueue_records_typed(const T* data, std::size_t count, std::size_t width, Op op, void* out, Workspace& ws);
//! Enqueues a segmented reduction of device data into device `out`; *bad gets the device word
//! that holds the first bad offset's position (~0 when all are good) once the stream is done.
template <class T>
void enqueue_segments_typed(Technique t, const T* data, const SegmentBounds& bounds, Op op, void* out,
                            std::uint64_t* out_index, Workspace& ws, unsigned long long** bad);
template <class T>
void enqueue_stats_typed(const T* data, std::size_t count, Workspace& ws);
//! Enqueues canonical view `c` of device data (layouts middle and strided, and outer by the
//! same kernels, kernels/views.cuh) into device `out`, one result of the op's type each, and for
//! argmin/argmax one index each into device `out_index`.
template <class T>
void enqueue_view_typed(const T* data, const Request& c, void* out, std::uint64_t* out_index, Workspace& ws, const ViewTuning& tuning);
//! Enqueues several ops of each segment of device data into device arrays `out` (as
//! enqueue_segments_typed, with cuda.shuffle's tiles).
template <class T>
void enqueue_segment_stats_typed(const T* data, const SegmentBounds& bounds, OpSet ops, const OpsOut& out, Workspace& ws,
                                 unsigned long long** bad);
//! statistics_<dtype>.cu, for the four floats (kExactDTypes).
template <class T>
void enqueue_statistic_typed(const T* data, std::size_t count, Op op, Workspace& ws);
//! Several ops with mean, var or std among them (StatsMomentsOp): as enqueue_stats_typed.
template <class T>
void enqueue_stats_moments_typed(const T* data, std::size_t count, Workspace& ws);
template <class T>
Result collect_statistic_typed(std::size_t count, Op op, double correction, bool wide, Workspace& ws);
template <class T>
StatisticPartials statistic_partials_typed(Op op);
//! A statistic of canonical view `c` of device data (kernels/views.cuh), each result finished on
//! the GPU with c.correction into device `out` (nanargmin/nanargmax: indices into `out_index`).
template <class T>
void enqueue_view_statistic_typed(const T* data, const Request& c, void* out, std::uint64_t* out_index, Workspace& ws);
template <class T>
void enqueue_column_statistic_typed(const T* data, std::size_t rows, std::size_t width, Op op, void* partials, Workspace& ws);
//! A statistic of each row or segment of device data (kernels/segmented.cuh), each finished on
//! the GPU with its length and `correction` into device `out` (and `out_index`, for nanargmin
//! and nanargmax).
template <class T>
void enqueue_segment_statistic_typed(const T* data, const SegmentBounds& bounds, Op op, double correction, void* out,
                                     std::uint64_t* out_index, Workspace& ws, unsigned long long** bad);
template <class T>
void enqueue_cub(const T* data, std::size_t count, Op op, Workspace& ws);
template <class T>
void enqueue_thrust(const T* data, std::size_t count, Op op, Workspace& ws);

}  // namespace xreduce::cuda
