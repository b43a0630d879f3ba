#include "args.hpp"

#include <cstdio>
#include <cstring>
#include <memory>
#include <sstream>
#include <vector>

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
                                "Read the array from a .npy file (N-D, C or Fortran order, little-endian), or a raw file "
                                "(1-D) with --dtype; with --distributed, FILE may hold {rank}: each rank reads its own shard")
                    ->check(file_or_per_rank);
  cmd->add_option("--dtype", d.dtype,
                  "Element type: f16 bf16 f32 f64 i8 i16 i32 i64 u8 u16 u32 u64 bool (of --input raw files, of generated data, "
                  "and bf16 for a .npy of ml_dtypes' bfloat16, which numpy saves as opaque '<V2')")
      ->check(CLI::IsMember(std::vector<std::string>(dtype_names.begin(), dtype_names.end())));
  auto* n = cmd->add_option("--n", d.n, "Generate this many random elements (floats in [0,1), 32/64-bit integers in [-2^20,2^20) or [0,2^20), 8/16-bit ones over their whole range, bools half true)");
  auto* shape = cmd->add_option("--shape", d.shape, "Generate an N-D array of random elements of this shape (A,B,C: up to 16 extents), C order");
  auto* axis = cmd->add_option("--axis", d.axis,
                               "Reduce these axes of an N-D array (0,2; -1 counts from the end), one result per index of the "
                               "others, as numpy's x.sum(axis=...); default: all of them, one result. argmin/argmax: the "
                               "index along the reduced axes (several: in C order)");
  auto* keepdims = cmd->add_flag("--keepdims", d.keepdims, "The results keep the reduced axes, with extent 1 (numpy's keepdims)");
  cmd->add_option("--seed", d.seed, "Seed of the generated data")->capture_default_str();
  cmd->add_option("--width", d.width,
                  "Read the array as records of K values each and reduce column by column to K results "
                  "(argmin/argmax: the record of each column's extreme); the element count must be a multiple of K")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 32));
  auto* rows = cmd->add_option("--rows", d.rows,
                                "Cut the array into R equal rows (R must divide the element count) and reduce each: "
                                "one result per row, as numpy's x.reshape(R, -1).sum(axis=1)")
                   ->check(CLI::PositiveNumber);
  auto* offsets = cmd->add_option("--offsets", d.offsets,
                                  "Reduce each segment [o[s], o[s+1]) of the array, o read from FILE: a .npy of S + 1 "
                                  "non-decreasing, non-negative integers (a CSR matrix's row pointers); one result per "
                                  "segment, and an empty segment gives the op's identity (argmin/argmax: no index)")
                      ->check(CLI::ExistingFile);
  rows->excludes(offsets);
  cmd->get_option("--width")->excludes(rows)->excludes(offsets);
  for (CLI::Option* view : {axis, keepdims})
    for (CLI::Option* other : {static_cast<CLI::Option*>(rows), offsets, cmd->get_option("--width")}) view->excludes(other);
  cmd->add_flag("--distributed", d.distributed,
                "Under mpirun: one array over the ranks. Each rank generates its slice of --n (the same array as one "
                "process gets), or takes its slice of --input FILE, or reads its own --input FILE with {rank}; rank "
                "0 prints the result");
  input->excludes(n);
  shape->excludes(n)->excludes(input);
}

void add_op_options(CLI::App* cmd, std::string& op, std::string& ops, double& correction) {
  std::vector<std::string> names(op_names.begin(), op_names.end());
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : " ") + n;
  auto* one = cmd->add_option("--op", op,
                              "Operation: " + list + " (sumsq: the sum of squares; norm1, norm2, norminf: vector norms; "
                              "nan*: NaN skipped, as numpy's; semantics: docs/semantics.md)")
                  ->check(CLI::IsMember(names));
  auto* several = cmd->add_option("--ops", ops,
                                  "Several operations in one read of the data, comma-separated: any OP but prod "
                                  "(e.g. mean,std,min,max); instead of --op");
  one->excludes(several);
  cmd->add_option("--correction", correction,
                  "var, std, nanvar, nanstd: the divisor is n - CORRECTION (numpy's ddof; 1 for the sample variance)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
}

