#include "partials.hpp"

#include <bit>
#include <cstdio>
#include <cmath>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <type_traits>

#include "xreduce/backend/ops.hpp"
#include "xreduce/backend/registry.hpp"
#include "xreduce/exact.hpp"

namespace xreduce::mpi::detail {
namespace {

template <class T>
T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class T>
void store(std::byte* p, const T& v) {
  std::memcpy(p, &v, sizeof v);
}

std::size_t slots_at(const Header& h) { return sizeof(Header) + (h.with_message ? sizeof(Message) : 0); }
std::byte* slot(void* buffer, std::size_t c) {
  const auto& h = *static_cast<const Header*>(buffer);
  return static_cast<std::byte*>(buffer) + slots_at(h) + c * slot_bytes(static_cast<Kind>(h.kind));
}
const std::byte* slot(const void* buffer, std::size_t c) { return slot(const_cast<void*>(buffer), c); }
Message& message_of(void* buffer) { return *reinterpret_cast<Message*>(static_cast<std::byte*>(buffer) + sizeof(Header)); }

//! An extreme's value, as the header's dtype (floats travel as doubles).
template <class T>
T value_of(const Extreme& e) {
  if constexpr (is_float_v<T>) return static_cast<T>(std::bit_cast<double>(e.bits));
  else return static_cast<T>(e.bits);
}

template <class T>
Extreme extreme_of(T value, std::uint64_t index) {
  Extreme x;
  x.has = 1;
  x.index = index;
  if constexpr (is_float_v<T>) {
    x.nan = std::isnan(static_cast<double>(value)) ? 1 : 0;
    x.bits = std::bit_cast<std::uint64_t>(static_cast<double>(value));
  } else {
    x.bits = static_cast<std::uint64_t>(value);  // signed: the two's complement bits
  }
  return x;
}

//! Which of two extremes wins, by the table's argmin/argmax rule (xreduce/backend/ops.hpp),
//! which is min's and max's too: the first NaN, else the extreme, else the lower index. An
//! extreme without an element (`has` 0) is the identity; so is a NaN where NaN is skipped
//! (nanargmin, nanargmax: a shard of NaN alone).
Extreme better(const Extreme& a, const Extreme& b, DType dtype, bool is_max, bool skip_nan) {
  if (!b.has || (skip_nan && b.nan && a.has)) return a;
  if (!a.has || (skip_nan && a.nan)) return b;
  return visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    const ops::ArgPair<T> x{value_of<T>(a), a.index}, y{value_of<T>(b), b.index};
    const ops::ArgPair<T> c = is_max ? ops::ArgMax<T>{}(x, y) : ops::ArgMin<T>{}(x, y);
    return extreme_of(c.value, c.index);
  });
}

//! The slot of a statistic: the accumulator of its policy in the op table, whatever its type
//! (the largest, Moments and ScaledSquares, are three doubles).
constexpr std::size_t kStatisticBytes = 24;

//! Calls fn with the op table's policy of (dtype, op), a statistic.
template <class Fn>
decltype(auto) visit_policy(DType dtype, Op op, Fn&& fn) {
  return visit_dtype(dtype, [&](auto tag) -> decltype(auto) { return ops::visit_statistic<decltype(tag)>(op, fn); });
}

