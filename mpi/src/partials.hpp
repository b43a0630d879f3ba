#pragma once
// What the ranks send each other: a header and one partial per column, in a buffer of plain
// bytes, and the one function that combines two such buffers (the MPI operator's body). No MPI
// here: the format and the combine are tested on their own too.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "xreduce/error.hpp"
#include "xreduce/context.hpp"
#include "xreduce/request.hpp"

namespace xreduce::mpi::detail {

//! A shard as the wire carries it: its columns (the results: 1 for a flat array, the width of
//! records, the kept extents' product of a view) and its records (the elements each result
//! reduces on this rank), or why it cannot be combined across ranks.
struct ShardShape {
  std::size_t columns = 1;
  std::uint64_t records = 0;
  //! The whole's Result::shape: a view's kept extents (with keepdims, the reduced ones as 1).
  std::vector<std::int64_t> result_shape;
  std::string refused;  //!< empty if it can; else why, with `code`
  ErrorCode code = ErrorCode::unsupported;
};
//! The shape of `shard`: a flat array, or a view (records among them) whose reduced axes include
//! axis 0, the axis along which the ranks' shards follow each other. Then every result reduces
//! the same elements on every rank, and a rank's argmin/argmax index (along the reduced axes,
//! flattened in C order: axis 0 is their outermost) moves past the ranks before it by their
//! records. A view that keeps axis 0, and segments, are not combined across ranks.
ShardShape shape_of(const Request& shard);

//! The options a rank reduces its shard with: the caller's, and for a 16-bit float sum, product
//! or sum of squares asked in no other type, partials in f64 (Options::result_dtype), so that the
//! whole is rounded to f16 or bf16 once, after the combine, and not on every rank as well. Shards
//! in device memory (`where`) get this for sums only, which the GPU then sums exactly (its
//! kernels hand on exact partials, not wide accumulators); their products and sums of squares
//! are rounded to the type on each rank.
Options shard_options(const Request& shard, const Options& options, const Context& context);

//! How a column's partials combine.
enum class Kind : std::uint8_t {
  integer_sum,   //!< uint64, added modulo 2^64 (signed sums are the same bits)
  integer_prod,  //!< uint64, multiplied modulo 2^64
  float_sum,     //!< double, added (Accuracy::standard)
  exact_sum,     //!< ExactSum, added exactly (Accuracy::exact)
  float_prod,    //!< double, multiplied
  extreme,       //!< Extreme: min, max, argmin, argmax (and nanargmin, nanargmax)
  statistic,     //!< the op table's accumulator of a statistic (ops.hpp), combined by the table
  exact_moments, //!< two ExactSum, of x and of x squared: an exact mean, var or std
};
Kind kind_of(DType dtype, Op op, Accuracy accuracy);
//! Bytes of one column's partial of `kind`.
std::size_t slot_bytes(Kind kind);

//! A min/max/argmin/argmax partial. `bits` holds the value as a double (floats), an int64 or a
//! uint64 (integers), by the header's dtype.
struct Extreme {
  //! Within the records the partial covers (a rank's shard, then ranks combined in order).
  std::uint64_t index = 0;
  std::uint64_t bits = 0;
  std::uint8_t has = 0;     //!< 0: no element (an empty shard, or a failed rank): the identity
  std::uint8_t nan = 0;
  std::uint8_t pad[6] = {};
};

struct Header {
  static constexpr std::uint32_t kMagic = 0x33647278;  // "xrd3": the statistics kinds added to "xrd2"
  std::uint32_t magic = kMagic;
  std::uint8_t kind = 0, op = 0, dtype = 0, with_message = 0;
  std::uint64_t columns = 0;
  std::uint64_t count = 0;       //!< records, summed over the ranks
  std::int32_t error_code = 0;   //!< 0, or the lowest failing rank's ErrorCode
  std::int32_t error_rank = -1;  //!< that rank; -1 with an error: the ranks' calls disagree
};
static_assert(sizeof(Header) == 32, "the wire header is 32 bytes");

//! The reason of the lowest failing rank, carried where no second message can fetch it (reduce).
struct Message {
  char text[224] = {};
};

//! A header, the failing rank's reason if asked for, and `columns` partials of one kind: what
//! crosses the wire. A few dozen bytes for all but exact sums (576 bytes a column): the combine's
//! latency is MPI's for that many bytes.
class Partials {
 public:
  //! Identity partials (sum 0, prod 1, no extreme) for `width` columns of (dtype, op).
  Partials(DType dtype, Op op, std::size_t width, Accuracy accuracy, bool with_message);

  Header& header() { return *reinterpret_cast<Header*>(words_.data()); }
  const Header& header() const { return *reinterpret_cast<const Header*>(words_.data()); }
  void* data() { return words_.data(); }
  std::size_t bytes() const { return words_.size() * sizeof(std::uint64_t); }

  //! This rank's partials from its result (indices within its shard). A mean, var or std
  //! (Kind::statistic) takes its shard's mean as `result` and its variance (correction 0) as
  //! `spread`, each in f64 where the elements are floats (the var is not needed for a mean).
  void set_local(const Result& result, const Result* spread = nullptr);
  //! A var or std of one column (Kind::statistic) from the shard's moments (Result::moments).
  void set_moments(const Moments& moments);
  //! This rank failed: its partials stay the identity, the header carries why.
  void set_error(int rank, ErrorCode code, const std::string& message);
  //! The reason the buffer carries (with_message), else empty.
  std::string message() const;

  //! The whole array's result, after the combine, in the type `asked` (Options::result_dtype)
  //! or the op's own; var and std divide by n - `correction`. Throws the error the header
  //! carries (with `reason`, if the caller has it, else the buffer's own), and
  //! Error(empty_input) for min, max, argmin, argmax (and their nan forms) of an empty whole.
  //! `shape`: the results' shape (ShardShape::result_shape; empty for one result).
  Result result(const std::string& reason = {}, std::optional<DType> asked = std::nullopt, double correction = 0,
                const std::vector<std::int64_t>& shape = {}) const;

  //! Combines `in` into `inout` (two buffers of `bytes`): the MPI operator, `in` holding lower
  //! ranks than `inout` (declared non-commutative: MPI keeps rank order, which gives argmin and
  //! argmax their offsets). Associative exactly but for float sums' and products' rounding and
  //! the statistics' float accumulators.
  static void combine(const void* in, void* inout, std::size_t bytes);

 private:
  std::vector<std::uint64_t> words_;  // 8-byte aligned: the header, then the slots
};

//! One rank's part of a combine, before the collective.
struct LocalPartials {
  Partials partials;
  std::string backend;
  std::string reason;  //!< why this rank failed, if it did
  std::vector<std::int64_t> result_shape = {};  //!< ShardShape::result_shape, for Partials::result
};

//! Rank `rank`'s partials: its shard reduced by its own dispatcher, or the identity and the reason
//! when it failed (the collective still runs: no rank is left waiting). The header's count is the
//! shard's records. Throws (before any collective, on every rank alike) only for an op or
//! accuracy the wire has no partial for. A shard's Request::out is not written: its results
//! come back to the combine, whose are the whole's. What xreduce::mpi and the Python package's mpi4py
//! module (xreduce.mpi) both send.
LocalPartials local_partials(int rank, const Request& shard, const Options& options, Context& context, bool with_message);

}  // namespace xreduce::mpi::detail
