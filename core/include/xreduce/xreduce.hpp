#pragma once
//! The umbrella header: the user's API. Requests and results (request.hpp), running them
//! (context.hpp: Context, reduce), cross-validation against exact references (validate.hpp),
//! configuration (config.hpp) and the exact partial (exact.hpp).
//!
//! Beyond it, each in its own include:
//!   xreduce/custom.hpp     user-defined reductions (your type, your operator) on the CPU
//!   xreduce/cuda.cuh       the same on the GPU, compiled with nvcc
//!   xreduce/pinned.hpp     page-locked host memory
//!   xreduce/device_buffer.hpp  memory of a GPU, through the CUDA module
//!   xreduce/calibrate.hpp  measuring this machine's thresholds
//!   xreduce/timing.hpp     the timing rule the command and the benchmarks share
//!   xreduce/backend/       for backend authors: the Reducer interface, the registry and the
//!                          dispatcher, the plugin ABI, the op table and the CPU chunk driver

#include "xreduce/config.hpp"
#include "xreduce/context.hpp"
#include "xreduce/error.hpp"
#include "xreduce/exact.hpp"
#include "xreduce/request.hpp"
#include "xreduce/scalar.hpp"
#include "xreduce/settings.hpp"
#include "xreduce/types.hpp"
#include "xreduce/validate.hpp"
#include "xreduce/version.hpp"
