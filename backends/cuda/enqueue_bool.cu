// The kernels for bool data (one translation unit per element type keeps the build parallel).
#include "enqueue.cuh"

XREDUCE_INSTANTIATE_ENQUEUE(bool)
