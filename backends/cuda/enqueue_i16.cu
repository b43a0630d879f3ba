// The kernels for i16 data (one translation unit per element type keeps the build parallel).
#include "enqueue.cuh"

XREDUCE_INSTANTIATE_ENQUEUE(std::int16_t)
