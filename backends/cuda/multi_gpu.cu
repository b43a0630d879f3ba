// cuda.multi_gpu: one host array over every visible GPU at once. The array is cut into one
// contiguous part per GPU (on 4 KiB boundaries, between records), each part is streamed to its
// GPU as cuda.shuffle streams host data to one (streamed.cu), and the parts' results are folded
// in order on the host. The GPUs are alike, and each has its own link to the host, so equal
// parts finish together. A host thread drives each GPU beyond the first (the streamed path
// blocks on its chunks), as `hybrid` drives its GPU part beside its CPU part.

#include <algorithm>
#include <cstring>
#include <optional>
#include <exception>
#include <future>
#include <vector>

#include "device_ops.cuh"
#include "techniques.hpp"

namespace xreduce::cuda {
namespace {

//! A part's result back in the accumulator type of F (its index moved past the parts before it).
template <class F>
typename F::acc_t to_accumulator(const Scalar& v, std::optional<std::uint64_t> index, std::uint64_t offset) {
  using T = typename F::In;
  using A = typename F::acc_t;
  if constexpr (is_arg_op<F>) {
    return A{v.get<T>(), *index + offset};
  } else if constexpr (F::op == Op::sum || F::op == Op::prod) {
    if constexpr (std::is_floating_point_v<T>) {
      return static_cast<A>(v.get<T>());
    } else {  // the result's int64 or uint64: the same bits as the uint64 accumulator
      A a;
      std::memcpy(&a, v.bytes(), sizeof a);
      return a;
    }
  } else {
    return v.get<T>();
  }
}

//! The parts' results folded in order: each column's accumulators combined by the op's policy
//! (sums of floats in double, so the fold adds one rounding to the parts'), indices offset.
Result fold_parts(const std::vector<Result>& parts, const std::vector<std::size_t>& first_record, std::size_t width,
                  DType dtype, Op op) {
  return visit_gpu_dtype(dtype, [&](auto tag) {
    return visit_op<decltype(tag)>(op, [&](auto f) {
      using F = decltype(f);
      std::vector<typename F::acc_t> total(width, f.identity());
      for (std::size_t p = 0; p < parts.size(); ++p)
        for (std::size_t j = 0; j < width; ++j) {
          const Scalar& v = width > 1 ? parts[p].values[j] : parts[p].value;
          total[j] = f(total[j], to_accumulator<F>(v, parts[p].index, first_record[p]));
        }
      Result r = result_of<F>(total[0]);
      if (width > 1)
        for (std::size_t j = 0; j < width; ++j) r.values.push_back(result_of<F>(total[j]).value);
      return r;
    });
  });
}

}  // namespace

Result reduce_host_on_gpus(Technique t, const void* data, std::size_t count, std::size_t width, DType dtype, Op op,
                           bool exact, int block, int devices, bool pinned, const Streaming& streaming) {
  // Parts start on 4 KiB boundaries of the input (records whole): every part keeps its alignment.
  const std::size_t record_bytes = width * size_of(dtype);
  std::size_t step = 1;
  while (step * record_bytes % 4096 != 0 && step < 4096) ++step;
  std::vector<std::size_t> first(devices + 1, count);
  for (int d = 0; d < devices; ++d) first[d] = std::min(count, count / devices / step * step * d);
  std::vector<Result> parts(devices);
  auto run = [&](int d) {
    const void* part = static_cast<const unsigned char*>(data) + first[d] * record_bytes;
    const std::size_t n = first[d + 1] - first[d];
    if (exact) {
      parts[d].exact = {n > 0 ? exact_sum_of_host(t, part, n, dtype, block, d, pinned, streaming) : ExactSum{}};
    } else if (n > 0) {
      parts[d] = reduce_host(t, part, n, width, dtype, op, block, d, pinned, streaming);
    }
  };
  std::vector<std::future<void>> others;
  for (int d = 1; d < devices; ++d) others.push_back(std::async(std::launch::async, run, d));
  std::exception_ptr failure;
  try {
    run(0);
  } catch (...) {
    failure = std::current_exception();
  }
  for (auto& o : others) {  // every part is waited for, failed or not, before anything is freed
    try {
      o.get();
    } catch (...) {
      if (!failure) failure = std::current_exception();
    }
  }
  if (failure) std::rethrow_exception(failure);
  if (exact) {
    Result r;
    r.exact = {ExactSum{}};
    for (const Result& p : parts) r.exact[0] += p.exact[0];
    return r;
  }
  // Empty parts (fewer records than GPUs) hold no result: fold the others.
  std::vector<Result> held;
  std::vector<std::size_t> at;
  for (int d = 0; d < devices; ++d)
    if (first[d + 1] > first[d]) held.push_back(parts[d]), at.push_back(first[d]);
  return fold_parts(held, at, width, dtype, op);
}

}  // namespace xreduce::cuda
