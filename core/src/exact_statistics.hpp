#pragma once
// Inside the core: the exact mean, var and std from exact partials (Accuracy::exact).

#include <vector>

#include "xreduce/exact.hpp"
#include "xreduce/scalar.hpp"
#include "xreduce/types.hpp"

namespace xreduce::detail {

//! The exact mean (partials: the exact sum of x), var or std (partials: the sums of x and of x
//! squared) of the partials' elements, rounded once to `type` (f32, f64, f16 or bf16): NaN for a
//! NaN, or for var and std an infinity, or n - correction <= 0; std is the correctly rounded
//! square root of the exact variance.
Scalar exact_statistic(Op op, const std::vector<ExactSum>& partials, double correction, DType type);

}  // namespace xreduce::detail