//! A rank's accumulator of statistic F, from its column's results: the table's accumulator of
//! that many elements. `value` is the statistic of the shard (a mean for the moments), `spread`
//! its variance (correction 0) for var and std, `count` its elements.
template <class F>
typename F::acc_t accumulator_of(const Scalar& value, const Scalar* spread, std::uint64_t count) {
  using Acc = typename F::acc_t;
  const double v = value.to_double();
  if (count == 0) return F::identity();
  if constexpr (std::is_same_v<Acc, ops::Moments>) {
    const double n = static_cast<double>(count);
    return {n, v * n, spread ? spread->to_double() * n : 0.0};
  } else if constexpr (std::is_same_v<Acc, ops::ScaledSquares>) {
    return ops::Norm2Op<double>::lift(v);  // one element whose square is the shard's sum of squares
  } else if constexpr (std::is_same_v<Acc, ops::LogSumExp>) {
    return {v, 1.0};  // exp(v - v): the shard's sum of exponentials scaled by its own maximum
  } else if constexpr (std::is_same_v<Acc, ops::SeenExtreme<typename F::In>>) {
    // The table's lift: a shard of NaN alone is the identity, not its NaN, which the combine's
    // min or max would carry into the whole's value though other ranks saw elements.
    return F::lift(value.get<typename F::In>());
  } else if constexpr (std::is_arithmetic_v<Acc>) {  // norm1, norminf, counts, any, all, nansum, nanprod
    return visit_dtype(value.dtype(), [&](auto tag) { return static_cast<Acc>(value.get<decltype(tag)>()); });
  } else {
    return F::identity();  // not reached: nanargmin and nanargmax cross as extremes (Kind::extreme)
  }
}

}  // namespace

ShardShape shape_of(const Request& shard) {
  if (shard.view.rank == 0 && !shard.segments.segmented()) return {1, shard.count, {}, {}};
  ShardShape s;
  if (shard.segments.segmented()) {
    s.refused = "xreduce::mpi combines flat arrays and views across ranks, not segments";
    return s;
  }
  const View& v = shard.view;
  if (!shard.axes.within(v.rank)) {
    s.refused = "an axis beyond the view's " + std::to_string(v.rank) + " dimensions";
    s.code = ErrorCode::invalid_argument;
    return s;
  }
  std::uint64_t columns = 1, records = 1;
  for (std::size_t k = 0; k < v.rank; ++k) {
    if (v.shape[k] < 0) {
      s.refused = "a view of negative extent " + std::to_string(v.shape[k]);
      s.code = ErrorCode::invalid_argument;
      return s;
    }
    const bool reduced = shard.axes.empty() || shard.axes.contains(k);
    (reduced ? records : columns) *= static_cast<std::uint64_t>(v.shape[k]);
    if (!reduced || shard.keepdims) s.result_shape.push_back(reduced ? 1 : v.shape[k]);
  }
  if (!shard.axes.empty() && !shard.axes.contains(0)) {
    s.refused = "xreduce::mpi combines views whose axis 0, along which the ranks' shards follow each other, is reduced; "
                "this one keeps it (each rank's results are its own: xreduce::reduce gives them)";
    return s;
  }
  s.columns = static_cast<std::size_t>(columns);
  s.records = records;
  return s;
}

Options shard_options(const Request& shard, const Options& options, const Context& context) {
  Options o = options;
  if (!is_float16(shard.dtype) || !accumulates(shard.op) || !shard.ops.empty() || o.result_dtype) return o;
  // Only a 16-bit float shard's pointer is looked up (where it lives): other calls pass as they
  // came, without the lookup.
  const Memory where = shard.memory != Memory::automatic ? shard.memory : context.registry().where(shard.data).memory;
  if (where != Memory::device || shard.op == Op::sum) o.result_dtype = DType::f64;
  return o;
}

Kind kind_of(DType dtype, Op op, Accuracy accuracy) {
  if (op == Op::nanmean || op == Op::nanvar || op == Op::nanstd)
    throw Error(ErrorCode::unsupported, "the " + std::string(to_string(op)) +
                                            " is not combined across ranks (a rank's count of the elements that are not NaN "
                                            "does not come back from its reduce): the distributed calls take every other op");
  if (exact_statistic(op)) return is_floating(dtype) && accuracy == Accuracy::exact ? Kind::exact_moments : Kind::statistic;
  if (op == Op::nanargmin || op == Op::nanargmax) return Kind::extreme;
  if (!is_core_op(op)) return Kind::statistic;
  if (op == Op::sum && is_floating(dtype)) return accuracy == Accuracy::exact ? Kind::exact_sum : Kind::float_sum;
  if (op == Op::sumsq) return is_floating(dtype) ? Kind::float_sum : Kind::integer_sum;  // no exact form
  if (op == Op::sum) return Kind::integer_sum;
  if (op == Op::prod) return is_floating(dtype) ? Kind::float_prod : Kind::integer_prod;
  return Kind::extreme;
}

