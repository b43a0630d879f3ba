// Several GPUs, one rank each: a sum (or another op) of 2^log2n device-resident elements a rank
// (f32, f16 or bf16), combined by xreduce::nccl (and by xreduce::mpi, the same shards), against
// one GPU reducing its 2^log2n alone in the same run, as a rank reduces its shard, and with its
// own plain call; each GPU alone in turn (the two wait for the slower at every combine); and the
// combine's latency against a bare ncclAllReduce of 8 bytes and a bare ncclAllGather of 1 KiB
// (that gather also replayed from a CUDA graph and in a symmetric window: how much of its time is
// the host's part of NCCL's launch, and how much NCCL's kernel).
// What a rank asks of its GPU (mpi/src/partials.cpp, local_partials): a 16-bit float shard's sum
// exactly, so that the whole is rounded once (shard_options); a statistic in f64, unrounded, and
// for var and std the variance's moments with it (Result::moments: one read; a backend without
// them costs a second read, for the mean).
// For a statistic, "one GPU as a rank" is xreduce::mpi::allreduce over MPI_COMM_SELF on rank 0:
// the same local calls, with a combine of one rank.
//
//   mpirun -n 2 xreduce_bench_gpus [--log2n 30] [--dtype f32] [--op sum] [--out DIR]
//       (DIR/multi-gpu[-DTYPE][-OP][-log2nN].{json,md}: -DTYPE unless f32, -OP unless sum, -log2nN unless 30)
//
// Every sample starts at a barrier and is timed on rank 0; the median of 11 batches.

#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "barrier_timing.hpp"
#include "xreduce/mpi.hpp"
#include "xreduce/nccl.hpp"
#include "xreduce/xreduce.hpp"

namespace xr = xreduce;
using xreduce::bench::barrier_timed;

namespace {

int rank_ = 0, ranks_ = 1;

void check(cudaError_t s, const char* what) {
  if (s != cudaSuccess) {
    std::fprintf(stderr, "rank %d: %s: %s\n", rank_, what, cudaGetErrorString(s));
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
}

//! "12.3 us", or "not run" for a time left negative (NCCL refused the way, or lacks it).
std::string microseconds(double seconds) {
  if (seconds < 0) return "not run";
  char text[32];
  std::snprintf(text, sizeof text, "%.1f us", seconds * 1e6);
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks_);
  int log2n = 30;
  std::string out_dir = ".";
  xr::DType dtype = xr::DType::f32;
  std::optional<xr::DType> asked = dtype;
  std::optional<xr::Op> op = xr::Op::sum;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--log2n") log2n = std::atoi(argv[i + 1]);
    else if (a == "--out") out_dir = argv[i + 1];
    else if (a == "--dtype") asked = xr::parse_dtype(argv[i + 1]);
    else if (a == "--op") op = xr::parse_op(argv[i + 1]);
  }
  if (asked) dtype = *asked;
  if (!asked || (dtype != xr::DType::f32 && !xr::is_float16(dtype))) {
    if (rank_ == 0) std::fprintf(stderr, "xreduce_bench_gpus: --dtype is f32, f16 or bf16\n");
    MPI_Finalize();
    return 2;
  }
  if (!op || (*op != xr::Op::sum && (!xr::returns_float(*op) || xr::skips_nan(*op)))) {
    if (rank_ == 0) std::fprintf(stderr, "xreduce_bench_gpus: --op is sum, mean, var, std, norm1, norm2, norminf or logsumexp\n");
    MPI_Finalize();
    return 2;
  }
  const std::size_t size = xr::size_of(dtype);
  int gpus = 0;
  cudaGetDeviceCount(&gpus);
  if (gpus < ranks_) {
    if (rank_ == 0) std::fprintf(stderr, "xreduce_bench_gpus: %d GPU(s) for %d ranks\n", gpus, ranks_);
    MPI_Finalize();
    return 2;
  }
  check(cudaSetDevice(rank_), "cudaSetDevice");
  ncclUniqueId id;
  if (rank_ == 0) ncclGetUniqueId(&id);
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t comm;
  if (ncclCommInitRank(&comm, ranks_, id, rank_) != ncclSuccess) MPI_Abort(MPI_COMM_WORLD, 2);

