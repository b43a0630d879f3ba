#include "distributed.hpp"

#include "output.hpp"

#ifdef XREDUCE_CLI_HAVE_MPI

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>

#include "xreduce/timing.hpp"
#include "xreduce/mpi.hpp"
#include "xreduce/backend/features.hpp"
#include "xreduce/backend/registry.hpp"
#include "xreduce/validate.hpp"

namespace xreduce::cli {
namespace {

//! MPI for the length of one command, and this process's place in it.
struct MpiSession {
  MpiSession() {
    MPI_Init(nullptr, nullptr);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  }
  ~MpiSession() { MPI_Finalize(); }
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  int rank = 0, ranks = 1;
};

//! Runs `step` on every rank; if it failed anywhere, every rank throws the lowest failing rank's
//! error, so that none goes on to a collective the others never reach.
void on_every_rank(const MpiSession& mpi, const std::function<void()>& step) {
  int code = 0;
  std::string message;
  try {
    step();
  } catch (const Error& e) {
    code = static_cast<int>(e.code());
    message = e.what();
  } catch (const CLI::ParseError& e) {
    code = static_cast<int>(ErrorCode::invalid_argument);
    message = e.what();
  } catch (const std::exception& e) {
    code = static_cast<int>(ErrorCode::internal);
    message = e.what();
  }
  int failing = code != 0 ? mpi.rank : mpi.ranks;
  MPI_Allreduce(MPI_IN_PLACE, &failing, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (failing == mpi.ranks) return;
  char text[512] = {};
  if (mpi.rank == failing) std::snprintf(text, sizeof text, "%s", message.c_str());
  MPI_Bcast(&code, 1, MPI_INT, failing, MPI_COMM_WORLD);
  MPI_Bcast(text, sizeof text, MPI_CHAR, failing, MPI_COMM_WORLD);
  throw Error(static_cast<ErrorCode>(code), "rank " + std::to_string(failing) + ": " + text);
}

//! This rank's records of a whole of `records`: an even split, the first ranks one more.
std::pair<std::size_t, std::size_t> slice(std::size_t records, const MpiSession& mpi) {
  const std::size_t base = records / mpi.ranks, extra = records % mpi.ranks, r = mpi.rank;
  const std::size_t first = r * base + std::min(r, extra);
  return {first, first + base + (r < extra ? 1 : 0)};
}

struct Shard {
  Array array;               //!< this rank's elements
  std::size_t records = 0;   //!< in the whole array
  std::string description;   //!< of the whole array
  bool own_file = false;     //!< read from this rank's own file: the whole exists nowhere
};

Shard load_shard(const DataArgs& d, const MpiSession& mpi) {
  const std::optional<DType> dtype = d.dtype.empty() ? std::nullopt : parse_dtype(d.dtype);
  Shard s;
  if (!d.input.empty() && d.input.find("{rank}") != std::string::npos) {
    std::string path = d.input;
    path.replace(path.find("{rank}"), 6, std::to_string(mpi.rank));
    s.array = read_input(path, dtype);
    if (s.array.count % d.width != 0)
      throw CLI::ValidationError(path + ": " + std::to_string(s.array.count) + " elements are not a whole number of records of width " + std::to_string(d.width));
    s.records = s.array.count / d.width;  // this rank's: the whole's count follows (count_records)
    s.description = d.input + " over " + std::to_string(mpi.ranks) + " ranks, one file each";
    s.own_file = true;
    return s;
  }
  Array whole;
  std::size_t n = 0;
  if (!d.input.empty()) {
    whole = load(d);  // mapped: each rank touches its slice only
    n = whole.count;
  } else {
    if (!dtype || d.n.empty()) throw CLI::ValidationError("give --input FILE, or --dtype T with --n N");
    n = parse_count(d.n, "--n");
  }
  if (n % d.width != 0)
    throw CLI::ValidationError("--width " + std::to_string(d.width) + ": " + std::to_string(n) + " elements are not a whole number of records");
  s.records = n / d.width;
  const auto [first, last] = slice(s.records, mpi);
  if (!d.input.empty()) {
    s.array = whole;
    s.array.data = static_cast<const char*>(whole.data) + first * d.width * size_of(whole.dtype);
    s.array.count = (last - first) * d.width;
    s.description = whole.description;
  } else {
    s.array = generate(*dtype, (last - first) * d.width, d.seed, first * d.width);
    s.description = "random " + std::string(to_string(*dtype)) + ", seed " + std::to_string(d.seed);
  }
  s.description += ", over " + std::to_string(mpi.ranks) + " ranks";
  return s;
}

//! Loads this rank's shard on every rank (a failure anywhere stops every rank alike), then, for
//! shards from the ranks' own files, adds up the whole's records: a collective none may miss.
Shard load_shards(const DataArgs& d, const MpiSession& mpi) {
  Shard s;
  on_every_rank(mpi, [&] { s = load_shard(d, mpi); });
  if (s.own_file) {
    std::uint64_t mine = s.records;
    MPI_Allreduce(&mine, &s.records, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  }
  return s;
}

//! The whole array on rank 0 (an empty Array elsewhere): generated or mapped again, or gathered
//! from the ranks' own files.
Array whole_on_root(const DataArgs& d, const Shard& s, const MpiSession& mpi) {
  if (!s.own_file) {
    if (mpi.rank != 0) return {};
    if (!d.input.empty()) return load(d);
    return generate(*parse_dtype(d.dtype), s.records * d.width, d.seed);
  }
  const std::size_t item = size_of(s.array.dtype);
  std::uint64_t mine = s.array.count;
  std::vector<std::uint64_t> counts(mpi.ranks);
  MPI_Gather(&mine, 1, MPI_UINT64_T, counts.data(), 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  constexpr std::size_t kPiece = std::size_t{1} << 30;  // MPI counts are int: bytes in pieces
  if (mpi.rank != 0) {
    const auto* p = static_cast<const char*>(s.array.data);
    for (std::size_t at = 0; at < mine * item; at += kPiece)
      MPI_Send(p + at, static_cast<int>(std::min(kPiece, mine * item - at)), MPI_BYTE, 0, 0, MPI_COMM_WORLD);
    return {};
  }
  std::uint64_t total = 0;
  for (auto c : counts) total += c;
  auto buffer = std::shared_ptr<char[]>(new char[total * item + 8]);
  char* out = buffer.get();
  std::copy_n(static_cast<const char*>(s.array.data), mine * item, out);
  out += mine * item;
  for (int r = 1; r < mpi.ranks; ++r)
    for (std::size_t at = 0; at < counts[r] * item; at += kPiece) {
      const int bytes = static_cast<int>(std::min(kPiece, counts[r] * item - at));
      MPI_Recv(out, bytes, MPI_BYTE, r, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      out += bytes;
    }
  Array whole;
  whole.dtype = s.array.dtype;
  whole.count = total;
  whole.data = buffer.get();
  whole.owner = std::shared_ptr<const void>(buffer, buffer.get());
  return whole;
}

Request shard_request(const Shard& s, const DataArgs& d, Op op) {
  return request_for(s.array, d, op, Memory::host);  // read or made here: host memory
}

//! Rank 0 speaks; the others keep quiet, but leave with the same status.
int quietly(const MpiSession& mpi, const std::function<int()>& body) {
  try {
    return body();
  } catch (const Error& e) {
    if (mpi.rank == 0) std::cerr << "xreduce: error: " << e.what() << "\n";
    return kExitUsage;
  }
}

}  // namespace

int run_distributed(Context& ctx, const RunArgs& args, const DataArgs& d) {
  MpiSession mpi;
  return quietly(mpi, [&] {
    const auto [op, ops] = ops_of(args.op, args.ops);
    if (!ops.empty()) throw CLI::ValidationError("--ops reduces one process's array: not with --distributed");
    const Shard s = load_shards(d, mpi);
    const Request q = shard_request(s, d, op);
    Options o = options_of(args.backend, args.block_size, args.threads, args.accuracy, args.settings);
    if (!args.result_dtype.empty()) o.result_dtype = parse_dtype(args.result_dtype);
    std::vector<double> times;
    Result r;
    for (int k = 0; k < args.repeat; ++k) {
      MPI_Barrier(MPI_COMM_WORLD);  // every rank starts together: the time is the slowest's
      const auto t0 = std::chrono::steady_clock::now();
      r = mpi::allreduce(MPI_COMM_WORLD, q, o, ctx);
      times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    if (mpi.rank != 0) return kExitOk;
    Request whole = q;  // the whole array's shape, for the report: of its records, or elements
    if (whole.view.rank == 2) whole.view.shape[0] = static_cast<std::int64_t>(s.records);
    else whole.count = s.records;
    print_run(args, whole, s.description,
              r.backend + " on rank 0 (each rank chooses its own); combined by MPI over " + std::to_string(mpi.ranks) + " ranks",
              r, timing::median(times), o.accuracy.value_or(ctx.config().accuracy), mpi.ranks);
    return kExitOk;
  });
}

int validate_distributed(Context& ctx, const ValidateArgs& args, const DataArgs& d) {
  MpiSession mpi;
  return quietly(mpi, [&] {
    const auto [op, ops] = ops_of(args.op, args.ops);
    if (!ops.empty()) throw CLI::ValidationError("--ops reduces one process's array: not with --distributed");
    const Shard s = load_shards(d, mpi);
    const Request q = shard_request(s, d, op);
    Array whole;
    Request whole_q;
    ValidationReport report;
    on_every_rank(mpi, [&] {
      whole = whole_on_root(d, s, mpi);
      if (mpi.rank != 0) return;
      whole_q = request_for(whole, d, op, Memory::host);
      report.reference = exact_reference(whole_q);
    });
    // Rank 0's list of backends, or the ones asked for: every rank tries each in turn.
    Options o = options_of({}, args.block_size, args.threads, args.accuracy);
    const Accuracy accuracy = o.accuracy.value_or(ctx.config().accuracy);
    std::string names;
    const Features features = features_of(canonical(q), accuracy);
    if (mpi.rank == 0) {
      for (const std::string& n : args.backends) names += n + "\n";
      if (args.backends.empty())  // those that take the request, as validate chooses on one process
        for (const auto& e : ctx.registry().entries())
          if (e.reducer->capabilities().support(features) != Support::none) names += std::string(e.reducer->name()) + "\n";
    }
    int length = static_cast<int>(names.size());
    MPI_Bcast(&length, 1, MPI_INT, 0, MPI_COMM_WORLD);
    names.resize(length);
    MPI_Bcast(names.data(), length, MPI_CHAR, 0, MPI_COMM_WORLD);
    for (std::size_t at = 0; at < names.size();) {
      const std::size_t end = names.find('\n', at);
      ValidationRow row;
      row.backend = names.substr(at, end - at);
      at = end + 1;
      o.backend = row.backend;
      const Reducer* reducer = ctx.registry().find(row.backend);
      row.exact = reducer && reducer->capabilities().support(features) == Support::exact;
      try {
        MPI_Barrier(MPI_COMM_WORLD);
        const auto t0 = std::chrono::steady_clock::now();
        row.result = mpi::allreduce(MPI_COMM_WORLD, q, o, ctx);
        row.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        row.ran = true;
        if (mpi.rank == 0) row.agrees = agrees(whole_q, report.reference, *row.result, &row.error, accuracy);
      } catch (const Error& e) {
        row.failure = e.what();
        row.failure_code = e.code();
      }
      report.rows.push_back(std::move(row));
    }
    int status = kExitOk;
    if (mpi.rank == 0) status = print_validation(ctx, args, whole_q, s.description, report, accuracy, mpi.ranks);
    MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return status;
  });
}

}  // namespace xreduce::cli

#else  // built without MPI

namespace xreduce::cli {

namespace {
[[noreturn]] void no_mpi() {
  throw Error(ErrorCode::unavailable, "--distributed: this xreduce was built without MPI (install libopenmpi-dev and rebuild)");
}
}  // namespace

int run_distributed(Context&, const RunArgs&, const DataArgs&) { no_mpi(); }
int validate_distributed(Context&, const ValidateArgs&, const DataArgs&) { no_mpi(); }

}  // namespace xreduce::cli

#endif