std::size_t slot_bytes(Kind kind) {
  switch (kind) {
    case Kind::exact_sum: return sizeof(ExactSum);
    case Kind::exact_moments: return 2 * sizeof(ExactSum);
    case Kind::extreme: return sizeof(Extreme);
    case Kind::statistic: return kStatisticBytes;
    default: return 8;
  }
}

Partials::Partials(DType dtype, Op op, std::size_t width, Accuracy accuracy, bool with_message) {
  const Kind kind = kind_of(dtype, op, accuracy);
  const std::size_t bytes = sizeof(Header) + (with_message ? sizeof(Message) : 0) + width * slot_bytes(kind);
  words_.assign((bytes + 7) / 8, 0);
  Header& h = header();
  h = Header{};
  h.kind = static_cast<std::uint8_t>(kind);
  h.op = static_cast<std::uint8_t>(op);
  h.dtype = static_cast<std::uint8_t>(dtype);
  h.with_message = with_message ? 1 : 0;
  h.columns = width;
  for (std::size_t c = 0; c < width; ++c) {
    if (kind == Kind::integer_prod) store(slot(data(), c), std::uint64_t{1});
    if (kind == Kind::float_prod) store(slot(data(), c), 1.0);
    if (kind == Kind::statistic)
      visit_policy(dtype, op, [&](auto f) {
        using F = decltype(f);
        static_assert(sizeof(typename F::acc_t) <= kStatisticBytes, "a statistic's accumulator fits its slot");
        store(slot(data(), c), F::identity());
      });
  }
}

void Partials::set_moments(const Moments& moments) {
  const Header& h = header();
  visit_policy(static_cast<DType>(h.dtype), static_cast<Op>(h.op), [&](auto f) {
    if constexpr (std::is_same_v<typename decltype(f)::acc_t, Moments>) store(slot(data(), 0), moments);
  });
}

void Partials::set_local(const Result& result, const Result* spread) {
  const Header& h = header();
  const auto dtype = static_cast<DType>(h.dtype);
  const auto op = static_cast<Op>(h.op);
  for (std::size_t c = 0; c < h.columns; ++c) {
    const Scalar& v = result.values.empty() ? result.value : result.values.at(c);
    std::byte* s = slot(data(), c);
    switch (static_cast<Kind>(h.kind)) {
      case Kind::statistic: {
        const Scalar* var = spread ? (spread->values.empty() ? &spread->value : &spread->values.at(c)) : nullptr;
        visit_policy(dtype, op, [&](auto f) { store(s, accumulator_of<decltype(f)>(v, var, h.count)); });
        break;
      }
      case Kind::exact_moments: {
        if (h.columns > 1)
          throw Error(ErrorCode::unsupported, "exact statistics cross ranks for flat arrays (one result), not per column");
        // Result::exact of an exact mean: the sum's partial; of var and std: the sum's, then the squares'.
        for (std::size_t k = 0; k < 2; ++k) {
          ExactSum e = k < result.exact.size() ? result.exact[k] : ExactSum{};
          e.normalize();
          store(s + k * sizeof(ExactSum), e);
        }
        break;
      }
      case Kind::integer_sum:
      case Kind::integer_prod:
        store(s, is_signed_integer(dtype) ? static_cast<std::uint64_t>(v.get<std::int64_t>()) : v.get<std::uint64_t>());
        break;
      case Kind::exact_sum: {
        if (result.exact.size() < h.columns)
          throw Error(ErrorCode::unsupported, "the backend '" + result.backend + "' gave no exact partial of each result of this view: " +
                                                  "exact sums cross ranks for flat arrays and records");
        ExactSum e = result.exact[c];
        e.normalize();  // so that up to 2^31 of them add word by word
        store(s, e);
        break;
      }
      case Kind::float_sum:
      case Kind::float_prod: store(s, v.to_double()); break;
      case Kind::extreme: {
        // The index within this rank's shard: the combine adds the offsets.
        const std::uint64_t index = result.indices.empty() ? result.index.value_or(0) : result.indices.at(c);
        store(s, visit_dtype(dtype, [&](auto tag) { return extreme_of(v.get<decltype(tag)>(), index); }));
        break;
      }
    }
  }
}

