#pragma once
//! Vocabulary of the library: element types, operations, memory spaces and how they combine.

#include <array>
#include <initializer_list>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>

#include "xreduce/float16.hpp"

namespace xreduce {

//! Element types a request can carry: floats (f16 is IEEE binary16, bf16 bfloat16; both are
//! xreduce/float16.hpp's), signed and unsigned integers, and `boolean` (one byte, 0 or 1, as numpy,
//! torch and C++ store a bool). New types take new numbers: the values cross the plugin ABI.
enum class DType : std::uint8_t { f32, f64, i32, i64, u32, u64, f16, bf16, i8, u8, i16, u16, boolean };
//! Built-in reduction operations. Their semantics: xreduce/backend/ops.hpp, docs/semantics.md.
//!
//! The core ops: `sumsq` is the sum of the squares (of integers, like a sum, modulo 2^64).
//! The statistics (numpy's and the Array API's names): `mean`; `var` and `std`, divided by
//! n - Request::correction; the vector norms `norm1` (sum of |x|), `norm2` (without overflow or
//! underflow) and `norminf` (max of |x|); `logsumexp`; `count_nonzero`, `any`, `all`. The
//! NaN-skipping ops (numpy's nan*): each as its namesake over the elements that are not NaN.
enum class Op : std::uint8_t {
  sum, prod, min, max, argmin, argmax, sumsq,
  mean, var, std, norm1, norm2, norminf, logsumexp, count_nonzero, any, all,
  nansum, nanprod, nanmin, nanmax, nanargmin, nanargmax, nanmean, nanvar, nanstd
};
//! Where the data lives. `automatic` asks the loaded modules (a GPU module knows its pointers).
enum class Memory : std::uint8_t { automatic, host, device };
//! How a floating-point sum is rounded. `standard`: within the tolerance of the semantics table
//! (docs/semantics.md), fast. `exact`: the exact sum rounded once to nearest-even, the same bits on every
//! backend, thread count and GPU (xreduce/exact.hpp); other ops and integer sums are exact anyway.
enum class Accuracy : std::uint8_t { standard, exact };

inline constexpr std::array<DType, 13> all_dtypes{DType::f32, DType::f64, DType::i32, DType::i64, DType::u32,
                                                  DType::u64,  DType::f16, DType::bf16, DType::i8,  DType::u8,
                                                  DType::i16,  DType::u16, DType::boolean};
//! The 32- and 64-bit types: the ones the ABI 2 plugin table and the CUDA module know.
inline constexpr std::array<DType, 6> dtypes_32_64{DType::f32, DType::f64, DType::i32, DType::i64, DType::u32, DType::u64};
inline constexpr std::array<Op, 26> all_ops{
    Op::sum,    Op::prod,    Op::min,     Op::max,     Op::argmin,    Op::argmax,       Op::sumsq,
    Op::mean,   Op::var,     Op::std,     Op::norm1,   Op::norm2,     Op::norminf,      Op::logsumexp,
    Op::count_nonzero, Op::any, Op::all,  Op::nansum,  Op::nanprod,   Op::nanmin,       Op::nanmax,
    Op::nanargmin, Op::nanargmax, Op::nanmean, Op::nanvar, Op::nanstd};
//! The core ops: those every backend's kernels are written for; the statistics after them take
//! their rules from the same table (xreduce/backend/ops.hpp) and run where a backend declares them.
inline constexpr std::array<Op, 7> core_ops{Op::sum, Op::prod, Op::min, Op::max, Op::argmin, Op::argmax, Op::sumsq};
constexpr bool is_core_op(Op op) { return static_cast<unsigned>(op) <= static_cast<unsigned>(Op::sumsq); }

//! Bytes per element.
constexpr std::size_t size_of(DType t) {
  switch (t) {
    case DType::f32: case DType::i32: case DType::u32: return 4;
    case DType::f16: case DType::bf16: case DType::i16: case DType::u16: return 2;
    case DType::i8: case DType::u8: case DType::boolean: return 1;
    default: return 8;
  }
}
constexpr bool is_floating(DType t) {
  return t == DType::f32 || t == DType::f64 || t == DType::f16 || t == DType::bf16;
}
//! f16 and bf16: sums and products accumulate in float or wider and round to the result type once.
constexpr bool is_float16(DType t) { return t == DType::f16 || t == DType::bf16; }
constexpr bool is_signed_integer(DType t) {
  return t == DType::i8 || t == DType::i16 || t == DType::i32 || t == DType::i64;
}
//! argmin and argmax (and their NaN-skipping forms) also return the index of the extreme.
constexpr bool returns_index(Op op) {
  return op == Op::argmin || op == Op::argmax || op == Op::nanargmin || op == Op::nanargmax;
}

//! Sums, products and sums of squares (and nansum, nanprod): the ops whose integer results widen.
constexpr bool accumulates(Op op) {
  return op == Op::sum || op == Op::prod || op == Op::sumsq || op == Op::nansum || op == Op::nanprod;
}
//! The statistics whose result is a float whatever the element type: mean, var, std, the norms,
//! logsumexp and their NaN-skipping forms (of integers and bools, an f64, as numpy's).
constexpr bool returns_float(Op op) {
  switch (op) {
    case Op::mean: case Op::var: case Op::std: case Op::norm1: case Op::norm2: case Op::norminf:
    case Op::logsumexp: case Op::nanmean: case Op::nanvar: case Op::nanstd: return true;
    default: return false;
  }
}
//! The ops that skip NaN elements (numpy's nan*).
constexpr bool skips_nan(Op op) { return static_cast<unsigned>(op) >= static_cast<unsigned>(Op::nansum); }
//! The ops whose result depends on Request::correction: var and std, and nanvar and nanstd.
constexpr bool uses_correction(Op op) {
  return op == Op::var || op == Op::std || op == Op::nanvar || op == Op::nanstd;
}
//! The op that a NaN-skipping op is over the elements that are not NaN (nanmean: mean); others
//! are their own.
constexpr Op without_nan(Op op) {
  switch (op) {
    case Op::nansum: return Op::sum;
    case Op::nanprod: return Op::prod;
    case Op::nanmin: return Op::min;
    case Op::nanmax: return Op::max;
    case Op::nanargmin: return Op::argmin;
    case Op::nanargmax: return Op::argmax;
    case Op::nanmean: return Op::mean;
    case Op::nanvar: return Op::var;
    case Op::nanstd: return Op::std;
    default: return op;
  }
}

//! The type of a result: sums, products and sums of squares of integers and bools widen to 64 bits
//! (exact modulo 2^64; of bools, a count); the float statistics (returns_float) of integers and
//! bools are f64; count_nonzero is an i64, any and all bools; everything else keeps the input type
//! (an f16 sum or mean is an f16, rounded once from its wider accumulator).
constexpr DType result_dtype(DType in, Op op) {
  if (accumulates(op) && !is_floating(in)) return is_signed_integer(in) ? DType::i64 : DType::u64;
  if (returns_float(op) && !is_floating(in)) return DType::f64;
  if (op == Op::count_nonzero) return DType::i64;
  if (op == Op::any || op == Op::all) return DType::boolean;
  return in;
}
//! Whether a result of type `asked` may be asked for (Options::result_dtype) of `op` over `in`:
//! its own result type always; for the sums, products, sums of squares and float statistics of
//! floats also f32 or f64 as wide as the element type or wider (f16 and bf16 to f32 or f64, f32
//! to f64).
constexpr bool result_dtype_allowed(DType in, Op op, DType asked) {
  if (asked == result_dtype(in, op)) return true;
  return is_floating(in) && (accumulates(op) || returns_float(op)) &&
         (asked == DType::f64 || (asked == DType::f32 && is_float16(in)));
}
//! The type of a result whose type was asked for, or not (Options::result_dtype).
constexpr DType result_dtype(DType in, Op op, std::optional<DType> asked) { return asked ? *asked : result_dtype(in, op); }

// Names are inline so that plugins, built against the headers alone, need nothing from the core.
inline constexpr std::array<std::string_view, 13> dtype_names{"f32", "f64", "i32",  "i64", "u32", "u64", "f16",
                                                               "bf16", "i8", "u8", "i16", "u16", "bool"};
inline constexpr std::array<std::string_view, 26> op_names{
    "sum",    "prod",   "min",    "max",     "argmin",   "argmax",    "sumsq",   "mean",     "var",
    "std",    "norm1",  "norm2",  "norminf", "logsumexp", "count_nonzero", "any", "all",   "nansum",
    "nanprod", "nanmin", "nanmax", "nanargmin", "nanargmax", "nanmean", "nanvar", "nanstd"};
inline constexpr std::array<std::string_view, 3> memory_names{"auto", "host", "device"};
inline constexpr std::array<std::string_view, 2> accuracy_names{"standard", "exact"};

constexpr std::string_view to_string(DType t) { return dtype_names[static_cast<int>(t)]; }
constexpr std::string_view to_string(Op op) { return op_names[static_cast<int>(op)]; }
constexpr std::string_view to_string(Memory m) { return memory_names[static_cast<int>(m)]; }
constexpr std::string_view to_string(Accuracy a) { return accuracy_names[static_cast<int>(a)]; }

constexpr std::optional<DType> parse_dtype(std::string_view s) {
  for (DType t : all_dtypes)
    if (to_string(t) == s) return t;
  return std::nullopt;
}
constexpr std::optional<Op> parse_op(std::string_view s) {
  for (Op op : all_ops)
    if (to_string(op) == s) return op;
  return std::nullopt;
}
constexpr std::optional<Memory> parse_memory(std::string_view s) {
  for (Memory m : {Memory::automatic, Memory::host, Memory::device})
    if (to_string(m) == s) return m;
  return std::nullopt;
}

constexpr std::optional<Accuracy> parse_accuracy(std::string_view s) {
  for (Accuracy a : {Accuracy::standard, Accuracy::exact})
    if (to_string(a) == s) return a;
  return std::nullopt;
}
//! Whether `accuracy` changes how (dtype, op) is computed: exact sums of floats.
constexpr bool exact_sum(DType t, Op op, Accuracy accuracy) {
  return accuracy == Accuracy::exact && op == Op::sum && is_floating(t);
}
//! The statistics that `accuracy = exact` makes the exact value rounded once: mean (from the
//! exact sum) and var (from the exact sums of x and of x squared), of floats; std is the square
//! root of that variance, rounded once more.
constexpr bool exact_statistic(Op op) { return op == Op::mean || op == Op::var || op == Op::std; }

//! A set of ops: those of a request that computes several in one read of the data (Request::ops),
//! kept in the order of all_ops whatever order they were named in.
class OpSet {
 public:
  constexpr OpSet() = default;
  constexpr OpSet(std::initializer_list<Op> ops) {
    for (Op op : ops) add(op);
  }
  static constexpr OpSet from_bits(std::uint32_t bits) {
    OpSet s;
    s.bits_ = bits & ((1u << all_ops.size()) - 1);
    return s;
  }
  //! Every op.
  static constexpr OpSet all() { return from_bits(~0u); }
  constexpr OpSet& add(Op op) {
    bits_ |= 1u << static_cast<unsigned>(op);
    return *this;
  }
  constexpr bool contains(Op op) const { return (bits_ >> static_cast<unsigned>(op)) & 1u; }
  //! Whether every op of `other` is here.
  constexpr bool contains(OpSet other) const { return (other.bits_ & ~bits_) == 0; }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr std::size_t size() const {
    std::size_t n = 0;  // no std::popcount: the CUDA sources that include this are C++17
    for (std::uint32_t b = bits_; b != 0; b &= b - 1) ++n;
    return n;
  }
  //! The first op of the set (in the order of all_ops); sum if empty.
  constexpr Op first() const {
    for (Op op : all_ops)
      if (contains(op)) return op;
    return Op::sum;
  }
  constexpr std::uint32_t bits() const { return bits_; }
  //! Any of min, max, argmin, argmax and their NaN-skipping forms: the ops an empty array has no
  //! value for (numpy raises there too).
  constexpr bool needs_elements() const {
    return contains(Op::min) || contains(Op::max) || contains(Op::argmin) || contains(Op::argmax) ||
           contains(Op::nanmin) || contains(Op::nanmax) || contains(Op::nanargmin) || contains(Op::nanargmax);
  }
  friend constexpr bool operator==(OpSet a, OpSet b) { return a.bits_ == b.bits_; }
  friend constexpr bool operator!=(OpSet a, OpSet b) { return a.bits_ != b.bits_; }

