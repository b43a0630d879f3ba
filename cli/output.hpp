#pragma once
// How the xreduce command prints: values, times and rates, the machine, and tables of backends
// whose columns fit the longest name.

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "args.hpp"
#include "xreduce/context.hpp"
#include "xreduce/backend/features.hpp"
#include "xreduce/backend/registry.hpp"
#include "xreduce/validate.hpp"

namespace xreduce::cli {

//! A value for JSON: numbers as numbers, NaN and infinities as "nan", "inf", "-inf".
nlohmann::json value_json(const Scalar& s);
//! A result's value: one number, or the list of column results of records or of segments.
nlohmann::json value_json(const Result& r, bool segmented = false);
//! The same as text: exact, lists in brackets (of segments, the first eight and the last two).
std::string value_text(const Result& r, bool segmented = false);
//! Decimal GB/s of `bytes` in `seconds`; "-" for no time.
std::string gbps(std::size_t bytes, double seconds);
std::string seconds_text(double s);
//! CPU model, hardware threads and memory of this machine.
std::string machine_line();
//! The width of the backend-name column: the longest registered name.
int name_width(const Registry& registry);
//! A backend's feature set as words ("f32 f64: sum; layouts all outer; host, device; exact sums")
//! and as JSON (every feature's values as a list).
std::string feature_set_text(const FeatureSet& s);
nlohmann::json feature_set_json(const FeatureSet& s);
//! Every backend: engine, priority, available or why not; then plugins that did not load.
void print_backends(Context& ctx);
//! The thresholds `auto` uses, each with where it came from: the config file's line, or the
//! defaults (and whose calibration those are).
void print_dispatch(const Context& ctx);
//! One line per reason for the rows of backends that could not run here (`list` names each).
void print_unavailable(const std::vector<ValidationRow>& rows);
//! Prints one run's result, as text or (args.json) JSON: `q` the whole array's request,
//! `backend_line` what follows "backend", `seconds` the median time; `ranks`: as for validations.
void print_run(const RunArgs& args, const Request& q, const std::string& description, const std::string& backend_line,
               const Result& r, double seconds, Accuracy accuracy, int ranks = 0);
//! Prints a validation, as text or (args.json) JSON, and returns the command's exit code. `ranks`:
//! the number of MPI ranks the array was spread over (0: one process).
int print_validation(Context& ctx, const ValidateArgs& args, const Request& q, const std::string& description,
                     const ValidationReport& report, Accuracy accuracy, int ranks = 0);

}  // namespace xreduce::cli