void Partials::set_error(int rank, ErrorCode code, const std::string& message) {
  Header& h = header();
  h.error_code = static_cast<std::int32_t>(code);
  h.error_rank = rank;
  if (h.with_message) {
    Message& m = message_of(data());
    std::snprintf(m.text, sizeof m.text, "%s", message.c_str());
  }
}

std::string Partials::message() const {
  if (!header().with_message) return {};
  const Message& m = message_of(const_cast<std::uint64_t*>(words_.data()));
  return std::string(m.text, strnlen(m.text, sizeof m.text));
}

Result Partials::result(const std::string& reason, std::optional<DType> asked, double correction,
                        const std::vector<std::int64_t>& shape) const {
  const Header& h = header();
  if (h.error_code != 0) {
    const std::string why = !reason.empty() ? reason : h.with_message ? message() : std::string(to_string(static_cast<ErrorCode>(h.error_code)));
    if (h.error_rank < 0)
      throw Error(ErrorCode::invalid_argument, "the ranks' calls disagree: every rank must pass the same dtype, op, width and accuracy");
    throw Error(static_cast<ErrorCode>(h.error_code), "rank " + std::to_string(h.error_rank) + ": " + why);
  }
  const auto dtype = static_cast<DType>(h.dtype);
  const auto op = static_cast<Op>(h.op);
  const auto kind = static_cast<Kind>(h.kind);
  const DType type = result_dtype(dtype, op, asked);
  if (OpSet{op}.needs_elements() && h.count == 0)
    throw Error(ErrorCode::empty_input, std::string(to_string(op)) + " of an empty array (every rank's shard is empty) has no value");
  Result r;
  for (std::size_t c = 0; c < h.columns; ++c) {
    const std::byte* s = slot(words_.data(), c);
    Scalar value;
    switch (kind) {
      case Kind::integer_sum:
      case Kind::integer_prod: {
        const auto bits = load<std::uint64_t>(s);
        value = is_signed_integer(dtype) ? Scalar(static_cast<std::int64_t>(bits)) : Scalar(bits);
        break;
      }
      case Kind::exact_sum: {
        const auto e = load<ExactSum>(s);
        value = visit_dtype(type, [&](auto tag) {
          using T = decltype(tag);
          if constexpr (is_float_v<T>) return Scalar(e.round<T>());
          else return Scalar(e.round<double>());  // not reached: exact sums are of floats
        });
        r.exact.push_back(e);
        break;
      }
      case Kind::float_sum:
      case Kind::float_prod: {
        const auto d = load<double>(s);
        value = visit_dtype(type, [&](auto tag) {
          using T = decltype(tag);
          if constexpr (is_float_v<T>) return Scalar(static_cast<T>(d));
          else return Scalar(d);  // not reached: float sums and products are of floats
        });
        break;
      }
      case Kind::extreme: {
        const auto x = load<Extreme>(s);
        value = visit_dtype(dtype, [&](auto tag) { return Scalar(value_of<decltype(tag)>(x)); });
        if (returns_index(op)) {
          const std::uint64_t index = skips_nan(op) && x.nan ? no_index : x.index;  // an all-NaN whole: no index
          if (c == 0) r.index = index;                                               // the first column's, as on one rank
          if (h.columns > 1) r.indices.push_back(index);
        }
        break;
      }
      case Kind::statistic:
        value = visit_policy(dtype, op, [&](auto f) -> Scalar {
          using F = decltype(f);
          const auto acc = load<typename F::acc_t>(s);
          const ops::FinishArgs args{correction};
          if (type == dtype_of<typename F::result_t>()) return Scalar(F::finish(acc, args));
          return visit_dtype(type, [&](auto out) -> Scalar {  // a float type asked for: the value rounded once to it
            using Out = decltype(out);
            if constexpr (is_float_v<Out>) return Scalar(static_cast<Out>(static_cast<double>(F::value(acc, args))));
            else return Scalar(F::finish(acc, args));  // not reached: a type asked for is a float
          });
        });
        break;
      case Kind::exact_moments: {
        const auto sum = load<ExactSum>(s), squares = load<ExactSum>(s + sizeof(ExactSum));
        value = visit_dtype(type, [&](auto tag) {
          using T = decltype(tag);
          if constexpr (is_float_v<T>)
            return Scalar(op == Op::mean ? exact_mean<T>(sum) : exact_variance<T>(sum, squares, correction, op == Op::std));
          else return Scalar(exact_mean<double>(sum));  // not reached: exact statistics are of floats
        });
        r.exact = {sum, squares};
        break;
      }
    }
    if (h.columns > 1) r.values.push_back(value);
    if (c == 0) r.value = value;
  }
  r.shape = shape;
  if (!shape.empty() && h.columns == 1) {  // one result of a view kept as one (keepdims), as on one rank
    r.values = {r.value};
    if (r.index) r.indices = {*r.index};
  }
  return r;
}

