// `openmp`: the chunks of core's blocked kernel under an OpenMP parallel loop, partials combined
// in a fixed order (so the result does not depend on the thread count).

#include <omp.h>

#include <memory>

#include "cpu_reduce.hpp"
#include "xreduce/registry.hpp"

namespace xreduce::backends {
namespace {

class OpenMpReducer final : public Reducer {
 public:
  std::string_view name() const override { return "openmp"; }
  Capabilities capabilities() const override { return Capabilities(Engine::cpu_parallel).set_all(Support::exact); }
  Availability available() const override { return Availability::yes(); }

 protected:
  Result do_reduce(const Request& q, const Options& o) override {
    detail::ChunkRunner runner = [&](std::size_t chunks, const std::function<void(std::size_t)>& body) {
      const int threads = o.threads > 0 ? o.threads : omp_get_max_threads();
      const auto count = static_cast<long long>(chunks);
#pragma omp parallel for schedule(static) num_threads(threads)
      for (long long c = 0; c < count; ++c) body(static_cast<std::size_t>(c));
    };
    return detail::reduce_on_cpu(q, &runner);
  }
};

}  // namespace

void register_openmp_backend(Registry& registry) { registry.add(std::make_unique<OpenMpReducer>(), 190); }

}  // namespace xreduce::backends
