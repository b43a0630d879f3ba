#pragma once
// One test body for rows and segments: equal rows (Request::rows, layout inner) and segments at
// offsets (Request::segments, layout ragged), run over every backend that reduces them, wherever
// its data lives: the host conformance suite places the arrays in host memory, the GPU suite in
// device memory (a Placement each).

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "support/placement.hpp"
#include "support/test_data.hpp"
#include "xreduce/backend/features.hpp"
#include "xreduce/backend/reducer.hpp"
#include "xreduce/validate.hpp"

namespace xreduce::test {

//! A cut of n elements into segments: equal rows, or offsets.
struct SegmentShape {
  std::string name;
  std::size_t n = 0;
  std::size_t rows = 0;                  //!< > 0: equal rows
  std::vector<std::uint64_t> offsets;    //!< else these (count + 1 of them)
  std::size_t count() const { return rows ? rows : offsets.size() - 1; }
};

//! Every shape class: one segment, rows short and long (crossing the CPU's 2^16-element tiles),
//! many short segments, power-law lengths, empty segments (leading, trailing, runs of them),
//! offsets that skip elements at both ends, no segments at all, rows of nothing.
inline std::vector<SegmentShape> segment_shapes(std::mt19937_64& rng, bool few) {
  std::vector<SegmentShape> v;
  auto offsets_of = [](const std::vector<std::uint64_t>& lengths, std::uint64_t first) {
    std::vector<std::uint64_t> off{first};
    for (std::uint64_t len : lengths) off.push_back(off.back() + len);
    return off;
  };
  v.push_back({"one segment", 3 * 65536 + 5, 1, {}});
  v.push_back({"1000 rows of 7", 7000, 1000, {}});
  // Short rows over several tiles, one of them cut by each tile's edge (the CPU's rows loop).
  if (!few) v.push_back({"30000 rows of 11", 330000, 30000, {}});
  v.push_back({"3 rows of 200003", 3 * 200003, 3, {}});
  v.push_back({"40 rows of 5000", 40 * 5000, 40, {}});  // on the GPU: a block a row
  // The short lengths the CPU backends unroll (1, 2, 4, 8, 16), across tiles.
  v.push_back({"70000 rows of 1", 70000, 70000, {}});
  v.push_back({"5000 rows of 16", 80000, 5000, {}});
  if (!few)
    for (std::size_t length : {2, 4, 8}) v.push_back({std::to_string(80000 / length) + " rows of " + std::to_string(length), 80000, 80000 / length, {}});
  if (!few) v.push_back({"16 rows of 65536", 16 * 65536, 16, {}});
  {
    std::vector<std::uint64_t> len(few ? 3000 : 30000);
    for (auto& l : len) l = 1 + rng() % 32;
    auto off = offsets_of(len, 0);
    v.push_back({"many segments of 1..32", off.back(), 0, off});
  }
  {
    std::vector<std::uint64_t> len(few ? 300 : 2000);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    for (auto& l : len) l = static_cast<std::uint64_t>(std::min(300000.0, std::pow(1.0 - u(rng), -1.0 / 0.8)));  // Pareto, alpha 0.8
    auto off = offsets_of(len, 0);
    v.push_back({"power-law lengths", off.back(), 0, off});
  }
  {
    std::vector<std::uint64_t> len(2000);
    for (auto& l : len) l = rng() % 3 == 0 ? 0 : rng() % 200;
    len.front() = 0;
    len.back() = 0;
    for (std::size_t i = 500; i < 520; ++i) len[i] = 0;
    auto off = offsets_of(len, 17);  // elements 0..16 and the last 23 belong to no segment
    v.push_back({"empty segments, unread ends", off.back() + 23, 0, off});
  }
  {
    std::vector<std::uint64_t> len{0, 150000, 0, 0, 1, 70000, 0};
    auto off = offsets_of(len, 3);
    v.push_back({"empty segments between long ones", off.back(), 0, off});
  }
  {
    // Thousands of empty segments in a row, then tiny ones: whole GPU blocks of identities.
    std::vector<std::uint64_t> len(6000, 0);
    for (std::size_t i = 3000; i < len.size(); ++i) len[i] = rng() % 3;
    auto off = offsets_of(len, 5);
    v.push_back({"thousands of empty and tiny segments", off.back(), 0, off});
  }
  v.push_back({"no segments", 10, 0, {4}});
  v.push_back({"5 rows of nothing", 0, 5, {}});
  return v;
}

//! `count` segments of 0 to 32 elements, with one of 2,500 to 42,500 every 4,099: on the GPU, more
//! blocks of 256 segments than it holds at once, short and empty ones in every block and a long
//! one in about one block of sixteen.
inline SegmentShape many_segments(std::mt19937_64& rng, std::size_t count) {
  std::vector<std::uint64_t> off{0};
  for (std::size_t s = 0; s < count; ++s) off.push_back(off.back() + (s % 4099 == 7 ? 2500 + rng() % 40001 : rng() % 33));
  return {std::to_string(count) + " segments of 0..32 and some long ones", off.back(), 0, off};
}

//! Reduces `shape` of fresh data with `r` from `place`, results both returned and written to
//! Request::out, each checked segment by segment against the exact reference. The data starts
//! `lead` elements into its block (1: not at a 16-byte boundary, where vector loads begin).
//! The request for `shape` of data at x: equal rows as a view, or segments at their offsets.
inline Request shaped(const void* x, const SegmentShape& shape, DType dtype, Op op) {
  if (shape.rows) return Request::rows(x, shape.rows, shape.n / shape.rows, dtype, op);
  Request q{x, shape.n, dtype, op, Memory::host};
  q.segments = Segments::at(shape.offsets.data(), shape.count());
  return q;
}

//! Whether `r` reduces `shape`'s layout (rows or segments) of T with `op`, to the semantics table.
template <class T>
bool reduces(const Reducer& r, const SegmentShape& shape, Op op, Accuracy accuracy = Accuracy::standard) {
  // The shape itself (its layout class follows from its extents), over data canonical() never reads.
  static const T somewhere{};
  const Request q = shaped(&somewhere, shape, dtype_of<T>(), op);
  return r.capabilities().support(features_of(canonical(q), accuracy)) == Support::exact;
}

template <class T>
void check_segments(Reducer& r, Placement& place, Op op, const SegmentShape& shape, Pattern pattern,
                    std::mt19937_64& rng, Accuracy accuracy = Accuracy::standard, std::size_t lead = 0) {
  const Elements<T> data = make_data<T>(pattern, op, shape.n, rng);
  const Request host = shaped(data.data(), shape, dtype_of<T>(), op);
  Options options;
  options.accuracy = accuracy;
  // Rows of nothing are a view with an axis of extent 0: an empty slice has no extreme, as in numpy
  // (an empty segment gives the op's identity instead).
  if (shape.rows && shape.n == 0 && OpSet{op}.needs_elements()) {
    CHECK_THROWS_WITH_AS(r.reduce(host, options), doctest::Contains("empty slice"), Error);
    return;
  }
  const Reference ref = exact_reference(host);

  Request q = host;
  q.memory = place.memory;
  Elements<T> placed(lead + data.size(), T{});
  std::copy(data.begin(), data.end(), placed.begin() + lead);
  q.data = static_cast<const T*>(place.put(placed.data(), placed.size() * sizeof(T))) + lead;
  if (!shape.rows) q.segments.offsets = static_cast<const std::uint64_t*>(place.put(shape.offsets.data(), shape.offsets.size() * 8));
  INFO("seed " << run_seed() << " (replay with XREDUCE_TEST_SEED), backend " << r.name() << ", " << to_string(op) << " of "
               << to_string(dtype_of<T>()) << ", " << shape.name << ", " << std::string(name(pattern)) << " data"
               << (lead ? ", " + std::to_string(lead) + " element(s) into its block" : std::string()));

  const Result returned = r.reduce(q, options);
  double error = 0;
  CHECK(returned.values.size() == shape.count());
  CHECK(agrees(host, ref, returned, &error, accuracy));

  const DType out_type = result_dtype(q.dtype, op);
  const std::size_t n = shape.count();
  const std::vector<std::uint64_t> zeros(n + 1, 0);  // room for the results and for the indices
  q.out = place.put(zeros.data(), n * size_of(out_type) + 8);
  if (returns_index(op)) q.out_index = static_cast<std::uint64_t*>(place.put(zeros.data(), n * 8 + 8));
  const Result written = r.reduce(q, options);
  CHECK(written.values.empty());
  std::vector<unsigned char> bytes(n * size_of(out_type) + 8);
  place.fetch(bytes.data(), q.out, n * size_of(out_type));
  Result fetched;
  for (std::size_t s = 0; s < n; ++s) fetched.values.push_back(Scalar::from_bytes(out_type, bytes.data() + s * size_of(out_type)));
  if (returns_index(op)) {
    fetched.indices.resize(n);
    place.fetch(fetched.indices.data(), q.out_index, n * 8);
  }
  CHECK(agrees(host, ref, fetched, &error, accuracy));
}

//! Every op and shape, and exact sums, for element type T on `r`.
template <class T>
void check_segments_for_type(Reducer& r, Placement& place, bool few) {
  std::mt19937_64 rng(run_seed() ^ (0x5e6ull + static_cast<std::uint64_t>(dtype_of<T>())));
  const std::vector<SegmentShape> shapes = segment_shapes(rng, few);
  int turn = 0;
  for (Op op : all_ops) {
    for (const SegmentShape& shape : shapes) {
      if (!reduces<T>(r, shape, op)) continue;
      const Pattern patterns[] = {Pattern::random, Pattern::ties, is_float_v<T> ? Pattern::nan : Pattern::negative};
      check_segments<T>(r, place, op, shape, patterns[turn++ % 3], rng);
    }
  }
  // Data off a 16-byte boundary: the GPU reads lone elements up to the first one, then vectors.
  for (const SegmentShape& shape : shapes)
    if (shape.name == "power-law lengths" || shape.name == "many segments of 1..32")
      for (Op op : {Op::sum, Op::argmax})
        if (reduces<T>(r, shape, op)) check_segments<T>(r, place, op, shape, Pattern::random, rng, Accuracy::standard, 1);
  if constexpr (is_float_v<T>)
    for (const SegmentShape& shape : shapes)
      if (reduces<T>(r, shape, Op::sum, Accuracy::exact)) check_segments<T>(r, place, Op::sum, shape, Pattern::random, rng, Accuracy::exact);
}

}  // namespace xreduce::test
