#pragma once
// The command's arguments that several subcommands share: where the data comes from, how a
// reduction runs, and the exit codes.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "input.hpp"
#include "xreduce/request.hpp"

namespace xreduce::cli {

inline constexpr int kExitOk = 0, kExitDisagree = 1, kExitUsage = 2;

struct DataArgs {
  std::string input;
  std::string dtype;
  std::string n;  // decimal text: CLI11 would read 010 as octal and -1 as a huge count
  std::string shape;  // --shape A,B,C: generated N-D data
  std::uint64_t seed = 1;
  std::size_t width = 1;
  std::size_t rows = 0;     // --rows R: R equal rows of a 1-D array
  std::string offsets;      // --offsets FILE: segments at these offsets
  std::string axis;         // --axis 0,2: the axes to reduce (empty: all)
  bool keepdims = false;    // --keepdims: the results keep the reduced axes, as 1
  bool distributed = false;  // one array over the ranks of mpirun, each with its shard
  double correction = 0;    // --correction: var's and std's divisor is n - correction
};

struct RunArgs {
  std::string backend;  // empty: XREDUCE_BACKEND, then the config file, then auto
  std::vector<std::string> settings;  // --set KEY=VALUE
  std::string op;
  std::string ops;  // --ops LIST: several ops in one pass (then `op` is empty)
  int block_size = 0, threads = 0, repeat = 1;
  std::string accuracy;  // empty: the config's
  std::string result_dtype;  // --result-dtype: empty, the op's own
  std::string output;    // --output FILE.npy: the results as an array
  std::string memory = "host";  // --memory device: the data copied to a GPU first
  bool json = false;
};

struct ValidateArgs {
  std::string op;
  std::string ops;  // as RunArgs::ops
  std::vector<std::string> backends;
  int block_size = 0, threads = 0;
  std::string accuracy;  // empty: the config's
  bool json = false;
};

//! --input, --dtype, --n, --shape, --seed, --axis, --keepdims, --width, --rows, --offsets, --distributed.
void add_data_options(CLI::App* cmd, DataArgs& d);
//! --op OP or --ops LIST (exactly one), for run and validate.
void add_op_options(CLI::App* cmd, std::string& op, std::string& ops, double& correction);
//! The op of --op (sum when --ops is given instead) and the stats of --ops (empty without it);
//! a usage error for neither, or for a name --ops does not know.
std::pair<Op, OpSet> ops_of(const std::string& op, const std::string& ops);
//! --block-size, --threads, --accuracy: how a reduction runs, for run and validate.
void add_how_options(CLI::App* cmd, int& block_size, int& threads, std::string& accuracy);

//! The array the data options name (a whole one: `distributed` is the caller's to handle).
Array load(const DataArgs& d);
//! The offsets of --offsets (a .npy file of non-negative integers), as u64; empty without it.
Array load_offsets(const DataArgs& d);
//! The request for a loaded array: an N-D array (or one with --axis or --keepdims) as a view,
//! its --axis reduced; records of d.width values when --width is given, equal rows with --rows
//! (both views of a 1-D array); segments at `offsets` (load_offsets) with --offsets; several ops
//! in one pass with `ops`.
Request request_for(const Array& a, const DataArgs& d, Op op, Memory memory, const Array& offsets = {}, OpSet ops = {});
//! Writes a result that is an array (Result::shape) to --output FILE.npy: its values, or for
//! argmin/argmax its indices (int64, as numpy's argmax(axis=) gives them). A usage error for
//! several ops, or for segments' indices, which are relative.
void write_output(const std::string& file, const Request& q, const Result& r);
//! --set KEY=VALUE options as the call's settings.
Settings settings_of(const std::vector<std::string>& pairs);
//! How a reduction runs, from the options add_how_options and --set read.
Options options_of(const std::string& backend, int block_size, int threads, const std::string& accuracy,
                   const std::vector<std::string>& settings = {});
//! --accuracy, or unset (the config's `accuracy`).
std::optional<Accuracy> accuracy_of(const std::string& text);

}  // namespace xreduce::cli