  // 2^log2n values a rank, uniform in [0, 1), the same on every rank (a chunk copied over and over).
  const std::size_t n = std::size_t{1} << log2n, chunk = std::min<std::size_t>(n, std::size_t{1} << 24);
  std::vector<unsigned char> host(chunk * size);
  for (std::size_t i = 0; i < chunk; ++i) {
    const float u = static_cast<float>((i * 2654435761u) % 1000003) / 1000003.0f;
    xr::visit_dtype(dtype, [&](auto tag) {
      const auto v = static_cast<decltype(tag)>(u);
      std::memcpy(host.data() + i * size, &v, size);
    });
  }
  unsigned char* data = nullptr;
  check(cudaMalloc(&data, n * size), "cudaMalloc");
  for (std::size_t at = 0; at < n; at += chunk)
    check(cudaMemcpy(data + at * size, host.data(), chunk * size, cudaMemcpyHostToDevice), "cudaMemcpy");
  const bool statistic = *op != xr::Op::sum;
  const xr::Request shard{data, n, dtype, *op, xr::Memory::device};
  const xr::Request one{data, 1, dtype, *op, xr::Memory::device};
  // What a rank asks of its GPU (an exact sum, for the 16-bit floats).
  xr::Options as_a_rank;
  if (xr::is_float16(dtype)) as_a_rank.result_dtype = xr::DType::f64;
  std::string backend;

  // One GPU alone, each in turn, timed on its own rank: it reduces its shard as a rank does while
  // the others wait at the barrier. Rank 0's time is "one GPU"; the slowest shows what two GPUs,
  // which wait for the slower one at every combine, are up against.
  std::vector<double> t_alone(static_cast<std::size_t>(ranks_));
  for (int r = 0; r < ranks_; ++r) {
    double mine = barrier_timed([&] {
      if (rank_ != r) return;
      if (statistic) backend = xr::mpi::allreduce(MPI_COMM_SELF, shard).backend;
      else backend = xr::reduce(shard, as_a_rank).backend;
    }, 10, 11, 5);
    MPI_Bcast(&mine, 1, MPI_DOUBLE, r, MPI_COMM_WORLD);
    t_alone[static_cast<std::size_t>(r)] = mine;
  }
  const double t_one = t_alone[0];
  const double t_slowest = *std::max_element(t_alone.begin(), t_alone.end());
  const double t_one_plain = barrier_timed([&] {
    if (rank_ == 0) xr::reduce(shard);
  }, 10, 11, 5);
  const double t_nccl = barrier_timed([&] { xr::nccl::allreduce(comm, shard); }, 10, 11, 5);
  const double t_mpi = barrier_timed([&] { xr::mpi::allreduce(MPI_COMM_WORLD, shard); }, 10, 11, 5);
  const xr::Result total = xr::nccl::allreduce(comm, shard);
  // The combine: one element a rank through xreduce::nccl, against a bare 8-byte ncclAllReduce.
  double* word = nullptr;
  check(cudaMalloc(&word, 8), "cudaMalloc");
  cudaStream_t stream;
  check(cudaStreamCreate(&stream), "cudaStreamCreate");
  const double t_bare = barrier_timed([&] {
    ncclAllReduce(word, word, 1, ncclFloat64, ncclSum, comm, stream);
    cudaStreamSynchronize(stream);
  }, 200, 11, 5);
  // A bare ncclAllGather of 1 KiB a rank, about what a rank's partials are (832 bytes for an
  // exact sum with the failure reason's slot, a few hundred for the others).
  const std::size_t gathered_bytes = 1024 * static_cast<std::size_t>(ranks_);
  auto gather_into = [&](unsigned char* all) { return ncclAllGather(all + 1024 * rank_, all, 1024, ncclUint8, comm, stream); };
  auto gather_timed = [&](unsigned char* all) {
    return barrier_timed([&] {
      gather_into(all);
      cudaStreamSynchronize(stream);
    }, 200, 11, 5);
  };
  unsigned char* gathered = nullptr;
  check(cudaMalloc(&gathered, gathered_bytes), "cudaMalloc");
  const double t_bare_gather = gather_timed(gathered);
  // The same gather replayed from a CUDA graph (one launch of what NCCL enqueues, the host's
  // part of a launch captured once), and in a symmetric window (ncclMemAlloc'd memory that every
  // rank registers: NCCL's symmetric kernels, which read the peer's memory directly); negative
  // where NCCL refuses either (the report says "not run").
  double t_graph_gather = -1, t_symmetric_gather = -1;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t graph_exec = nullptr;
  if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) == cudaSuccess) {
    const ncclResult_t captured = gather_into(gathered);
    if (cudaStreamEndCapture(stream, &graph) == cudaSuccess && captured == ncclSuccess &&
        cudaGraphInstantiate(&graph_exec, graph, 0) == cudaSuccess)
      t_graph_gather = barrier_timed([&] {
        cudaGraphLaunch(graph_exec, stream);
        cudaStreamSynchronize(stream);
      }, 200, 11, 5);
  }
  void* symmetric = nullptr;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)  // symmetric windows came with NCCL 2.27
  ncclWindow_t window = nullptr;
  if (ncclMemAlloc(&symmetric, gathered_bytes) == ncclSuccess &&
      ncclCommWindowRegister(comm, symmetric, gathered_bytes, &window, NCCL_WIN_COLL_SYMMETRIC) == ncclSuccess) {
    t_symmetric_gather = gather_timed(static_cast<unsigned char*>(symmetric));
    ncclCommWindowDeregister(comm, window);
  }
