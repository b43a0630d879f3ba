#include "results.hpp"

#include <cstring>
#include <string>
#include <vector>

#include "xreduce/backend/ops.hpp"
#include "xreduce/error.hpp"

namespace xreduce::detail {
namespace {

//! One op's results in host memory the core owns: n packed values of its result type, and n
//! indices for argmin/argmax.
struct Packed {
  std::vector<std::uint64_t> words;  // 8 bytes hold one value of 8 bytes or two of 4
  std::vector<std::uint64_t> indices;
  Packed() = default;
  Packed(DType type, bool index, std::size_t n) : words((n * size_of(type) + 7) / 8), indices(index ? n : 0) {}
};

//! `n` packed values of type t. Typed once, not per value: a million segments' results took
//! 17 ns each through Scalar::from_bytes, six times the reduction of their rows of 16.
std::vector<Scalar> unpack(DType t, const void* packed, std::size_t n) {
  std::vector<Scalar> values;
  values.reserve(n);
  visit_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    const auto* bytes = static_cast<const unsigned char*>(packed);
    for (std::size_t s = 0; s < n; ++s) {
      T v;
      std::memcpy(&v, bytes + s * sizeof(T), sizeof v);
      values.emplace_back(v);
    }
  });
  return values;
}

//! The kept axes' extents of a view (the results' shape without keepdims' 1s).
std::vector<std::int64_t> kept_extents(const Request& q) {
  std::vector<std::int64_t> kept;
  for (std::size_t k = 0; k < q.view.rank; ++k)
    if (!q.axes.empty() && !q.axes.contains(k)) kept.push_back(q.view.shape[k]);
  return kept;
}

//! Whether `strides` (one per kept extent) step as packed C order does.
bool packed(const std::int64_t* strides, const std::vector<std::int64_t>& kept) {
  std::int64_t step = 1;
  for (std::size_t k = kept.size(); k-- > 0;) {
    if (kept[k] > 1 && strides[k] != step) return false;
    step *= kept[k];
  }
  return true;
}

//! Copies n packed results (values of `type`, and indices if any) to the caller's `out` and
//! `out_index`, placed by `strides` along the kept extents.
void scatter(const void* values, const std::uint64_t* indices, DType type, std::size_t n,
             const std::vector<std::int64_t>& kept, const std::int64_t* strides, void* out, std::uint64_t* out_index) {
  const std::size_t bytes = size_of(type);
  std::vector<std::int64_t> at(kept.size(), 0);  // the odometer over the kept axes
  std::int64_t offset = 0;
  for (std::size_t s = 0; s < n; ++s) {
    std::memcpy(static_cast<unsigned char*>(out) + offset * static_cast<std::int64_t>(bytes),
                static_cast<const unsigned char*>(values) + s * bytes, bytes);
    if (indices && out_index) out_index[offset] = indices[s];
    for (std::size_t k = kept.size(); k-- > 0;) {
      offset += strides[k];
      if (++at[k] < kept[k]) break;
      offset -= strides[k] * kept[k];
      at[k] = 0;
    }
  }
}

//! The result of no element of `op` over `in`, as a value of `type`: a sum's 0, a product's 1,
//! and the statistics' finish of their identity (mean and var NaN, logsumexp -inf, all true).
Scalar identity_of(DType in, Op op, DType type, double correction) {
  if (is_core_op(op)) return rounded(type, op == Op::prod ? 1 : 0);
  return visit_dtype(in, [&](auto tag) {
    using T = decltype(tag);
    return ops::visit_statistic<T>(op, [&](auto f) {
      using F = decltype(f);
      return rounded(type, static_cast<double>(F::value(F::identity(), ops::FinishArgs{correction})));
    });
  });
}

//! Writes one value to packed position s of a buffer of `type`.
void put(void* out, std::size_t s, const Scalar& v) {
  std::memcpy(static_cast<unsigned char*>(out) + s * size_of(v.dtype()), v.bytes(), size_of(v.dtype()));
}

}  // namespace

Scalar rounded(DType dtype, const ExactSum& s) {
  switch (dtype) {
    case DType::f32: return Scalar(s.round<float>());
    case DType::f16: return Scalar(s.round<f16>());
    case DType::bf16: return Scalar(s.round<bf16>());
    default: return Scalar(s.round<double>());
  }
}

Scalar rounded(DType dtype, double wide) {
  return visit_dtype(dtype, [&](auto tag) { return Scalar(static_cast<decltype(tag)>(wide)); });
}

