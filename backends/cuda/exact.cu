// Exact sums on the GPU (kernels/exact_sum.cuh): the launches for each block size and element
// type (f32, f64, f16, bf16), and the whole of a device array, in launches of at most 2^30
// elements; the column sums of device records likewise; the exact partials of x and x squared
// (kernels/exact_moments.cuh) of a device array, for an exact var or std.

#include <algorithm>
#include <climits>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/exact_moments.cuh"
#include "kernels/records.cuh"
#include "techniques.hpp"

namespace xreduce::cuda {
namespace {

//! As persistent_blocks, for a flat exact kernel of kBlock threads, per_sm of them to an SM, over
//! n elements of type T: at most as many as the GPU holds at once. Lanes with bins or digits take
//! `min_rounds` load rounds at least where that still leaves a block for every SM: each lane's
//! bins cost it a fixed start and end, which a lane with one round of 16 elements (2^22 f32 on an
//! H200: 1.65x plain cub, 1.43x with two) pays nearly as much for as for its elements. Below
//! that, latency rules and more blocks do better.
template <int kBlock, class T>
std::size_t resident_blocks(std::size_t n, int per_sm, std::size_t min_rounds, const Workspace& ws) {
  const std::size_t per_block = std::size_t{kBlock} * exact::kUnroll * vector_width<T>();
  const std::size_t wanted = std::max(ceil_div(n, per_block * min_rounds), std::min<std::size_t>(ceil_div(n, per_block), ws.sm_count));
  return std::max<std::size_t>(1, std::min<std::size_t>(static_cast<std::size_t>(per_sm) * ws.sm_count, wanted));
}

//! The flat exact kernel of kBlock threads and element type T: as resident_blocks.
template <int kBlock, class T>
std::size_t exact_sum_blocks(std::size_t n, const Workspace& ws) {
  const int per_sm = blocks_per_sm<exact::exact_sum_kernel<kBlock, T>, kBlock, exact::dynamic_bytes<T>(kBlock)>();
  return resident_blocks<kBlock, T>(n, per_sm, exact::kBinnedSum<T> || exact::kDigitSum<T> ? 2 : 1, ws);
}

template <int kBlock, class T>
const void* launch(const T* x, std::size_t n, bool single_pass, Workspace& ws, void* host_out) {
  constexpr auto kernel = exact::exact_sum_kernel<kBlock, T>;
  constexpr std::size_t dynamic = exact::dynamic_bytes<T>(kBlock);
  const auto blocks = static_cast<unsigned>(exact_sum_blocks<kBlock, T>(n, ws));
  constexpr std::size_t kBytes = sizeof(ExactSum);
  if (!ws.exact_total) {  // zero once; every call leaves it zero
    XREDUCE_CUDA(cudaMalloc(reinterpret_cast<void**>(&ws.exact_total), kBytes));
    XREDUCE_CUDA(cudaMemsetAsync(ws.exact_total, 0, kBytes, ws.stream));
  }
  auto* out = static_cast<long long*>(ws.scratch.reserve(kBytes, "an exact partial"));
  kernel<<<blocks, kBlock, dynamic, ws.stream>>>(x, n, unaligned_head(x, n), ws.exact_total, single_pass ? ws.counter : nullptr, out);
  XREDUCE_CUDA(cudaGetLastError());
  if (!single_pass) {
    exact::exact_finish_kernel<<<1, 96, 0, ws.stream>>>(ws.exact_total, out);
    XREDUCE_CUDA(cudaGetLastError());
  }
  if (host_out) XREDUCE_CUDA(cudaMemcpyAsync(host_out, out, kBytes, cudaMemcpyDeviceToHost, ws.stream));
  return out;
}

template <class T>
const void* launch_for_block(int block, const T* x, std::size_t n, bool single_pass, Workspace& ws, void* host_out) {
  // The digit form's lanes take 536 bytes of shared memory each: its blocks are kDigitBlock
  // lanes whatever the block size asked (a block of 512 would need more than an SM has).
  if constexpr (exact::kDigitSum<T>) return launch<exact::kDigitBlock>(x, n, single_pass, ws, host_out);
  else switch (block) {
    case 128: return launch<128>(x, n, single_pass, ws, host_out);
    case 512: return launch<512>(x, n, single_pass, ws, host_out);
    case 1024: return launch<1024>(x, n, single_pass, ws, host_out);
    default: return launch<256>(x, n, single_pass, ws, host_out);
  }
}

}  // namespace

const void* enqueue_exact(Technique t, const void* data, std::size_t n, DType dtype, int block, Workspace& ws,
                          void* host_out) {
  if (n > exact::kMaxLaunch) throw Error(ErrorCode::internal, "enqueue_exact: more than 2^30 elements in one launch");
  const bool single_pass = t == Technique::single_pass;
  return visit_exact_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    return launch_for_block(block, static_cast<const T*>(data), n, single_pass, ws, host_out);
  });
}

std::size_t exact_launch_elements() { return exact::kMaxLaunch; }

