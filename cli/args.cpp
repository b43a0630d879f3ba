#include "args.hpp"

#include "xreduce/config.hpp"

namespace xreduce::cli {

void add_data_options(CLI::App* cmd, DataArgs& d) {
  // An existing file, or (with --distributed) a name with {rank} in it, which each rank fills in.
  const CLI::Validator file_or_per_rank(
      [](std::string& path) {
        if (path.find("{rank}") != std::string::npos) return std::string();
        return CLI::ExistingFile(path);
      },
      "FILE");
  auto* input = cmd->add_option("--input", d.input,
                                "Read the array from a .npy file (1-D, little-endian), or a raw file with --dtype; with "
                                "--distributed, FILE may hold {rank}: each rank reads its own shard")
                    ->check(file_or_per_rank);
  cmd->add_option("--dtype", d.dtype, "Element type: f32 f64 i32 i64 u32 u64 (of --input raw files, or of generated data)")
      ->check(CLI::IsMember({"f32", "f64", "i32", "i64", "u32", "u64"}));
  auto* n = cmd->add_option("--n", d.n, "Generate this many random elements (floats in [0,1), integers in [-2^20,2^20))");
  cmd->add_option("--seed", d.seed, "Seed of the generated data")->capture_default_str();
  cmd->add_option("--width", d.width,
                  "Read the array as records of K values each and reduce column by column to K results "
                  "(sum, prod, min, max); the element count must be a multiple of K")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 32));
  cmd->add_flag("--distributed", d.distributed,
                "Under mpirun: one array over the ranks. Each rank generates its slice of --n (the same array as one "
                "process gets), or takes its slice of --input FILE, or reads its own --input FILE with {rank}; rank "
                "0 prints the result");
  input->excludes(n);
}

void add_how_options(CLI::App* cmd, int& block_size, int& threads, std::string& accuracy) {
  cmd->add_option("--block-size", block_size, "GPU threads per block: 128, 256, 512, 1024 (0: default)")
      ->check(CLI::IsMember({0, 128, 256, 512, 1024}));
  cmd->add_option("--threads", threads, "CPU threads for parallel backends (0: all)")->check(CLI::Range(0, Config::kMaxThreads));
  cmd->add_option("--accuracy", accuracy,
                  "Rounding of f32/f64 sums: standard (within 64 eps of the sum of |x|, fastest) or exact (the exact "
                  "sum rounded once: the same bits on every backend); default: the config's accuracy, else standard")
      ->check(CLI::IsMember({"standard", "exact"}));
}

Request request_for(const Array& a, const DataArgs& d, Op op, Memory memory) {
  if (d.width > 1 && returns_index(op))
    throw CLI::ValidationError("--width: " + std::string(to_string(op)) + " has no column-by-column form; use sum, prod, min or max");
  if (a.count % d.width != 0)
    throw CLI::ValidationError("--width " + std::to_string(d.width) + ": " + std::to_string(a.count) +
                               " elements are not a whole number of records");
  return Request{a.data, a.count / d.width, a.dtype, op, memory, d.width};
}

Array load(const DataArgs& d) {
  std::optional<DType> dtype = d.dtype.empty() ? std::nullopt : parse_dtype(d.dtype);
  if (!d.input.empty()) {
    if (d.input.find("{rank}") != std::string::npos)
      throw CLI::ValidationError("--input " + d.input + ": {rank} names one file per rank, with --distributed only");
    Array a = read_input(d.input, dtype);
    if (dtype && a.dtype != *dtype)
      throw CLI::ValidationError("--dtype " + d.dtype + " conflicts with " + a.description + ": leave --dtype out for .npy files");
    return a;
  }
  if (!dtype || d.n.empty()) throw CLI::ValidationError("give --input FILE, or --dtype T with --n N");
  return generate(*dtype, parse_count(d.n, "--n"), d.seed);
}

Settings settings_of(const std::vector<std::string>& pairs) {
  Settings s;
  for (const std::string& p : pairs) {
    const std::size_t eq = p.find('=');
    if (eq == std::string::npos || eq == 0) throw Error(ErrorCode::invalid_argument, "--set " + p + ": expected KEY=VALUE");
    s.set(p.substr(0, eq), p.substr(eq + 1), "--set");
  }
  return s;
}

std::optional<Accuracy> accuracy_of(const std::string& text) {
  if (text.empty()) return std::nullopt;
  return parse_accuracy(text);
}

}  // namespace xreduce::cli
