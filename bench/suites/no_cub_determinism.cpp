// cub_determinism.hpp in a build without XREDUCE_CCCL_INCLUDE: the levels are not built.
#include "cub_determinism.hpp"

namespace xreduce::bench {

int cub_determinism_version() { return 0; }
cudaError_t cub_sum(CubDeterminism, const float*, float*, std::size_t, cudaStream_t) { return cudaErrorNotSupported; }
cudaError_t cub_sum(CubDeterminism, const double*, double*, std::size_t, cudaStream_t) { return cudaErrorNotSupported; }

}  // namespace xreduce::bench
