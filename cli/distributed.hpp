#pragma once
// `xreduce run|validate --distributed` under mpirun: one array over the ranks, each with its
// shard, combined by xreduce::mpi; rank 0 prints. Without MPI in the build, they say so.

#include "args.hpp"
#include "xreduce/context.hpp"

namespace xreduce::cli {

int run_distributed(Context& ctx, const RunArgs& args, const DataArgs& d);
int validate_distributed(Context& ctx, const ValidateArgs& args, const DataArgs& d);

}  // namespace xreduce::cli
