// `hybrid`: one host-resident reduction shared between the best available CPU-parallel backend and
// the best available GPU backend, both at work at once, with one core left to drive the GPU.
//
// The input is shared from both ends: the GPU claims slices from the front, the CPU from the
// back, until they meet. Each claims three quarters of what its share says it should still do,
// down to a minimum slice. A static split by that share finishes together only if each part runs
// as fast beside the other as it ran alone; it does not, since the GPU's copies and the CPU's
// loads draw on the same host memory. Claiming lets the side that is ahead take more, so both
// finish within one small slice of each other whatever the two rates turn out to be, in a few
// calls per side.
//
// Where the two met is the GPU's share side by side, measured: the next call of the same kind
// (residency, pinned or pageable; dtype, op, records or not, exact or not) starts from it. Kinds
// are kept apart since their rates are: an exact sum costs the CPU far more than the GPU, and a
// plain sum started from its share would hand the GPU too much. The configured share (`xreduce
// calibrate`, config [backends.hybrid] gpu_fraction_*) only starts the first call of a kind;
// calibrate times whole calls at a few shares around the rates it measured apart, and within its
// noise picked 0.28 to 0.45 on the H200 host, where calls split at 0.38-0.43. A share near the
// split takes fewer claims and read the most there
// (bench/results/nvidia-h200/logs/hybrid-cpu-part-52405f7.txt).

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <future>
#include <mutex>
#include <numeric>
#include <optional>
#include <thread>

#include "xreduce/backend/part_fold.hpp"
#include "xreduce/backend/registry.hpp"

namespace xreduce::backends {
namespace {

struct Slice {
  std::size_t begin, count;
};

//! The slices of [0, count) not yet claimed: the GPU takes them from the front, the CPU from the
//! back. Each claim is kClaimOfShare of what the claimer's share says it should still do, rounded
//! to `step`, and at least the minimum slice: large claims first, small ones near the meeting point.
class SliceClaims {
 public:
  SliceClaims(std::size_t count, std::size_t step, std::size_t record_bytes, double gpu_share)
      : low_(0), high_(count), step_(step), gpu_share_(gpu_share) {
    // At most 4 MiB: small enough at the end that one side waits little for the other (75 us at
    // a 55 GB/s bus), large enough that per-call costs stay a few percent.
    const std::size_t cap = std::max<std::size_t>(1, (std::size_t{4} << 20) / record_bytes / step) * step;
    minimum_ = std::clamp<std::size_t>(count / 64 / step * step, step, cap);
  }
  std::optional<Slice> front() { return claim(gpu_share_, true); }
  std::optional<Slice> back() { return claim(1 - gpu_share_, false); }
  //! No more claims: one side failed.
  void close() {
    std::lock_guard lock(mutex_);
    low_ = high_;
  }

 private:
  std::optional<Slice> claim(double share, bool front) {
    std::lock_guard lock(mutex_);
    const std::size_t left = high_ - low_;
    if (left == 0) return std::nullopt;
    std::size_t n = static_cast<std::size_t>(static_cast<double>(left) * share * kClaimOfShare) / step_ * step_;
    n = std::max(n, minimum_);
    if (n + minimum_ / 2 >= left) n = left;  // no sliver left behind
    if (front) {  // low_ stays a multiple of step_ until the last claim
      low_ += n;
      return Slice{low_ - n, n};
    }
    // From the back, the slice's start is rounded down to a multiple of step_ as well (the input's
    // end need not be one), so that every slice starts on a 4 KiB boundary of the input.
    const std::size_t begin = n == left ? low_ : std::max(low_, (high_ - n) / step_ * step_);
    const Slice s{begin, high_ - begin};
    high_ = begin;
    return s;
  }

  // Three quarters rather than half: fewer claims, each a call with its own start and end (a GPU
  // pipeline to fill, a CPU parallel region). On the H200 host hybrid read pinned 2^28 elements at
  // 120.8 and 130.9 GB/s against 114.1 and 114.9 with halves, run in turn
  // (bench/results/nvidia-h200/logs/hybrid-claims-74d4beb.md).
  static constexpr double kClaimOfShare = 0.75;

