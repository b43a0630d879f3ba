#pragma once
// Where a request's results go and how they come back: Reducer::reduce hands every backend a
// canonical request with packed places for its results, and brings them into the Result (or the
// caller's `out`, packed or strided). Empty requests are answered here, without a backend.

#include <functional>
#include <string>

#include "xreduce/backend/features.hpp"
#include "xreduce/request.hpp"

namespace xreduce::detail {

//! Whether request `q` (canonical form `c`) has more than a value: segments, or a view's results
//! of a shape. A view that reduces every axis has one, whatever layout its canonical form takes.
inline bool returns_values(const Request& q, const Request& c) { return c.segments.segmented() || !result_shape(q).empty(); }

//! A backend's run of one canonical request.
using Run = std::function<Result(const Request&)>;

//! Runs `c`, the canonical form of `q`, through `run` when its results are more than a value
//! (several ops, or any layout but all): with Request::out or ops_out set to the caller's packed
//! arrays or to host arrays of its own, then into Result::values / Result::ops (or scattered to
//! the caller's `out` by `out_strides`), exact partials rounded, Result::shape set.
//! `asked`: the results' type asked for (Options::result_dtype), which exact partials and wide
//! results (Features::wide: the backend writes f64) are rounded to.
Result run_for_results(const Request& q, const Request& c, const Features& f, const Run& run,
                       std::optional<DType> asked = std::nullopt);

//! The results of a request with no element to read (and no segments): sums 0, products 1, sums
//! of squares 0, one per result; Error(empty_input) for min, max, argmin and argmax if there is
//! a result to give (an empty slice has no extreme).
Result empty_result(const Request& q, const Request& c, const Features& f, std::optional<DType> asked = std::nullopt);
//! The check of empty_result alone: Error(empty_input) for an extreme of an empty slice.
void check_extremes_of_empty(const Request& q, const Request& c, const Features& f);

//! The exact partial's value as T's result: the one rounding of an exact sum.
Scalar rounded(DType dtype, const ExactSum& s);
//! A wide result (an f64 accumulator's value) rounded once to `dtype`.
Scalar rounded(DType dtype, double wide);

}  // namespace xreduce::detail
