// The kernels for u16 data (one translation unit per element type keeps the build parallel).
#include "enqueue.cuh"

XREDUCE_INSTANTIATE_ENQUEUE(std::uint16_t)
