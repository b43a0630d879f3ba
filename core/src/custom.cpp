// The non-template half of the template API (xreduce/custom.hpp): which backend's threads run
// a user's operator. The choice is the dispatcher's, for a workload of user code.

#include <string>

#include "xreduce/context.hpp"
#include "xreduce/custom.hpp"
#include "xreduce/backend/dispatcher.hpp"
#include "xreduce/backend/registry.hpp"

namespace xreduce::detail {

Reducer& custom_executor(Context& context, const std::string& backend, std::size_t elements) {
  const Registry& registry = context.registry();
  Workload work;
  work.elements = elements;
  work.user_code = true;
  if (backend.empty() || backend == "auto") {
    try {
      return context.dispatcher().pick(work);
    } catch (const Error&) {
      throw Error(ErrorCode::unavailable, "custom reduction: no CPU backend can run a user's operator here");
    }
  }
  Reducer& r = registry.get(backend);
  if (!Registry::fits(r, work)) {
    std::string names;
    for (const auto& c : registry.candidates(work)) names += (names.empty() ? "" : ", ") + std::string(c.reducer->name());
    throw Error(ErrorCode::unsupported, "custom reduction: backend '" + backend +
                                            "' cannot run a user's operator; these can: " + names +
                                            " (and the GPU, through xreduce/cuda.cuh)");
  }
  return r;
}

void run_user_chunks(const std::string& backend, std::size_t elements, int threads, std::size_t chunks,
                     void (*body)(void* context, std::size_t chunk), void* context) {
  Context& ctx = default_context();
  Reducer& engine = custom_executor(ctx, backend, elements);
  engine.run_chunks(chunks, body, context, threads > 0 ? threads : ctx.config().threads);
}

ExactSum exact_partial(const std::string& backend, DType dtype, const void* x, std::size_t n, int threads) {
  Context& context = default_context();
  const Request q{x, n, dtype, Op::sum, Memory::automatic};
  Options o;
  o.backend = backend.empty() ? "auto" : backend;
  o.threads = threads;
  o.accuracy = Accuracy::exact;
  if (backend == "cuda") {
    Workload work = Workload::of(q, false, Accuracy::exact);
    work.features.memory = context.locate(q).memory;
    Reducer* gpu = context.registry().best(Engine::gpu, work);
    if (!gpu) throw Error(ErrorCode::unavailable, "Policy::accuracy exact: no GPU backend sums exactly here");
    o.backend = std::string(gpu->name());
  }
  return context.reduce(q, o).exact.front();
}

}  // namespace xreduce::detail
