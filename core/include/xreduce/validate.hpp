#pragma once
//! Exact references and cross-validation of backends against them.

#include <optional>
#include <string>
#include <vector>

#include "xreduce/error.hpp"
#include "xreduce/request.hpp"

namespace xreduce {

//! The correct answer to a request: integer sums and products exact modulo 2^64, floating sums
//! exactly rounded (ExactSum), floating products from 64-bit-mantissa arithmetic, extremes exact.
struct Reference {
  Scalar value;
  std::optional<std::uint64_t> index;
  double abs_sum = 0;  //!< sum of |x| (floating sums) or |exact| (products): scales the tolerance
  std::size_t count = 0;
  //! Requests with more than one result (a view that keeps an axis or its dimensions, segments):
  //! one per result, in the order of Result::values (argmin/argmax's index along the reduced
  //! axes, or relative to the segment; an empty segment's is the op's identity and no_index);
  //! `value` is the first.
  std::vector<Reference> results;
  //! Requests with several ops (Request::ops): one per op, in the order of all_ops, each as
  //! that op alone would have it (a sum of squares as a sum); `value` is the first.
  std::vector<Reference> ops;
  //! Added to the tolerance: a square below the normal range keeps only the digits it has, so a
  //! sum of squares may be off by half the smallest subnormal a square.
  double slack = 0;
};

//! Computes the reference on the CPU, element by element from the request as it is given (no
//! canonical form, none of the backends' kernels); `request.data` (and its offsets) must be host
//! memory. Throws Error(empty_input) for min/max/argmin/argmax of nothing (but not of an empty
//! segment), Error(invalid_argument) for bad segment offsets.
Reference exact_reference(const Request& request);

//! The largest error a backend that does a combination exactly may make:
//! sums 64 * eps(T) * sum|x|, products (n + 64) * eps(T) * |exact|, zero for everything else;
//! sums of squares (Request::ops) 64 * eps(T) * sum x^2, plus Reference::slack.
//! For more than one result, the largest over them (agrees() checks each against its own).
//! Exact sums (Accuracy::exact): zero.
double tolerance(const Request& request, const Reference& reference, Accuracy accuracy = Accuracy::standard);

//! Whether a result agrees with the reference within tolerance(); NaN agrees with NaN, an
//! infinity only with the same infinity, and argmin/argmax need the same index. `error` gets the
//! absolute difference (0 when agreeing exactly, inf on a NaN/infinity mismatch). Exact sums
//! (Accuracy::exact) agree only with the reference's very bits (any NaN with a NaN). More than one
//! result: every one must agree (Result::values and indices); several ops: every op
//! (Result::ops); `error` is the worst.
bool agrees(const Request& request, const Reference& reference, const Result& result, double* error = nullptr,
            Accuracy accuracy = Accuracy::standard);

class Context;

//! One backend's outcome in a validation run.
struct ValidationRow {
  std::string backend;
  bool exact = true;       //!< the backend promises the semantics for this combination
  bool ran = false;        //!< false: `failure` says why (unsupported, unavailable, error)
  std::optional<Result> result;
  double error = 0;        //!< |result - reference|
  bool agrees = false;
  double seconds = 0;      //!< wall time of the reduction alone
  std::string failure;
  ErrorCode failure_code = ErrorCode::ok;
};

struct ValidationReport {
  Reference reference;
  std::vector<ValidationRow> rows;
  //! True unless a backend that promises exactness disagreed, or failed for any reason other
  //! than being unavailable on this machine.
  bool ok() const;
};

//! Runs `request` through every registered backend of `context` that supports it (or through
//! `backends`, if not empty), against the exact reference. Each backend gets the settings of
//! `options` that it declares. With options.accuracy exact (or the config's), floating sums go
//! only to the backends that sum exactly, and must match the reference bit for bit.
ValidationReport validate(Context& context, const Request& request, const Options& options = {},
                          const std::vector<std::string>& backends = {});

}  // namespace xreduce
