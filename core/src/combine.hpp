#pragma once
// Combining the results of two parts of one reduction (the hybrid backend's CPU and GPU parts).

#include <cstdint>

#include "xreduce/request.hpp"

namespace xreduce::detail {

//! The result of `op` over [low part, high part], where the high part's indices start at
//! `high_offset`. Sums and products are combined in double (floats) or modulo 2^64 (integers);
//! min/max keep NaN; argmin/argmax keep the first NaN, else the extreme with the lowest index.
Result combine_results(Op op, const Result& low, const Result& high, std::uint64_t high_offset);

}  // namespace xreduce::detail