std::pair<Op, OpSet> ops_of(const std::string& op, const std::string& ops) {
  if (op.empty() && ops.empty()) throw CLI::ValidationError("give --op OP, or --ops LIST for several in one pass");
  if (!op.empty()) return {*parse_op(op), OpSet{}};
  OpSet stats;
  std::stringstream list(ops);
  for (std::string name; std::getline(list, name, ',');) {
    const std::optional<Op> s = parse_op(name);
    if (!s) throw CLI::ValidationError("--ops " + ops + ": '" + name + "' is no operation (see --op for the names)");
    if (*s == Op::prod) throw CLI::ValidationError("--ops " + ops + ": prod is computed alone (--op prod), not among several");
    stats.add(*s);
  }
  if (stats.empty()) throw CLI::ValidationError("--ops: name at least one operation, e.g. --ops mean,std,min,max");
  return {Op::sum, stats};
}

void add_how_options(CLI::App* cmd, int& block_size, int& threads, std::string& accuracy) {
  cmd->add_option("--block-size", block_size,
                  "Deprecated: --set block_size=N (a setting of the CUDA backends that take one: 128, 256, 512, 1024)")
      ->check(CLI::IsMember({0, 128, 256, 512, 1024}));
  cmd->add_option("--threads", threads, "CPU threads for parallel backends (0: all)")->check(CLI::Range(0, Config::kMaxThreads));
  cmd->add_option("--accuracy", accuracy,
                  "Rounding of f32/f64 sums: standard (within 64 eps of the sum of |x|, fastest) or exact (the exact "
                  "sum rounded once: the same bits on every backend); default: the config's accuracy, else standard")
      ->check(CLI::IsMember({"standard", "exact"}));
}

Array load_offsets(const DataArgs& d) {
  if (d.offsets.empty()) return {};
  const Array raw = read_input(d.offsets, std::nullopt);
  if (is_floating(raw.dtype))
    throw CLI::ValidationError("--offsets " + d.offsets + ": offsets are integers, not " + std::string(to_string(raw.dtype)));
  if (raw.count == 0) throw CLI::ValidationError("--offsets " + d.offsets + ": no offsets (S segments take S + 1)");
  auto values = std::make_shared<std::vector<std::uint64_t>>(raw.count);
  visit_dtype(raw.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(raw.data);
    for (std::size_t i = 0; i < raw.count; ++i) {
      if constexpr (std::is_signed_v<T>)
        if (in[i] < 0)
          throw CLI::ValidationError("--offsets " + d.offsets + ": offset " + std::to_string(i) + " is negative (" +
                                     std::to_string(in[i]) + ")");
      (*values)[i] = static_cast<std::uint64_t>(in[i]);
    }
  });
  return Array{DType::u64, raw.count, values->data(), values, raw.description, {static_cast<std::int64_t>(raw.count)}};
}

Request request_for(const Array& a, const DataArgs& d, Op op, Memory memory, const Array& offsets, OpSet ops) {
  if ((d.rows || !d.offsets.empty() || !d.axis.empty() || d.keepdims || a.shape.size() > 1) && d.distributed)
    throw CLI::ValidationError("--distributed reduces a 1-D array (or records, --width): not an N-D array, --axis, --rows or --offsets");
  if (!ops.empty() && d.distributed) throw CLI::ValidationError("--ops reduces one process's array: not with --distributed");
  const bool one_dimension = a.shape.size() <= 1;
  if ((d.rows || !d.offsets.empty() || d.width > 1) && !one_dimension)
    throw CLI::ValidationError("--rows, --offsets and --width cut a 1-D array; an N-D one takes --axis");
  Request q{a.data, a.count, a.dtype, op, memory};
  if (d.rows) {
    if (a.count % d.rows != 0)
      throw CLI::ValidationError("--rows " + std::to_string(d.rows) + ": " + std::to_string(a.count) +
                                 " elements do not make equal rows");
    q = Request::rows(a.data, d.rows, a.count / d.rows, a.dtype, op);
  } else if (!d.offsets.empty()) {
    q.segments = Segments::at(static_cast<const std::uint64_t*>(offsets.data), offsets.count - 1);
  } else if (d.width > 1) {
    if (a.count % d.width != 0)
      throw CLI::ValidationError("--width " + std::to_string(d.width) + ": " + std::to_string(a.count) +
                                 " elements are not a whole number of records");
    q = Request::records(a.data, a.count / d.width, d.width, a.dtype, op);
  } else if (!one_dimension || !d.axis.empty() || d.keepdims) {
    q = Request::over(a.data, a.dtype, a.view(), parse_axes(d.axis, a.shape.size()), op);
    q.keepdims = d.keepdims;
  }
  q.memory = memory;
  q.ops = ops;
  q.correction = d.correction;
  return q;
}

