#pragma once
// Python arrays as xreduce requests, read in place: any object with __dlpack__ (PyTorch, CuPy,
// JAX, numpy) or the buffer protocol (numpy, array.array, memoryview).

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstddef>
#include <memory>
#include <string>

#include "xreduce/request.hpp"

namespace xreduce::python {

//! A request over a Python array, and what keeps its memory alive and unmoved while it runs: the
//! array's own export (DLPack capsule or buffer) or the array itself, or the one copy made for a non-contiguous
//! array when the caller allowed it.
struct ArrayInput {
  Request request;
  bool view = false;  //!< read as an N-D view (axis=, keepdims=, or a strided host array read in place)
  nanobind::ndarray<nanobind::ro> array;
  nanobind::object owner;                //!< a PyTorch tensor read through its own accessors
  nanobind::object contiguous;           //!< the device copy of a non-contiguous device array
  std::unique_ptr<std::byte[]> gathered;  //!< the host copy of a non-contiguous host array
  bool device = false;                   //!< CUDA device (or managed) memory
};

//! Reads `object` as a request for `op` in records of `width`. Throws TypeError for an object that
//! is no array or has an element type xreduce does not reduce, ValueError for memory it cannot
//! read, a width that does not divide the size, or a non-contiguous device array for argmin or
//! argmax (or array in records) when `copy` is false (with `copy`, such an array is copied once,
//! in C order). A non-contiguous array of one column is read in place, as a view of every axis:
//! a host array always, a device array for an op without an index when `copy` is false.
ArrayInput read_array(nanobind::handle object, Op op, std::size_t width, bool copy);

//! Reads `object` as an N-D view with numpy's `axis` (None: every axis; an int or a tuple of
//! ints, negative from the end) reduced, and `keepdims`: any strides, read in place (host arrays;
//! device arrays as the GPU backends' layouts allow). ValueError for an axis out of range or
//! named twice, an empty tuple, or more than kMaxRank dimensions; TypeError for an axis that is
//! no int.
ArrayInput read_view(nanobind::handle object, Op op, nanobind::handle axis, bool keepdims);

//! numpy's name of a dtype (torch's too; ml_dtypes' for bfloat16), the name Python users know.
std::string numpy_name(DType t);

}  // namespace xreduce::python