long long* enqueue_exact_columns(const void* data, std::size_t rows, std::size_t width, DType dtype, Workspace& ws) {
  constexpr int kBlock = exact::kDigitBlock;
  const std::size_t per_tile = std::min<std::size_t>(width, kBlock), tiles = ceil_div(width, per_tile);
  if (tiles > 65535 || width > static_cast<std::size_t>(INT_MAX))
    throw Error(ErrorCode::unsupported, "exact column sums on the GPU: at most 65535 * 128 columns");
  if (rows * width > exact::kMaxLaunch)
    throw Error(ErrorCode::internal, "enqueue_exact_columns: more than 2^30 elements in one launch");
  const std::size_t words = width * ExactSum::kWords;
  // Copies of the column sums for `blocks` blocks to add to (exact_columns_kernel): one for each
  // kBlocksPerCopy blocks, at most kMostCopies and kMostCopyWords words in all (the copies are
  // zeroed and folded on every call). On an H200, f32 records of width 9 at 2^24 took 2.59x a
  // plain column sum on random bit patterns with every block adding to one copy, 1.42x with
  // copies (and 16 loads in flight instead of 8).
  auto zeroed_copies = [&](std::size_t blocks) {
    constexpr std::size_t kBlocksPerCopy = 32, kMostCopies = 32, kMostCopyWords = std::size_t{1} << 18;
    const std::size_t copies = std::clamp<std::size_t>(std::min(ceil_div(blocks, kBlocksPerCopy), kMostCopyWords / words),
                                                       1, kMostCopies);
    auto* totals = static_cast<long long*>(ws.scratch.reserve(copies * words * sizeof(long long), "exact column partials"));
    XREDUCE_CUDA(cudaMemsetAsync(totals, 0, copies * words * sizeof(long long), ws.stream));
    return std::pair{totals, copies};
  };
  auto fold_copies = [&](long long* totals, std::size_t copies) {
    XREDUCE_CUDA(cudaGetLastError());  // the column kernel's launch
    if (copies > 1) {
      constexpr int kFoldBlock = 256;
      const auto fold_blocks = static_cast<unsigned>(std::min<std::size_t>(ceil_div(words, kFoldBlock), 4 * ws.sm_count));
      exact::fold_column_copies<<<fold_blocks, kFoldBlock, 0, ws.stream>>>(totals, words, static_cast<int>(copies));
      XREDUCE_CUDA(cudaGetLastError());
    }
    return totals;
  };
  return visit_exact_dtype(dtype, [&](auto tag) -> long long* {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, f16>) {  // records_kernel's grid; element-aligned records one element a load
      const auto* x = static_cast<const f16*>(data);
      const std::size_t elements = rows * width;
      auto run = [&](auto vec) {
        constexpr int kVec = decltype(vec)::value;
        constexpr auto kernel = exact::exact_f16_records_kernel<kVec>;
        const std::size_t wave = static_cast<std::size_t>(blocks_per_sm<kernel, exact::kF16RecordsBlock, 0>()) * ws.sm_count;
        const auto [blocks, stride] = records_grid(elements, width, kVec, std::size_t{exact::kF16RecordsBlock} * kVec, exact::kUnroll,
                                                   wave, ceil_div(elements, exact::kF16MostPerSlot));
        const auto [totals, copies] = zeroed_copies(blocks);
        if (rows == 0) return totals;
        kernel<<<static_cast<unsigned>(blocks), exact::kF16RecordsBlock, 0, ws.stream>>>(x, elements, static_cast<int>(width),
                                                                                      stride, totals, static_cast<int>(copies));
        return fold_copies(totals, copies);
      };
      if (reinterpret_cast<std::uintptr_t>(x) % 16 == 0) return run(std::integral_constant<int, vector_width<f16>()>{});
      return run(std::integral_constant<int, 1>{});
    } else {
      constexpr auto kernel = exact::exact_columns_kernel<T>;
      constexpr std::size_t dynamic = exact::ColumnLane<T>::kSharedBytes;
      const int per_sm = blocks_per_sm<kernel, kBlock, dynamic>();
      // Enough blocks to fill the GPU once over, fewer where the rows run out first, more where a
      // lane would add more than BinColumnLane::kMostElements (the bins' bound).
      const std::size_t groups = kBlock / per_tile;
      const std::size_t wanted = ceil_div(static_cast<std::size_t>(per_sm) * ws.sm_count, tiles);
      const std::size_t blocks = std::max({std::size_t{1}, std::min(wanted, ceil_div(rows, groups * 8)),
                                           ceil_div(rows, groups * exact::BinColumnLane::kMostElements)});
      const auto [totals, copies] = zeroed_copies(blocks);  // a column's blocks: those of its tile
      if (rows == 0) return totals;
      kernel<<<dim3(static_cast<unsigned>(blocks), static_cast<unsigned>(tiles)), kBlock, dynamic, ws.stream>>>(
          static_cast<const T*>(data), rows, static_cast<int>(width), totals, static_cast<int>(copies));
      return fold_copies(totals, copies);
    }
  });
}

