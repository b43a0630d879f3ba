// The statistics of f64 data (one translation unit per element type keeps the build parallel).
#include "statistics.cuh"

XREDUCE_INSTANTIATE_STATISTICS(double)
