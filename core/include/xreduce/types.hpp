#pragma once
//! Vocabulary of the library: element types, operations, memory spaces and how they combine.

#include <array>
#include <initializer_list>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>

namespace xreduce {

//! Element types a request can carry.
enum class DType : std::uint8_t { f32, f64, i32, i64, u32, u64 };
//! Built-in reduction operations.
enum class Op : std::uint8_t { sum, prod, min, max, argmin, argmax };
//! Where the data lives. `automatic` asks the loaded modules (a GPU module knows its pointers).
enum class Memory : std::uint8_t { automatic, host, device };
//! How a floating-point sum is rounded. `standard`: within the tolerance of the semantics table
//! (README.md), fast. `exact`: the exact sum rounded once to nearest-even, the same bits on every
//! backend, thread count and GPU (xreduce/exact.hpp); other ops and integer sums are exact anyway.
enum class Accuracy : std::uint8_t { standard, exact };

inline constexpr std::array<DType, 6> all_dtypes{DType::f32, DType::f64, DType::i32,
                                                 DType::i64, DType::u32, DType::u64};
inline constexpr std::array<Op, 6> all_ops{Op::sum, Op::prod, Op::min, Op::max, Op::argmin, Op::argmax};

//! Bytes per element.
constexpr std::size_t size_of(DType t) {
  switch (t) {
    case DType::f32: case DType::i32: case DType::u32: return 4;
    default: return 8;
  }
}
constexpr bool is_floating(DType t) { return t == DType::f32 || t == DType::f64; }
constexpr bool is_signed_integer(DType t) { return t == DType::i32 || t == DType::i64; }
//! argmin and argmax also return the index of the extreme.
constexpr bool returns_index(Op op) { return op == Op::argmin || op == Op::argmax; }

//! The type of a result: sums and products of integers widen to 64 bits (exact modulo 2^64);
//! everything else keeps the input type.
constexpr DType result_dtype(DType in, Op op) {
  if (op == Op::sum || op == Op::prod) {
    if (is_signed_integer(in)) return DType::i64;
    if (in == DType::u32 || in == DType::u64) return DType::u64;
  }
  return in;
}

// Names are inline so that plugins, built against the headers alone, need nothing from the core.
inline constexpr std::array<std::string_view, 6> dtype_names{"f32", "f64", "i32", "i64", "u32", "u64"};
inline constexpr std::array<std::string_view, 6> op_names{"sum", "prod", "min", "max", "argmin", "argmax"};
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

//! What one pass can compute together (Request::ops): five of the ops, and the sum of squares
//! (for norms and variances; like a sum, of integers it wraps modulo 2^64).
enum class Stat : std::uint8_t { sum, min, max, argmin, argmax, sum_of_squares };
inline constexpr std::array<Stat, 6> all_stats{Stat::sum, Stat::min, Stat::max, Stat::argmin, Stat::argmax, Stat::sum_of_squares};
inline constexpr std::array<std::string_view, 6> stat_names{"sum", "min", "max", "argmin", "argmax", "sumsq"};
constexpr std::string_view to_string(Stat s) { return stat_names[static_cast<int>(s)]; }
constexpr std::optional<Stat> parse_stat(std::string_view s) {
  for (Stat t : all_stats)
    if (to_string(t) == s) return t;
  return std::nullopt;
}
constexpr bool returns_index(Stat s) { return s == Stat::argmin || s == Stat::argmax; }
//! The op a stat is alone (the sum of squares is a sum, of the squares).
constexpr Op op_of(Stat s) {
  constexpr Op ops[] = {Op::sum, Op::min, Op::max, Op::argmin, Op::argmax, Op::sum};
  return ops[static_cast<int>(s)];
}
constexpr DType result_dtype(DType in, Stat s) { return result_dtype(in, op_of(s)); }

//! A set of stats, in the order of all_stats whatever order they were named in.
class Stats {
 public:
  constexpr Stats() = default;
  constexpr Stats(std::initializer_list<Stat> stats) {
    for (Stat s : stats) add(s);
  }
  static constexpr Stats from_bits(std::uint32_t bits) {
    Stats s;
    s.bits_ = bits & ((1u << all_stats.size()) - 1);
    return s;
  }
  constexpr Stats& add(Stat s) {
    bits_ |= 1u << static_cast<unsigned>(s);
    return *this;
  }
  constexpr bool contains(Stat s) const { return (bits_ >> static_cast<unsigned>(s)) & 1u; }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr std::size_t size() const {
    std::size_t n = 0;  // no std::popcount: the CUDA sources that include this are C++17
    for (std::uint32_t b = bits_; b != 0; b &= b - 1) ++n;
    return n;
  }
  constexpr std::uint32_t bits() const { return bits_; }
  //! Any of min, max, argmin, argmax: the stats an empty array has no value for.
  constexpr bool needs_elements() const { return (bits_ & 0b11110u) != 0; }
  friend constexpr bool operator==(Stats a, Stats b) { return a.bits_ == b.bits_; }
  friend constexpr bool operator!=(Stats a, Stats b) { return a.bits_ != b.bits_; }

 private:
  std::uint32_t bits_ = 0;
};

//! The DType of a C++ element type; only the six supported types compile.
template <class T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return DType::f32;
  else if constexpr (std::is_same_v<T, double>) return DType::f64;
  else if constexpr (std::is_same_v<T, std::int32_t>) return DType::i32;
  else if constexpr (std::is_same_v<T, std::int64_t>) return DType::i64;
  else if constexpr (std::is_same_v<T, std::uint32_t>) return DType::u32;
  else if constexpr (std::is_same_v<T, std::uint64_t>) return DType::u64;
  else static_assert(sizeof(T) == 0, "xreduce: element type must be float, double or a 32/64-bit integer");
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
    case DType::u64: break;
  }
  return f(std::uint64_t{});
}

}  // namespace xreduce