  std::mutex mutex_;
  std::size_t low_, high_, step_, minimum_;
  double gpu_share_;
};

class HybridReducer final : public Reducer {
 public:
  explicit HybridReducer(const Registry& registry) : registry_(registry) {}
  std::string_view name() const override { return "hybrid"; }
  // Flat arrays and records, which split into slices of elements or of records: what its parts
  // do, the GPU's being the narrower (a call the parts cannot both do fails with `unavailable`,
  // naming it). Exact sums of flat arrays: the parts' partials add exactly. Not the standard sums
  // and products of f16 and bf16: each part's result is rounded to the 16-bit type, and a fold of
  // rounded parts would round twice (and could overflow where the whole does not).
  static constexpr std::array<DType, 11> kSumTypes{DType::f32, DType::f64, DType::i32, DType::i64, DType::u32, DType::u64,
                                                       DType::i8,  DType::u8,  DType::i16, DType::u16, DType::boolean};
  static constexpr Capabilities kCaps =
      Capabilities(Engine::cpu_gpu)
          .add(FeatureSet().dtypes(kSumTypes).ops({Op::sum, Op::prod}).layouts({Layout::all, Layout::outer}))
          .add(FeatureSet().every_dtype().ops({Op::min, Op::max, Op::argmin, Op::argmax}).layouts({Layout::all}))
          .add(FeatureSet().every_dtype().ops({Op::min, Op::max}).layouts({Layout::outer}))
          .add(FeatureSet().dtypes({DType::f32, DType::f64, DType::f16, DType::bf16}).ops({Op::sum}).layouts({Layout::all}).only_exact_sums());
  Capabilities capabilities() const override { return kCaps; }
  Availability available() const override {
    Workload any;  // an f32 sum of host data: what every GPU and CPU-parallel backend does
    if (!registry_.any(Engine::gpu, any)) return Availability::no("no GPU backend can run here");
    if (!registry_.any(Engine::cpu_parallel, any)) return Availability::no("no CPU-parallel backend can run here");
    return Availability::yes();
  }
  std::vector<SettingInfo> settings() const override {
    const std::string share =
        " share of the elements, which sizes the slices it claims, until a call of 256 MiB or more has measured it "
        "(up to 0.99; 0: 0.25; `xreduce calibrate` measures it)";
    return {{"gpu_fraction_pinned", "0.25", "on pinned host data, the GPU's expected" + share},
            {"gpu_fraction_pageable", "0.25", "on pageable host data, the GPU's expected" + share},
            {"gpu_fraction", "", "the GPU's expected share on any host data, over the two above; per call: over the measured one too"},
            {"cpu_backend", "", "the CPU-parallel backend of the CPU part; empty: the one auto prefers for the size"}};
  }
  void configure(const Settings& s) override {
    fraction_pinned_ = s.number("gpu_fraction_pinned", 0, 0.99).value_or(fraction_pinned_);
    fraction_pageable_ = s.number("gpu_fraction_pageable", 0, 0.99).value_or(fraction_pageable_);
    fraction_ = s.number("gpu_fraction", 0, 0.99).value_or(fraction_);
    cpu_backend_ = s.text("cpu_backend").value_or(cpu_backend_);
  }

