#pragma once
// One test body for several ops in one pass (Request::ops), run over every backend that does
// them, wherever its data lives (a Placement, as for segments): flat arrays of many lengths and
// every segment shape, each stat checked against its own exact reference.

#include <doctest/doctest.h>

#include <random>
#include <vector>

#include "support/segment_cases.hpp"

namespace xreduce::test {

//! The sets of ops tried together: the six core ops one pass computes, sum+min+max+argmax,
//! pairs, the statistics among them (mean, var and std, which share their moments, the nan*
//! ops, the norms, logsumexp, counts), and each core op alone (the statistics alone are
//! statistics.cpp's). prod is not among them: no backend computes it beside others.
inline std::vector<OpSet> stat_sets() {
  std::vector<OpSet> v{OpSet{Op::sum, Op::min, Op::max, Op::argmin, Op::argmax, Op::sumsq},
                       OpSet{Op::sum, Op::min, Op::max, Op::argmax},
                       OpSet{Op::sumsq, Op::sum},
                       OpSet{Op::argmin, Op::max},
                       OpSet{Op::mean, Op::std, Op::min, Op::max},
                       OpSet{Op::mean, Op::var, Op::std, Op::argmax},
                       OpSet{Op::nanmean, Op::nanvar, Op::nansum, Op::nanmax, Op::nanargmin, Op::count_nonzero},
                       OpSet{Op::norm1, Op::norm2, Op::norminf, Op::logsumexp, Op::sum},
                       OpSet{Op::any, Op::all, Op::nanstd, Op::nanprod, Op::nanmin, Op::nanargmax, Op::mean}};
  for (Op s : core_ops)
    if (s != Op::prod) v.push_back(OpSet{s});
  return v;
}

//! Whether requests `a` and `b` walk the same elements in the same order once canonical (the
//! order of a view's reduced axes is free unless an op returns an index).
inline bool same_walk(const Request& a, const Request& b) {
  const Request x = canonical(a), y = canonical(b);
  if (x.data != y.data || x.count != y.count || x.view.rank != y.view.rank) return false;
  for (std::size_t k = 0; k < x.view.rank; ++k)
    if (x.view.shape[k] != y.view.shape[k] || x.view.strides[k] != y.view.strides[k] || x.axes.contains(k) != y.axes.contains(k))
      return false;
  return true;
}

//! Request `q` of several ops with op `s` alone instead.
inline Request with_alone(const Request& q, Op s) {
  Request one = q;
  one.ops = {};
  one.ops_out = nullptr;
  one.op = s;
  return one;
}

//! Whether `r` runs on the CPU, where each op among several is that op's own kernel over the data
//! one read brought in: the bits of that op alone.
inline bool on_cpu(const Reducer& r) {
  const Engine engine = r.capabilities().engine();
  return engine == Engine::cpu_serial || engine == Engine::cpu_parallel;
}

//! Op `s` among the several ops of `q`, as `returned` holds it, against the same call on `r` with
//! `s` alone: the same value and index, values and indices.
inline void check_as_alone(Reducer& r, const Request& q, const Result& returned, Op s) {
  const Result alone = r.reduce(with_alone(q, s));
  const OpResult& among = returned.of(s);
  INFO("the " << to_string(s) << " among several against alone: " << among.value.to_string() << " and " << alone.value.to_string());
  CHECK(among.value == alone.value);
  CHECK(among.index == alone.index);
  CHECK(among.values == alone.values);
  CHECK(among.indices == alone.indices);
}

//! A set of ops, for a check's message.
inline std::string describe(OpSet ops) {
  std::string text;
  for (Op s : all_ops)
    if (ops.contains(s)) text += (text.empty() ? "" : ",") + std::string(to_string(s));
  return text;
}

//! Reduces n fresh elements (or `shape`'s segments of them) with `ops` on `r` from `place`: the
//! results returned, and for segments also written to Request::ops_out; each stat against its
//! exact reference.
template <class T>
void check_stats(Reducer& r, Placement& place, OpSet ops, std::size_t n, const SegmentShape* shape, Pattern pattern,
                 std::mt19937_64& rng) {
  const Elements<T> data = make_data<T>(pattern, Op::sum, n, rng);
  // `op` is not used with `ops`: prod, which no backend computes among several, says so.
  Request host = shape ? shaped(data.data(), *shape, dtype_of<T>(), Op::prod) : Request{data.data(), n, dtype_of<T>(), Op::prod, Memory::host};
  host.ops = ops;
  host.correction = static_cast<double>(rng() % 2);  // var and std: the population's or the sample's
  if (shape && shape->rows && n == 0 && ops.needs_elements()) {  // rows of nothing: no extreme of an empty slice
    CHECK_THROWS_WITH_AS(r.reduce(host), doctest::Contains("empty slice"), Error);
    return;
  }
  const Reference ref = exact_reference(host);

  Request q = host;
  q.memory = place.memory;
  q.data = place.put(data.data(), data.size() * sizeof(T));
  if (shape && !shape->rows)
    q.segments.offsets = static_cast<const std::uint64_t*>(place.put(shape->offsets.data(), shape->offsets.size() * 8));
  INFO("seed " << run_seed() << " (replay with XREDUCE_TEST_SEED), backend " << r.name() << ", " << describe(ops) << " of "
               << n << " " << to_string(dtype_of<T>()) << ", " << (shape ? shape->name : "flat") << ", " << std::string(test::name(pattern))
               << " data");

  const Result returned = r.reduce(q);
  double error = 0;
  REQUIRE(returned.ops.size() == ops.size());
  CHECK(agrees(host, ref, returned, &error));
  CHECK(returned.value == returned.ops.front().value);
  for (Op s : all_ops)
    if (ops.contains(s)) CHECK(returned.of(s).op == s);
  if (on_cpu(r))
    for (Op s : all_ops)
      if (ops.contains(s)) check_as_alone(r, q, returned, s);
  if (!shape) return;

  const std::size_t count = shape->count();
  const std::vector<std::uint64_t> zeros(count + 1, 0);
  OpsOut out;
  for (Op s : all_ops) {
    if (!ops.contains(s)) continue;
    out.values[static_cast<int>(s)] = place.put(zeros.data(), count * 8 + 8);
    if (returns_index(s)) out.indices[static_cast<int>(s)] = static_cast<std::uint64_t*>(place.put(zeros.data(), count * 8 + 8));
  }
  q.ops_out = &out;
  const Result written = r.reduce(q);
  CHECK(written.ops.empty());
  Result fetched;
  for (Op s : all_ops) {
    if (!ops.contains(s)) continue;
    const DType t = result_dtype(q.dtype, s);
    std::vector<unsigned char> bytes(count * size_of(t) + 8);
    place.fetch(bytes.data(), out.values[static_cast<int>(s)], count * size_of(t));
    OpResult one{s, {}, std::nullopt};
    for (std::size_t k = 0; k < count; ++k) one.values.push_back(Scalar::from_bytes(t, bytes.data() + k * size_of(t)));
    if (returns_index(s)) {
      one.indices.resize(count);
      place.fetch(one.indices.data(), out.indices[static_cast<int>(s)], count * 8);
    }
    if (count > 0) {
      one.value = one.values.front();
      if (returns_index(s)) one.index = one.indices.front();
    }
    fetched.ops.push_back(std::move(one));
  }
  CHECK(agrees(host, ref, fetched, &error));
}

//! Whether `r` computes `ops` of `dtype` together over `shape`'s layout (rows or segments), or flat (null).
inline bool several_of(const Reducer& r, const SegmentShape* shape, OpSet ops, DType dtype) {
  const std::vector<std::uint64_t> one{0, 1};
  const SegmentShape probe = !shape ? SegmentShape{} : shape->rows ? SegmentShape{"", 2, 2, {}} : SegmentShape{"", 1, 0, one};
  Request q = shape ? shaped(nullptr, probe, dtype, Op::sum) : Request{nullptr, 1, dtype, Op::sum, Memory::host};
  q.ops = ops;
  return r.capabilities().support(features_of(canonical(q), Accuracy::standard)) == Support::exact;
}
inline bool several_of(const Reducer& r, const SegmentShape& shape, OpSet ops, DType dtype) { return several_of(r, &shape, ops, dtype); }

//! Flat lengths around the kernels' edges (vectors, leaves, the CPU's tiles) and every segment
//! shape, with each set of stats, for element type T on `r`.
template <class T>
void check_stats_for_type(Reducer& r, Placement& place, bool few) {
  std::mt19937_64 rng(run_seed() ^ (0x57a75ull + static_cast<std::uint64_t>(dtype_of<T>())));
  const Pattern patterns[] = {Pattern::random, Pattern::ties, is_float_v<T> ? Pattern::nan : Pattern::negative};
  const std::vector<OpSet> sets = stat_sets();
  std::vector<std::size_t> lengths{1, 2, 5, 31, 33, 256, 4097, 65536 + 3, 3 * 65536 + 17};
  if (!few) lengths.push_back((std::size_t{1} << 21) + 7);
  int turn = 0, mix = static_cast<int>(dtype_of<T>());
  for (std::size_t n : lengths)
    for (OpSet ops : sets) {
      // Past 2^18 elements (four of the CPU's tiles), one mix of statistics, another for each
      // element type: their long runs are statistics.cpp's, and their exact references cost the
      // most here.
      if (std::any_of(all_ops.begin(), all_ops.end(), [&](Op op) { return ops.contains(op) && !is_core_op(op); }) && n > (std::size_t{1} << 18) && mix++ % 5 != 0) continue;
      if (several_of(r, nullptr, ops, dtype_of<T>())) check_stats<T>(r, place, ops, n, nullptr, patterns[turn++ % 3], rng);
    }
  const std::vector<SegmentShape> shapes = segment_shapes(rng, few);
  for (const SegmentShape& shape : shapes)
    for (OpSet ops : {sets[0], sets[1], sets[2 + turn % (sets.size() - 2)]})
      if (several_of(r, shape, ops, dtype_of<T>())) check_stats<T>(r, place, ops, shape.n, &shape, patterns[turn++ % 3], rng);
}

}  // namespace xreduce::test
