#pragma once
// The pieces xreduce.dask and xreduce.mpi (Python) build on: exact partials as numpy arrays of
// their 72 words (ExactSum), rounded or combined anywhere, and the MPI wire format of
// xreduce_mpi (mpi/src/partials.hpp) with its combine, for mpi4py to carry.

#include <nanobind/nanobind.h>

namespace xreduce::python {

void bind_distributed(nanobind::module_& m);

}  // namespace xreduce::python