#endif
  const double t_one_element = barrier_timed([&] { xr::nccl::allreduce(comm, one); }, 200, 11, 5);
  const double t_local_one = barrier_timed([&] { xr::reduce(one); }, 200, 11, 5);

  if (rank_ == 0) {
    const double bytes = static_cast<double>(n) * size;
    const std::string type(xr::to_string(dtype)), name(xr::to_string(*op));
    char ratio[64];
    std::snprintf(ratio, sizeof ratio, "%.2fx", t_one / t_one_plain);
    char against_plain[160];
    std::snprintf(against_plain, sizeof against_plain, "; against it, xreduce::nccl's throughput is %.2fx and xreduce::mpi's %.2fx",
                  ranks_ * t_one_plain / t_nccl, ranks_ * t_one_plain / t_mpi);
    const std::string plain_note =
        statistic || xr::is_float16(dtype)
            ? "One GPU's own " + type + " " + name + " of the same 2^" + std::to_string(log2n) + " (`xreduce::reduce`, rounded on that GPU): " +
                  std::to_string(t_one_plain * 1e6).substr(0, 7) + " us; a rank's " + (statistic ? "local calls cost " : "exact sum costs ") +
                  ratio + " that" + (statistic ? against_plain : "") + ".\n\n"
            : "";
    std::string alone = "Each GPU alone, timed on its own rank:";
    for (int r = 0; r < ranks_; ++r) {
      char one_rank[64];
      std::snprintf(one_rank, sizeof one_rank, "%s rank %d %.1f us", r ? "," : "", r, t_alone[static_cast<std::size_t>(r)] * 1e6);
      alone += one_rank;
    }
    char against_slowest[160];
    std::snprintf(against_slowest, sizeof against_slowest,
                  ". Against %d times the slowest of them, xreduce::nccl's throughput is %.2fx and xreduce::mpi's %.2fx.\n\n", ranks_,
                  ranks_ * t_slowest / t_nccl, ranks_ * t_slowest / t_mpi);
    alone += against_slowest;
    char md[4096];
    std::snprintf(md, sizeof md,
                  "# Several GPUs, one rank each: %s %s of device-resident shards\n\n"
                  "%d ranks, 2^%d %s a rank, backend %s on each; result %s.\n\n"
                  "| what | time | GB/s | against one GPU |\n|---|---:|---:|---:|\n"
                  "| one GPU, 2^%d alone%s | %.1f us | %.0f | 1.00 |\n"
                  "| xreduce::nccl::allreduce, %d x 2^%d | %.1f us | %.0f | %.2fx the throughput |\n"
                  "| xreduce::mpi::allreduce, %d x 2^%d | %.1f us | %.0f | %.2fx the throughput |\n\n"
                  "%s%s"
                  "Combine of one element a rank: xreduce::nccl %.1f us (the local call alone %.1f us), "
                  "a bare ncclAllReduce of 8 bytes %.1f us, a bare ncclAllGather of 1 KiB a rank %.1f us "
                  "(from a CUDA graph %s, in a symmetric window %s).\n",
                  type.c_str(), name.c_str(), ranks_, log2n, type.c_str(), backend.c_str(), total.value.to_string().c_str(), log2n,
                  statistic ? ", reduced as a rank reduces its shard" : xr::is_float16(dtype) ? ", summed exactly as a rank sums its shard" : "",
                  t_one * 1e6, bytes / t_one / 1e9,
                  ranks_, log2n, t_nccl * 1e6, ranks_ * bytes / t_nccl / 1e9, ranks_ * t_one / t_nccl,
                  ranks_, log2n, t_mpi * 1e6, ranks_ * bytes / t_mpi / 1e9, ranks_ * t_one / t_mpi,
                  alone.c_str(), plain_note.c_str(),
                  t_one_element * 1e6, t_local_one * 1e6, t_bare * 1e6, t_bare_gather * 1e6,
                  microseconds(t_graph_gather).c_str(), microseconds(t_symmetric_gather).c_str());
    std::fputs(md, stdout);
    const std::string stem = out_dir + "/multi-gpu" + (dtype == xr::DType::f32 ? "" : "-" + type) + (statistic ? "-" + name : "") +
                             (log2n == 30 ? "" : "-log2n" + std::to_string(log2n));
    std::ofstream(stem + ".md") << md;
    nlohmann::json j{{"ranks", ranks_}, {"log2n", log2n}, {"dtype", type}, {"op", name}, {"backend", backend}, {"one_gpu_s", t_one},
                     {"one_gpu_plain_s", t_one_plain}, {"nccl_s", t_nccl}, {"mpi_s", t_mpi},
                     {"nccl_speedup", ranks_ * t_one / t_nccl}, {"mpi_speedup", ranks_ * t_one / t_mpi},
                     {"nccl_speedup_over_plain", ranks_ * t_one_plain / t_nccl}, {"mpi_speedup_over_plain", ranks_ * t_one_plain / t_mpi},
                     {"combine_one_element_s", t_one_element}, {"local_one_element_s", t_local_one},
                     {"bare_nccl_allreduce_8_bytes_s", t_bare}, {"bare_nccl_allgather_1kib_s", t_bare_gather},
                     {"graph_nccl_allgather_1kib_s", t_graph_gather}, {"symmetric_nccl_allgather_1kib_s", t_symmetric_gather},
                     {"each_gpu_alone_s", t_alone}, {"nccl_speedup_over_slowest", ranks_ * t_slowest / t_nccl},
                     {"mpi_speedup_over_slowest", ranks_ * t_slowest / t_mpi}, {"value", total.value.to_string()}};
    std::ofstream(stem + ".json") << j.dump(1) << "\n";
  }
  cudaFree(word);
  cudaFree(gathered);
  if (graph_exec) cudaGraphExecDestroy(graph_exec);
  if (graph) cudaGraphDestroy(graph);
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
  if (symmetric) ncclMemFree(symmetric);
#endif
  cudaFree(data);
  ncclCommDestroy(comm);
  MPI_Finalize();
  return 0;
}