 protected:
  Result do_reduce(const Request& q, const Options& o) override {
    const Workload work = Workload::of(q, false, o.accuracy.value_or(Accuracy::standard));
    Reducer* gpu = registry_.best(Engine::gpu, work);
    const std::string cpu_name = o.settings.text("cpu_backend").value_or(cpu_backend_);
    Reducer* cpu = cpu_name.empty() ? nullptr : registry_.find(cpu_name);
    if (!cpu && !cpu_name.empty())
      throw Error(ErrorCode::unknown_backend, "hybrid: cpu_backend '" + cpu_name + "' is not a registered backend");
    if (!cpu || !Registry::fits(*cpu, work)) cpu = registry_.best(Engine::cpu_parallel, work);
    if (!gpu || !cpu)
      throw Error(ErrorCode::unavailable, "hybrid: no GPU or CPU-parallel backend does " + to_string(work.features) + " here");
    const bool pinned = registry_.where(q.data).pinned;
    std::atomic<double>& measured = measured_[kind_of(work, pinned)];
    double fraction = o.settings.number("gpu_fraction", 0, 0.99).value_or(0);
    if (fraction == 0) fraction = measured.load(std::memory_order_relaxed);
    if (fraction == 0) fraction = fraction_;
    if (fraction == 0) fraction = pinned ? fraction_pinned_ : fraction_pageable_;
    if (fraction == 0) fraction = kDefaultGpuFraction;
    // Slices start on a 4 KiB boundary of the input, so every part keeps its alignment (and
    // between whole records: slices count records).
    const bool records = work.features.layout == Layout::outer;
    const std::size_t width = records ? static_cast<std::size_t>(q.view.shape[1]) : 1;
    const std::size_t count = records ? static_cast<std::size_t>(q.view.shape[0]) : q.count;
    const std::size_t record_bytes = width * size_of(q.dtype);
    const std::size_t elements_per_page = 4096 / size_of(q.dtype);
    const std::size_t step = elements_per_page / std::gcd(elements_per_page, width);
    SliceClaims claims(count, step, record_bytes, fraction);

    auto slice = [&](const Slice& s) {
      Request part = q;  // the records' results come back to be folded, not written to `out`
      part.data = static_cast<const unsigned char*>(q.data) + s.begin * record_bytes;
      part.count = s.count * width;
      part.view.shape[0] = static_cast<std::int64_t>(s.count);
      part.out = nullptr;
      part.out_index = nullptr;
      return part;
    };
    // Each part gets the call's settings it reads (a user may tune the GPU part's streaming).
    Options gpu_options = o, cpu_options = o;
    gpu_options.settings = o.settings.only(gpu->settings());
    cpu_options.settings = o.settings.only(cpu->settings());
    const int cores = static_cast<int>(std::max(2u, std::thread::hardware_concurrency()));
    if (cpu_options.threads == 0) cpu_options.threads = cores - 1;  // one core drives the GPU
    backend::PartFold fold(q.op);
    std::mutex fold_mutex;
    std::size_t gpu_count = 0;
    auto run_side = [&](Reducer& r, const Options& opts, bool front) {
      try {
        while (std::optional<Slice> s = front ? claims.front() : claims.back()) {
          Result part = r.reduce(slice(*s), opts);
          std::lock_guard lock(fold_mutex);
          fold.add(part, s->begin);
          if (front) gpu_count += s->count;
        }
      } catch (...) {
        claims.close();  // the other side stops at its next claim
        throw;
      }
    };
    auto gpu_side = std::async(std::launch::async, [&] { run_side(*gpu, gpu_options, true); });
    try {
      run_side(*cpu, cpu_options, false);
    } catch (...) {
      gpu_side.wait();  // never leave the GPU part running on the caller's memory
      throw;
    }
    gpu_side.get();
    // Only calls long enough that each side's start (a GPU pipeline to fill, a CPU team to wake)
    // is small beside its work say where the two rates meet.
    if (count * record_bytes >= kLearnFromBytes)
      measured.store(std::clamp(static_cast<double>(gpu_count) / static_cast<double>(count), 0.01, 0.99),
                     std::memory_order_relaxed);
    Result total = fold.result();
    if (records) write_columns(total, q.out);
    return total;
  }

 private:
  static constexpr double kDefaultGpuFraction = 0.25;
  static constexpr std::size_t kLearnFromBytes = std::size_t{256} << 20;
  static constexpr std::size_t kKinds = 2 * 2 * 2 * all_ops.size() * all_dtypes.size();
  //! The kind of call whose share a call measures: pinned, exact, records, op, dtype.
  static std::size_t kind_of(const Workload& work, bool pinned) {
    std::size_t k = pinned;
    k = k * 2 + (work.features.accuracy == Accuracy::exact);
    k = k * 2 + (work.features.layout == Layout::outer);
    k = k * all_ops.size() + static_cast<std::size_t>(work.features.ops.first());
    return k * all_dtypes.size() + static_cast<std::size_t>(work.features.dtype);
  }

  //! The folded column results of records, packed into the request's `out` (host memory).
  static void write_columns(const Result& r, void* out) {
    auto* bytes = static_cast<unsigned char*>(out);
    for (const Scalar& v : r.values) {
      std::memcpy(bytes, v.bytes(), size_of(v.dtype()));
      bytes += size_of(v.dtype());
    }
  }

  const Registry& registry_;
  double fraction_pinned_ = 0, fraction_pageable_ = 0, fraction_ = 0;  // 0: not set
  std::array<std::atomic<double>, kKinds> measured_{};  // by kind_of; 0: no call measured it yet
  std::string cpu_backend_;
};

}  // namespace

void register_hybrid_backend(Registry& registry) { registry.add(std::make_unique<HybridReducer>(registry), 50); }

}  // namespace xreduce::backends
