// `hybrid`: one host-resident reduction split between the best available CPU-parallel backend and
// the best available GPU backend, both at work at once: the GPU takes the first `gpu_fraction` of
// the elements (streamed over the bus), the CPU the rest, with one core left to drive the GPU.
// The fraction comes from calibration (`xreduce calibrate`, config [hybrid] gpu_fraction): the
// parts should take the same time, so it is the GPU's share of the two engines' summed rates.

#include <algorithm>
#include <future>
#include <numeric>
#include <thread>

#include "combine.hpp"
#include "xreduce/registry.hpp"

namespace xreduce::backends {
namespace {

class HybridReducer final : public Reducer {
 public:
  explicit HybridReducer(const Registry& registry) : registry_(registry) {}
  std::string_view name() const override { return "hybrid"; }
  Capabilities capabilities() const override {
    // Everything: a call the parts cannot both do exactly fails with `unavailable`, naming it.
    return Capabilities(Engine::hybrid).set_all(Support::exact).accept_records();
  }
  Availability available() const override {
    if (!pick(Engine::gpu, nullptr)) return Availability::no("no GPU backend can run here");
    if (!pick(Engine::cpu_parallel, nullptr)) return Availability::no("no CPU-parallel backend can run here");
    return Availability::yes();
  }

 protected:
  Result do_reduce(const Request& q, const Options& o) override {
    Reducer* gpu = pick(Engine::gpu, &q);
    Reducer* cpu = o.cpu_backend.empty() ? nullptr : registry_.find(o.cpu_backend);
    if (!cpu || !fits(*cpu, q)) cpu = pick(Engine::cpu_parallel, &q);
    if (!gpu || !cpu)
      throw Error(ErrorCode::unavailable, "hybrid: no GPU or CPU-parallel backend does " + std::string(to_string(q.op)) +
                                              " of " + std::string(to_string(q.dtype)) +
                                              (q.width > 1 ? " records of width " + std::to_string(q.width) : "") + " here");
    const double fraction = o.gpu_fraction > 0 ? o.gpu_fraction : kDefaultGpuFraction;
    if (!(fraction > 0 && fraction < 1))
      throw Error(ErrorCode::invalid_argument, "hybrid: gpu_fraction must be between 0 and 1");
    // Split on a 4 KiB boundary of the input, so both parts keep their alignment (between whole
    // records: the split counts records).
    const std::size_t elements_per_page = 4096 / size_of(q.dtype);
    const std::size_t step = elements_per_page / std::gcd(elements_per_page, q.width);
    const std::size_t split = std::min(q.count, static_cast<std::size_t>(q.count * fraction) / step * step);
    if (split == 0 || split == q.count) return (split == 0 ? cpu : gpu)->reduce(q, o);

    Request low = q, high = q;
    low.count = split;
    high.data = static_cast<const unsigned char*>(q.data) + split * q.width * size_of(q.dtype);
    high.count = q.count - split;
    Options cpu_options = o;
    const int cores = static_cast<int>(std::max(2u, std::thread::hardware_concurrency()));
    if (cpu_options.threads == 0) cpu_options.threads = cores - 1;  // one core drives the GPU
    auto gpu_part = std::async(std::launch::async, [&] { return gpu->reduce(low, o); });
    Result cpu_result;
    try {
      cpu_result = cpu->reduce(high, cpu_options);
    } catch (...) {
      gpu_part.wait();  // never leave the GPU part running on the caller's memory
      throw;
    }
    return detail::combine_results(q.op, gpu_part.get(), cpu_result, split);
  }

 private:
  static constexpr double kDefaultGpuFraction = 0.25;

  //! Whether `r` does `q` exactly, records included, and can run now.
  static bool fits(Reducer& r, const Request& q) {
    Capabilities c = r.capabilities();
    return c.support(q.dtype, q.op) == Support::exact && (q.width <= 1 || c.records()) && r.available();
  }

  //! The highest-priority available backend of `engine` that reads host memory (and does the
  //! request exactly, when given one).
  Reducer* pick(Engine engine, const Request* q) const {
    for (const auto& e : registry_.entries()) {
      Capabilities c = e.reducer->capabilities();
      if (c.engine() != engine || !c.accepts(Memory::host)) continue;
      if (q ? fits(*e.reducer, *q) : static_cast<bool>(e.reducer->available())) return e.reducer;
    }
    return nullptr;
  }

  const Registry& registry_;
};

}  // namespace

void register_hybrid_backend(Registry& registry) { registry.add(std::make_unique<HybridReducer>(registry), 50); }

}  // namespace xreduce::backends
