#pragma once
//! The umbrella header: everything a user of the library needs.

#include "xreduce/calibrate.hpp"
#include "xreduce/config.hpp"
#include "xreduce/context.hpp"
#include "xreduce/custom.hpp"
#include "xreduce/dispatcher.hpp"
#include "xreduce/error.hpp"
#include "xreduce/pinned.hpp"
#include "xreduce/reducer.hpp"
#include "xreduce/registry.hpp"
#include "xreduce/request.hpp"
#include "xreduce/scalar.hpp"
#include "xreduce/types.hpp"
#include "xreduce/validate.hpp"
#include "xreduce/version.hpp"
