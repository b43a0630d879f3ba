#pragma once
// What the extension's files share: a call's keyword arguments, its result, and the conversions
// between Python objects and the library's values.

#include <nanobind/nanobind.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "xreduce/context.hpp"
#include "xreduce/request.hpp"
#include "xreduce/scalar.hpp"

namespace xreduce::python {

//! The keyword arguments of a reducing call.
struct CallOptions {
  std::optional<std::string> backend;
  std::optional<std::string> accuracy;
  std::optional<DType> result_dtype;  //!< dtype=: the result's type, if asked
  std::size_t width = 1;
  int threads = 0;
  int block_size = 0;
  std::map<std::string, std::string> settings;
  bool copy = false;
  nanobind::object axis = nanobind::none();  //!< numpy's axis: None, an int or a tuple of ints
  bool keepdims = false;
  double correction = 0;  //!< var and std: the divisor is n - correction
};

//! What xreduce.reduce returns (the class xreduce.Result).
struct PyResult {
  nanobind::object value;
  std::optional<std::uint64_t> index;
  //! argmin/argmax of records (width > 1): the row of each column's extreme, a list; of axis=:
  //! an array of the indices along the reduced axes; else None.
  nanobind::object indices = nanobind::none();
  std::string backend;
  double seconds = 0;
};

//! A scalar as Python's float, int or bool.
nanobind::object to_python(const Scalar& s);
//! `value` of a result: the scalar, or a list of the column results for records.
nanobind::object value_of(const Scalar& value, const std::vector<Scalar>& columns);
//! Result::indices of records (each column's row) as a list; None where there are none.
nanobind::object rows_of(const std::vector<std::uint64_t>& indices);
//! The op named `name`; ValueError naming every op otherwise.
Op parse_op_or_throw(const std::string& name);
//! The library's options of a call.
Options options_of(const CallOptions& c);
//! dtype=: a name, a numpy or torch dtype or Python's float, as a result type; None: unset.
std::optional<DType> result_dtype_of(nanobind::handle d);
//! A fresh numpy array of `shape` for values of `t` (bfloat16 in uint16 storage), and where its
//! elements are.
std::pair<nanobind::object, void*> numpy_empty(const std::vector<std::int64_t>& shape, DType t);
//! A view's results as numpy arrays of `shape`: values of `type`, and for an op with an index
//! int64 indices (numpy's argmax gives int64), else none.
struct ResultArrays {
  nanobind::object values, indices = nanobind::none();
  void* values_at = nullptr;
  std::uint64_t* indices_at = nullptr;
  std::size_t value_bytes = 0;
  ResultArrays(const std::vector<std::int64_t>& shape, DType type, bool index);
  //! Copies `values` (and `indices`) in: results that came back in a Result (or one op's
  //! OpResult), not through out.
  void put(const std::vector<Scalar>& values, const std::vector<std::uint64_t>& indices) const;
};
//! context.reduce with the GIL released; `seconds` gets its wall time.
Result reduce_released(Context& context, const Request& q, const Options& options, double* seconds);

}  // namespace xreduce::python