void Partials::combine(const void* in, void* inout, std::size_t bytes) {
  const auto& a = *static_cast<const Header*>(in);
  auto& b = *static_cast<Header*>(inout);
  const bool agree = a.magic == Header::kMagic && b.magic == Header::kMagic && a.kind == b.kind && a.op == b.op &&
                     a.dtype == b.dtype && a.columns == b.columns && a.with_message == b.with_message &&
                     slots_at(a) + a.columns * slot_bytes(static_cast<Kind>(a.kind)) <= bytes;
  if (!agree) {
    b.error_code = static_cast<std::int32_t>(ErrorCode::invalid_argument);
    b.error_rank = -1;
    return;
  }
  // The error of the lowest failing rank, so that every rank reports the same one; a
  // disagreement (rank -1) over any.
  const bool a_disagrees = a.error_code != 0 && a.error_rank == -1;
  const bool b_disagrees = b.error_code != 0 && b.error_rank == -1;
  if (a.error_code != 0 && !b_disagrees && (b.error_code == 0 || a_disagrees || a.error_rank < b.error_rank)) {
    b.error_code = a.error_code;
    b.error_rank = a.error_rank;
    if (a.with_message) message_of(inout) = message_of(const_cast<void*>(in));
  }
  const std::uint64_t left_count = a.count;
  b.count += a.count;
  const auto dtype = static_cast<DType>(b.dtype);
  const auto op = static_cast<Op>(b.op);
  for (std::size_t c = 0; c < b.columns; ++c) {
    const std::byte* x = slot(in, c);
    std::byte* y = slot(inout, c);
    switch (static_cast<Kind>(b.kind)) {
      case Kind::integer_sum: store(y, load<std::uint64_t>(y) + load<std::uint64_t>(x)); break;
      case Kind::integer_prod: store(y, load<std::uint64_t>(y) * load<std::uint64_t>(x)); break;
      case Kind::exact_sum: {
        auto e = load<ExactSum>(y);
        e += load<ExactSum>(x);
        store(y, e);
        break;
      }
      case Kind::float_sum: store(y, load<double>(y) + load<double>(x)); break;
      case Kind::float_prod: store(y, load<double>(y) * load<double>(x)); break;
      case Kind::extreme: {
        // `in` holds the lower ranks (the operator is declared non-commutative, so MPI keeps rank
        // order): the higher ranks' index moves past the lower ranks' records. No scan needed.
        Extreme right = load<Extreme>(y);
        right.index += left_count;
        const bool is_max = op == Op::max || op == Op::argmax || op == Op::nanargmax;
        store(y, better(load<Extreme>(x), right, dtype, is_max, skips_nan(op)));
        break;
      }
      case Kind::statistic:
        visit_policy(dtype, op, [&](auto f) {
          using Acc = typename decltype(f)::acc_t;
          store(y, decltype(f){}(load<Acc>(x), load<Acc>(y)));  // the table's combine, lower ranks first
        });
        break;
      case Kind::exact_moments:
        for (std::size_t k = 0; k < 2; ++k) {
          auto e = load<ExactSum>(y + k * sizeof(ExactSum));
          e += load<ExactSum>(x + k * sizeof(ExactSum));
          store(y + k * sizeof(ExactSum), e);
        }
        break;
    }
  }
}