Result run_for_results(const Request& q, const Request& c, const Features& f, const Run& run, std::optional<DType> asked) {
  const std::size_t n = result_count(c);
  const bool array = returns_values(q, c);
  if (f.several) {
    Request w = c;
    OpsOut own;
    std::vector<Packed> packs(all_ops.size());
    if (q.ops_out) {
      w.ops_out = q.ops_out;
    } else {
      for (Op op : all_ops) {
        if (!c.ops.contains(op)) continue;
        const int k = static_cast<int>(op);
        packs[k] = Packed(result_dtype(c.dtype, op), returns_index(op), n);
        own.values[k] = packs[k].words.data();
        own.indices[k] = returns_index(op) ? packs[k].indices.data() : nullptr;
      }
      w.ops_out = &own;
    }
    Result r = run(w);
    r.ops.clear();
    r.values.clear();
    r.indices.clear();
    for (Op op : all_ops) {
      if (!c.ops.contains(op) || q.ops_out) continue;
      Packed& p = packs[static_cast<int>(op)];
      OpResult one{op, {}, std::nullopt, unpack(result_dtype(c.dtype, op), p.words.data(), n), std::move(p.indices)};
      if (n > 0) {
        one.value = one.values.front();
        if (returns_index(op)) one.index = one.indices.front();
      }
      if (!array) one.values.clear(), one.indices.clear();
      r.ops.push_back(std::move(one));
    }
    if (!r.ops.empty()) r.value = r.ops.front().value, r.index = r.ops.front().index;
    r.shape = result_shape(q);
    return r;
  }

  const DType type = result_dtype(c.dtype, c.op, asked);
  // Another type than the op's own: the backend writes f64 (wide results) or its own type
  // (exact partials beside), in places of the core's, which become `type` here.
  const DType written = f.wide ? DType::f64 : result_dtype(c.dtype, c.op);
  const bool index = returns_index(c.op);
  const std::vector<std::int64_t> kept = kept_extents(q);
  const bool into_caller = q.out && written == type && (!q.out_strides || packed(q.out_strides, kept));
  Packed own(size_of(written) > size_of(type) ? written : type, index, into_caller ? 0 : n);
  Request w = c;
  w.out = into_caller ? q.out : static_cast<void*>(own.words.data());
  w.out_index = into_caller ? q.out_index : index ? own.indices.data() : nullptr;
  Result r = run(w);
  if (f.accuracy == Accuracy::exact && f.layout == Layout::outer) {  // one exact partial per column
    if (r.exact.size() != n)
      throw Error(ErrorCode::internal, "the backend returned " + std::to_string(r.exact.size()) + " exact partials for " +
                                           std::to_string(n) + " columns");
    for (std::size_t s = 0; s < n; ++s) put(w.out, s, rounded(type, r.exact[s]));
  } else if (f.wide) {  // f64 accumulators, rounded once, in place: `type` is no wider than f64
    for (std::size_t s = 0; s < n; ++s) {
      double v;
      std::memcpy(&v, static_cast<const unsigned char*>(w.out) + s * sizeof v, sizeof v);
      put(w.out, s, rounded(type, v));
    }
  }
  r.values.clear();
  r.indices.clear();
  if (q.out && !into_caller) scatter(own.words.data(), index ? own.indices.data() : nullptr, type, n, kept, q.out_strides, q.out, q.out_index);
  if (!q.out) {
    std::vector<Scalar> values = unpack(type, own.words.data(), n);
    if (n > 0) r.value = values.front();
    if (n > 0 && index) r.index = own.indices.front();
    if (array) r.values = std::move(values), r.indices = std::move(own.indices);
  }
  r.shape = result_shape(q);
  return r;
}

void check_extremes_of_empty(const Request& q, const Request& c, const Features& f) {
  const bool array = q.view.rank > 0 && !result_shape(q).empty();
  const std::size_t n = array ? static_cast<std::size_t>(result_count(c)) : 1;
  if (n > 0 && f.ops.needs_elements()) {
    std::string names;
    for (Op op : all_ops)  // those of them that need elements (a mean of nothing is NaN, a sum 0)
      if (f.ops.contains(op) && OpSet{op}.needs_elements()) names += (names.empty() ? "" : ", ") + std::string(to_string(op));
    throw Error(ErrorCode::empty_input, names + (array ? " over axes of extent 0 has no value (each of the " +
                                                             std::to_string(n) + " results would be of an empty slice)"
                                                       : " of an empty array has no value"));
  }
}

Result empty_result(const Request& q, const Request& c, const Features& f, std::optional<DType> asked) {
  check_extremes_of_empty(q, c, f);
  const bool array = q.view.rank > 0 && !result_shape(q).empty();
  const std::size_t n = array ? static_cast<std::size_t>(result_count(c)) : 1;
  if (array && (q.out || q.ops_out) && q.memory == Memory::device)
    throw Error(ErrorCode::unsupported, "an empty reduction's results are written by the core, to host memory: "
                                        "`out` in device memory is for requests with elements");
  Result r;
  r.shape = result_shape(q);
  const std::vector<std::int64_t> kept = kept_extents(q);
  for (Op op : all_ops) {
    if (!f.ops.contains(op)) continue;
    const DType type = f.several ? result_dtype(q.dtype, op) : result_dtype(q.dtype, op, asked);
    const Scalar identity = identity_of(q.dtype, op, type, q.correction);
    std::vector<Scalar> values(array ? n : 0, identity);
    void* out = f.several ? (q.ops_out ? q.ops_out->values[static_cast<int>(op)] : nullptr) : q.out;
    if (out) {
      Packed identities(type, false, n);
      for (std::size_t s = 0; s < n; ++s) put(identities.words.data(), s, identity);
      if (!f.several && q.out_strides) scatter(identities.words.data(), nullptr, type, n, kept, q.out_strides, out, nullptr);
      else std::memcpy(out, identities.words.data(), n * size_of(type));
      values.clear();
    }
    // As run_for_results: several ops written to the caller's ops_out leave Result::ops empty.
    if (f.several && !q.ops_out) r.ops.push_back(OpResult{op, identity, std::nullopt, std::move(values), {}});
    if (!f.several) r.values = std::move(values);
  }
  if (!f.several) r.value = identity_of(q.dtype, q.op, result_dtype(q.dtype, q.op, asked), q.correction);
  else if (!r.ops.empty()) r.value = r.ops.front().value;
  if (f.accuracy == Accuracy::exact) r.exact.assign(n, ExactSum{});
  return r;
}

}  // namespace xreduce::detail