void write_output(const std::string& file, const Request& q, const Result& r) {
  if (!q.ops.empty()) throw CLI::ValidationError("--output " + file + ": writes one op's results; name one with --op");
  const bool index = returns_index(q.op);
  if (index && q.segments.segmented())
    throw CLI::ValidationError("--output " + file + ": segments' argmin/argmax indices are relative to each segment");
  // A single result is a 0-d array; an array's values (or indices) in C order of its shape.
  const std::size_t n = r.shape.empty() ? 1 : r.values.size();
  const DType type = index ? DType::i64 : r.value.dtype();
  std::vector<unsigned char> packed(n * size_of(type));
  for (std::size_t s = 0; s < n; ++s) {
    if (index) {
      const auto i = static_cast<std::int64_t>(r.shape.empty() ? r.index.value_or(0) : r.indices[s]);
      std::memcpy(packed.data() + s * 8, &i, 8);
    } else {
      const Scalar& v = r.shape.empty() ? r.value : r.values[s];
      std::memcpy(packed.data() + s * size_of(type), v.bytes(), size_of(type));
    }
  }
  write_npy(file, type, r.shape, packed.data());
}

Array load(const DataArgs& d) {
  std::optional<DType> dtype = d.dtype.empty() ? std::nullopt : parse_dtype(d.dtype);
  if (!d.input.empty()) {
    if (d.input.find("{rank}") != std::string::npos)
      throw CLI::ValidationError("--input " + d.input + ": {rank} names one file per rank, with --distributed only");
    Array a = read_input(d.input, dtype);
    if (dtype && a.dtype != *dtype)
      throw CLI::ValidationError("--dtype " + d.dtype + " conflicts with " + a.description + ": leave --dtype out for .npy files (bf16 excepted: numpy cannot name it)");
    return a;
  }
  if (dtype && !d.shape.empty()) {
    const std::vector<std::int64_t> shape = parse_shape(d.shape, "--shape");
    std::size_t n = 1;
    for (std::int64_t e : shape) n *= static_cast<std::size_t>(e);
    Array a = generate(*dtype, n, d.seed);
    a.shape = shape;
    return a;
  }
  if (!dtype || d.n.empty()) throw CLI::ValidationError("give --input FILE, or --dtype T with --n N or --shape A,B,...");
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

Options options_of(const std::string& backend, int block_size, int threads, const std::string& accuracy,
                   const std::vector<std::string>& settings) {
  Options o{.backend = backend, .threads = threads, .accuracy = accuracy_of(accuracy)};
  o.settings = settings_of(settings);
  if (block_size != 0) {
    std::fprintf(stderr, "xreduce: note: --block-size %d is now --set block_size=%d; read from its old name\n", block_size, block_size);
    // The old spelling's meaning: the setting for the backends that read it, ignored by the others.
    o.block_size = block_size;
  }
  return o;
}

std::optional<Accuracy> accuracy_of(const std::string& text) {
  if (text.empty()) return std::nullopt;
  return parse_accuracy(text);
}

}  // namespace xreduce::cli