LocalPartials local_partials(int rank, const Request& shard, const Options& options, Context& context, bool with_message) {
  const Accuracy accuracy = options.accuracy.value_or(context.config().accuracy);
  const ShardShape shape = shape_of(shard);
  LocalPartials local{Partials(shard.dtype, shard.op, shape.columns, accuracy, with_message), "(empty shard)", {}, shape.result_shape};
  try {
    if (!shape.refused.empty()) throw Error(shape.code, shape.refused);
    // The shard's results come back here, not to its out: they are partials of the whole's.
    Request own = shard;
    own.out = nullptr, own.out_index = nullptr, own.out_strides = nullptr;
    if (shape.records > 0 && shape.columns > 0) {
      local.partials.header().count = shape.records;  // set_local reads it: a statistic's accumulator of that many
      if (local.partials.header().kind == static_cast<std::uint8_t>(Kind::statistic) && exact_statistic(shard.op)) {
        // Chan's update needs each rank's count, mean and spread, in f64 where the elements are
        // floats: its variance's moments where the backend keeps them (Result::moments), else
        // its variance, then its mean (a second read).
        Options wide = options;
        wide.result_dtype = is_floating(shard.dtype) ? std::optional<DType>(DType::f64) : std::nullopt;
        Request q = own;
        std::optional<Result> var;
        if (shard.op != Op::mean) {
          q.op = Op::var;
          q.correction = 0;
          var = context.reduce(q, wide);
        }
        if (var && var->moments && shape.columns == 1) {
          local.backend = var->backend;
          local.partials.set_moments(*var->moments);
        } else {
          q.op = Op::mean;
          const Result mean = context.reduce(q, wide);
          local.backend = mean.backend;
          local.partials.set_local(mean, var ? &*var : nullptr);
        }
      } else {
        Options o = shard_options(own, options, context);
        // A statistic's float result crosses in f64, unrounded: the whole is rounded once.
        if (!is_core_op(shard.op) && is_floating(shard.dtype) && !o.result_dtype && result_dtype_allowed(shard.dtype, shard.op, DType::f64))
          o.result_dtype = DType::f64;
        Result r = context.reduce(own, o);
        local.backend = r.backend;
        local.partials.set_local(r);
      }
    }
  } catch (const Error& e) {
    local.reason = e.what();
    local.partials.set_error(rank, e.code(), local.reason);
  } catch (const std::exception& e) {
    local.reason = e.what();
    local.partials.set_error(rank, ErrorCode::internal, local.reason);
  }
  local.partials.header().count = shape.records;
  return local;
}

}  // namespace xreduce::mpi::detail