std::vector<ExactSum> exact_column_sums_of_device(const void* data, std::size_t rows, std::size_t width, DType dtype,
                                                  Workspace& ws) {
  std::vector<ExactSum> sums(width);
  const std::size_t bytes = width * sizeof(ExactSum);
  auto* host = static_cast<long long*>(ws.host_columns.reserve(bytes, "exact column partials"));
  const std::size_t rows_per_launch = std::max<std::size_t>(1, exact::kMaxLaunch / width);
  for (std::size_t first = 0; first < rows; first += rows_per_launch) {
    const std::size_t n = std::min(rows_per_launch, rows - first);
    const long long* totals =
        enqueue_exact_columns(static_cast<const unsigned char*>(data) + first * width * size_of(dtype), n, width, dtype, ws);
    XREDUCE_CUDA(cudaMemcpyAsync(host, totals, bytes, cudaMemcpyDeviceToHost, ws.stream));
    XREDUCE_CUDA(cudaStreamSynchronize(ws.stream));
    for (std::size_t c = 0; c < width; ++c) {
      ExactSum part;
      std::memcpy(part.words, host + c * ExactSum::kWords, sizeof part.words);
      part.words[ExactSum::kCount] = static_cast<std::int64_t>(n);
      sums[c] += part;
    }
  }
  return sums;
}

const void* enqueue_exact_moments(const void* data, std::size_t n, DType dtype, Workspace& ws, void* host_out) {
  if (n > exact::kMaxLaunch) throw Error(ErrorCode::internal, "enqueue_exact_moments: more than 2^30 elements in one launch");
  constexpr std::size_t kBytes = 2 * sizeof(ExactSum);
  auto* totals = static_cast<long long*>(ws.scratch.reserve(kBytes, "exact partials of x and x squared"));
  XREDUCE_CUDA(cudaMemsetAsync(totals, 0, kBytes, ws.stream));
  if (n > 0) {
    visit_exact_dtype(dtype, [&](auto tag) {
      using T = decltype(tag);
      constexpr auto kernel = exact::exact_moments_kernel<T>;
      constexpr int kBlock = exact::kDigitBlock;
      constexpr std::size_t dynamic = exact::MomentsLane<T>::kSharedBytes;
      const T* x = static_cast<const T*>(data);
      const auto blocks = static_cast<unsigned>(resident_blocks<kBlock, T>(n, blocks_per_sm<kernel, kBlock, dynamic>(), 2, ws));
      kernel<<<blocks, kBlock, dynamic, ws.stream>>>(x, n, unaligned_head(x, n), totals);
      XREDUCE_CUDA(cudaGetLastError());
      return 0;
    });
  }
  if (host_out) XREDUCE_CUDA(cudaMemcpyAsync(host_out, totals, kBytes, cudaMemcpyDeviceToHost, ws.stream));
  return totals;
}

void finish_exact_moments(std::vector<ExactSum>& moments, std::size_t n) {
  if (moments.size() != 2) throw Error(ErrorCode::internal, "finish_exact_moments: not the partials of x and x squared");
  ExactSum& squares = moments[1];
  if (squares.words[ExactSum::kCount] != 0)
    throw Error(ErrorCode::unsupported, "an exact var or std of f64 values below 2^-480 or above 2^511 in magnitude "
                                        "(their squares leave the exact partial's range): accuracy 'standard' takes them");
  for (ExactSum& s : moments) s.words[ExactSum::kCount] = static_cast<std::int64_t>(n);
  squares.words[ExactSum::kNotNegativeZero] = n > 0;  // every square is +0 or more
}

std::vector<ExactSum> exact_moments_of_device(const void* data, std::size_t n, DType dtype, Workspace& ws) {
  std::vector<ExactSum> moments(2);
  void* host = ws.host_columns.reserve(2 * sizeof(ExactSum), "exact partials of x and x squared");
  for (std::size_t first = 0; first < n; first += exact::kMaxLaunch) {
    const std::size_t len = std::min(exact::kMaxLaunch, n - first);
    enqueue_exact_moments(static_cast<const unsigned char*>(data) + first * size_of(dtype), len, dtype, ws, host);
    XREDUCE_CUDA(cudaStreamSynchronize(ws.stream));
    for (int k = 0; k < 2; ++k) {
      ExactSum part;
      std::memcpy(&part, static_cast<const unsigned char*>(host) + k * sizeof(ExactSum), sizeof part);
      moments[k] += part;
    }
  }
  finish_exact_moments(moments, n);
  return moments;
}

ExactSum exact_sum_of_device(Technique t, const void* data, std::size_t n, DType dtype, int block, Workspace& ws) {
  ExactSum total;
  void* host = ws.host_columns.reserve(sizeof(ExactSum), "an exact partial");
  for (std::size_t first = 0; first < n; first += exact::kMaxLaunch) {
    const std::size_t len = std::min(exact::kMaxLaunch, n - first);
    enqueue_exact(t, static_cast<const unsigned char*>(data) + first * size_of(dtype), len, dtype, block, ws, host);
    XREDUCE_CUDA(cudaStreamSynchronize(ws.stream));
    ExactSum part;
    std::memcpy(&part, host, sizeof part);
    total += part;
  }
  total.words[ExactSum::kCount] = static_cast<std::int64_t>(n);
  return total;
}

}  // namespace xreduce::cuda
