// The statistics of f16 data (one translation unit per element type keeps the build parallel).
#include "statistics.cuh"

XREDUCE_INSTANTIATE_STATISTICS(xreduce::f16)
