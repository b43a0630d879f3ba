// The kernels for i8 data (one translation unit per element type keeps the build parallel).
#include "enqueue.cuh"

XREDUCE_INSTANTIATE_ENQUEUE(std::int8_t)
