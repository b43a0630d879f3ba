#pragma once
// `xreduce.config`: the configuration in force, read and set from Python.

#include <nanobind/nanobind.h>

namespace xreduce::python {

void bind_config(nanobind::module_& m);

}  // namespace xreduce::python
