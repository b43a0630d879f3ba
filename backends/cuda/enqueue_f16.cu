// The kernels for f16 data (one translation unit per element type keeps the build parallel).
#include "enqueue.cuh"

XREDUCE_INSTANTIATE_ENQUEUE(xreduce::f16)
