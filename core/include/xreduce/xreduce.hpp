#pragma once
//! The umbrella header: the user's API. Reducing (Context, reduce, the typed front end),
//! user-defined reductions (custom.hpp), cross-validation (validate.hpp) and configuration.
//! Beyond it, each in its own include: the registry and dispatcher (xreduce/registry.hpp,
//! xreduce/dispatcher.hpp), calibration (xreduce/calibrate.hpp), pinned host memory
//! (xreduce/pinned.hpp), the GPU template API (xreduce/cuda.cuh), and for backend authors the
//! Reducer interface (xreduce/reducer.hpp), the plugin ABI (xreduce/plugin.hpp) and the toolkit
//! (xreduce/backend/).

#include "xreduce/config.hpp"
#include "xreduce/context.hpp"
#include "xreduce/custom.hpp"
#include "xreduce/error.hpp"
#include "xreduce/request.hpp"
#include "xreduce/scalar.hpp"
#include "xreduce/settings.hpp"
#include "xreduce/types.hpp"
#include "xreduce/validate.hpp"
#include "xreduce/version.hpp"