 private:
  std::uint32_t bits_ = 0;
};

//! The DType of a C++ element type; only the supported types compile.
template <class T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return DType::f32;
  else if constexpr (std::is_same_v<T, double>) return DType::f64;
  else if constexpr (std::is_same_v<T, std::int32_t>) return DType::i32;
  else if constexpr (std::is_same_v<T, std::int64_t>) return DType::i64;
  else if constexpr (std::is_same_v<T, std::uint32_t>) return DType::u32;
  else if constexpr (std::is_same_v<T, std::uint64_t>) return DType::u64;
  else if constexpr (std::is_same_v<T, f16>) return DType::f16;
  else if constexpr (std::is_same_v<T, bf16>) return DType::bf16;
  else if constexpr (std::is_same_v<T, std::int8_t>) return DType::i8;
  else if constexpr (std::is_same_v<T, std::uint8_t>) return DType::u8;
  else if constexpr (std::is_same_v<T, std::int16_t>) return DType::i16;
  else if constexpr (std::is_same_v<T, std::uint16_t>) return DType::u16;
  else if constexpr (std::is_same_v<T, bool>) return DType::boolean;
  else static_assert(sizeof(T) == 0, "xreduce: element type must be a float (f16, bf16, float, double), an 8- to 64-bit integer or bool");
}

//! Calls `f(T{})` with the C++ type that `t` names.
template <class F>
decltype(auto) visit_dtype(DType t, F&& f) {
  switch (t) {
    case DType::f32: return f(float{});
    case DType::f64: return f(double{});
    case DType::i32: return f(std::int32_t{});
    case DType::i64: return f(std::int64_t{});
    case DType::u32: return f(std::uint32_t{});
    case DType::f16: return f(f16{});
    case DType::bf16: return f(bf16{});
    case DType::i8: return f(std::int8_t{});
    case DType::u8: return f(std::uint8_t{});
    case DType::i16: return f(std::int16_t{});
    case DType::u16: return f(std::uint16_t{});
    case DType::boolean: return f(bool{});
    case DType::u64: break;
  }
  return f(std::uint64_t{});
}

//! The running moments of a variance: the count `n` of the elements, their `sum`, and `m2`, the
//! sum of their squared deviations from their mean. The accumulator of mean, var and std; a
//! Result carries it where parts of one variance are combined (Result::moments).
struct Moments {
  double n, sum, m2;
};

}  // namespace xreduce
