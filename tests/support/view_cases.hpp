#pragma once
// One test body for N-D views over every backend, wherever its data lives (a Placement): random
// shapes (up to 9 dimensions, extents of 0 and 1 among them), random axes, strides that permute
// the dimensions, leave gaps and run backwards, with and without keepdims, results returned or
// written to the caller's `out`; each against the exact reference, which walks the view element
// by element. The host conformance suite (conformance/views.cpp) and the GPU suite
// (gpu/views.cpp) run it.

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "support/exact_data.hpp"
#include "support/mpfr_reference.hpp"
#include "support/placement.hpp"
#include "support/test_data.hpp"
#include "xreduce/backend/features.hpp"
#include "xreduce/backend/reducer.hpp"
#include "xreduce/validate.hpp"

namespace xreduce::test {
namespace xr = ::xreduce;

//! A random view of a buffer and the axes to reduce.
struct ViewCase {
  std::vector<std::int64_t> shape, strides;
  std::size_t span = 1;        //!< elements of the buffer the view lies in
  std::int64_t first = 0;      //!< where element (0, ..., 0) is in the buffer
  xr::Axes axes;
  bool keepdims = false;
  std::string text;
};

//! A view case as the tests' messages name it: shape, strides, axes, keepdims.
inline std::string describe(const ViewCase& v) {
  const std::size_t rank = v.shape.size();
  std::ostringstream s;
  s << "shape (";
  for (std::size_t d = 0; d < rank; ++d) s << (d ? ", " : "") << v.shape[d];
  s << "), strides (";
  for (std::size_t d = 0; d < rank; ++d) s << (d ? ", " : "") << v.strides[d];
  s << "), axes (";
  for (std::size_t d = 0, n = 0; d < rank; ++d)
    if (v.axes.contains(d)) s << (n++ ? ", " : "") << d;
  s << ")" << (v.keepdims ? ", keepdims" : "");
  return s.str();
}

//! Extents drawn from `extents` (at most `most` elements in all), laid out in a buffer in a random order of the dimensions, some
//! with a gap after each step, some reversed.
inline ViewCase draw_view(std::mt19937_64& rng, std::size_t rank, const std::vector<std::int64_t>& extents, std::int64_t most) {
  ViewCase v;
  v.shape.resize(rank);
  v.strides.resize(rank);
  std::int64_t elements = 0;
  do {  // at most `most` elements
    elements = 1;
    for (auto& e : v.shape) elements *= e = extents[rng() % extents.size()];
  } while (elements > most);
  std::vector<std::size_t> order(rank);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  std::int64_t step = rng() % 4 == 0 ? 2 : 1;  // sometimes every other element
  for (std::size_t d : order) {                // innermost first
    v.strides[d] = step;
    step *= std::max<std::int64_t>(v.shape[d], 1) + (rng() % 5 == 0 ? 1 : 0);
  }
  v.span = static_cast<std::size_t>(step);
  for (std::size_t d = 0; d < rank; ++d)
    if (rng() % 4 == 0 && v.shape[d] > 0) {  // reversed: element 0 at the far end
      v.first += (v.shape[d] - 1) * v.strides[d];
      v.strides[d] = -v.strides[d];
    }
  if (rng() % 5 != 0)  // else: no axes named, every one reduced
    for (std::size_t d = 0; d < rank; ++d)
      if (rng() % 2) v.axes.add(d);
  v.keepdims = rng() % 3 == 0;
  v.text = describe(v);
  return v;
}

//! What the results' shape must be, worked out here rather than by the library.
inline std::vector<std::int64_t> expected_shape(const ViewCase& v) {
  std::vector<std::int64_t> shape;
  for (std::size_t d = 0; d < v.shape.size(); ++d) {
    const bool reduced = v.axes.empty() || v.axes.contains(d);
    if (!reduced) shape.push_back(v.shape[d]);
    else if (v.keepdims) shape.push_back(1);
  }
  return shape;
}

//! Whether the view's reduction has a slice of no elements to take an extreme of: some reduced
//! extent is 0 and there is at least one result.
inline bool empty_slices(const ViewCase& v) {
  std::int64_t reduced = 1, kept = 1;
  for (std::size_t d = 0; d < v.shape.size(); ++d) (v.axes.empty() || v.axes.contains(d) ? reduced : kept) *= v.shape[d];
  return reduced == 0 && kept > 0;
}

//! Checks that `call` (a reduce) throws an xreduce::Error of `code`; `otherwise` fails the test.
template <class Call>
void check_refused(Call&& call, xr::ErrorCode code, const char* otherwise) {
  try {
    call();
    FAIL(otherwise);
  } catch (const xr::Error& e) {
    CHECK(e.code() == code);
  }
}

//! Reduces view `v` of fresh data by `op` with each of `reducers` that reads `place`'s memory and
//! does (dtype, op): the results returned, then written to `out` (placed by strides: Fortran
//! order of the kept axes in host memory; packed C order in device memory, where `out_strides`,
//! which the core applies on the host, cannot reach), each against the exact reference. A backend
//! that does not declare the view's layout class must refuse it with `unsupported`.
template <class T>
void check_view_case(const ViewCase& v, xr::Op op, xr::test::Pattern pattern, std::mt19937_64& rng, Placement& place,
                     const std::vector<xr::Reducer*>& reducers) {
  xr::test::Elements<T> buffer = xr::test::make_data<T>(pattern, op, v.span, rng);
  if constexpr (xr::is_float_v<T>)
    if (pattern == xr::test::Pattern::nan)  // about one element in 64, so that slices hold some
      for (T& x : buffer)
        if (rng() % 64 == 0) x = std::numeric_limits<T>::quiet_NaN();
  const xr::View view = xr::View::of(v.shape.data(), v.strides.data(), v.shape.size());
  xr::Request on_host = xr::Request::over(buffer.data() + v.first, xr::dtype_of<T>(), view, v.axes, op);
  on_host.keepdims = v.keepdims;
  on_host.memory = xr::Memory::host;
  xr::Request q = on_host;
  q.data = static_cast<const T*>(place.put(buffer.data(), v.span * sizeof(T))) + v.first;
  q.memory = place.memory;
  INFO("seed " << xr::test::run_seed() << " (replay with XREDUCE_TEST_SEED), " << to_string(op) << " of "
               << to_string(xr::dtype_of<T>()) << ", " << v.text << ", data " << std::string(xr::test::name(pattern)));
  const std::vector<std::int64_t> shape = expected_shape(v);
  const bool refuses_empty = empty_slices(v) && xr::OpSet{op}.needs_elements();
  const xr::Reference ref = refuses_empty ? xr::Reference{} : xr::exact_reference(on_host);

  for (xr::Reducer* r : reducers) {
    if (!r->capabilities().reads(place.memory) || r->capabilities().support(q.dtype, op) != xr::Support::exact) continue;
    INFO("backend " << r->name() << ", data in " << to_string(place.memory) << " memory");
    auto refused = [&](xr::ErrorCode code, const char* otherwise) { check_refused([&] { r->reduce(q); }, code, otherwise); };
    if (r->capabilities().support(xr::features_of(xr::canonical(q), xr::Accuracy::standard)) == xr::Support::none) {
      refused(xr::ErrorCode::unsupported, "no error for a layout it does not declare");
      continue;
    }
    if (refuses_empty) {
      refused(xr::ErrorCode::empty_input, "no error for an extreme of an empty slice");
      continue;
    }
    const xr::Result got = r->reduce(q);
    CHECK(got.shape == shape);
    double error = 0;
    const bool ok = xr::agrees(q, ref, got, &error);
    INFO("|error| " << error << ", tolerance " << xr::tolerance(q, ref));
    CHECK(ok);
    if (shape.empty() || got.values.empty()) continue;
    // Results of no elements are the core's to write, to host memory only (Reducer::reduce).
    const bool reads_nothing = std::find(v.shape.begin(), v.shape.end(), 0) != v.shape.end();
    if (place.memory != xr::Memory::host && reads_nothing) continue;

    // The same results into the caller's `out`, and the indices beside them: in host memory in
    // Fortran order of the kept axes (the first varies fastest), in device memory packed.
    std::vector<std::int64_t> kept;
    for (std::size_t d = 0; d < v.shape.size(); ++d)
      if (!v.axes.empty() && !v.axes.contains(d)) kept.push_back(v.shape[d]);
    std::vector<std::int64_t> out_strides(kept.size());
    std::int64_t step = 1;
    const bool fortran = place.memory == xr::Memory::host;
    for (std::size_t n = 0; n < kept.size(); ++n) {
      const std::size_t k = fortran ? n : kept.size() - 1 - n;
      out_strides[k] = step, step *= kept[k];
    }
    const xr::DType type = xr::result_dtype(q.dtype, op);
    std::vector<unsigned char> out(got.values.size() * xr::size_of(type));
    std::vector<std::uint64_t> out_index(got.values.size());
    xr::Request into = q;
    void* placed_out = place.put(out.data(), out.size());
    auto* placed_index = static_cast<std::uint64_t*>(place.put(out_index.data(), out_index.size() * sizeof(std::uint64_t)));
    into.out = placed_out;
    into.out_index = xr::returns_index(op) ? placed_index : nullptr;
    into.out_strides = out_strides.data();
    const xr::Result written = r->reduce(into);
    CHECK(written.values.empty());
    place.fetch(out.data(), placed_out, out.size());
    place.fetch(out_index.data(), placed_index, out_index.size() * sizeof(std::uint64_t));
    // Result s (C order over the kept axes) is at sum of its indices times out_strides. The
    // placed results are held to the reference, not to the first call's bits: a backend whose
    // split follows the run (hybrid) may round a float sum or product otherwise from call to call.
    xr::Result placed = got;
    for (std::size_t s = 0; s < got.values.size(); ++s) {
      std::size_t rest = s, at = 0;
      for (std::size_t k = kept.size(); k-- > 0;) {
        at += (rest % static_cast<std::size_t>(kept[k])) * static_cast<std::size_t>(out_strides[k]);
        rest /= static_cast<std::size_t>(kept[k]);
      }
      placed.values[s] = xr::Scalar::from_bytes(type, out.data() + at * xr::size_of(type));
      if (xr::returns_index(op)) placed.indices[s] = out_index[at];
    }
    const bool placed_ok = xr::agrees(q, ref, placed, &error);
    INFO("results placed by out_strides: |error| " << error);
    CHECK(placed_ok);
  }
}

//! `cases` random views of up to `max_rank` dimensions with extents drawn from `extents` (at
//! most `most` elements), each by a random op on random data, placed by a fresh `Place`.
template <class T, class Place>
void views_for(const std::vector<xr::Reducer*>& reducers, std::size_t cases, std::size_t max_rank,
               const std::vector<std::int64_t>& extents, std::int64_t most, std::uint64_t salt) {
  std::mt19937_64 rng(xr::test::run_seed() ^ salt ^ static_cast<std::uint64_t>(xr::dtype_of<T>()));
  std::vector<xr::test::Pattern> patterns{xr::test::Pattern::random, xr::test::Pattern::ties};
  if (xr::is_float_v<T>) patterns.push_back(xr::test::Pattern::nan);
  for (std::size_t c = 0; c < cases; ++c) {
    const ViewCase v = draw_view(rng, 1 + rng() % max_rank, extents, most);
    const xr::Op op = xr::all_ops[rng() % xr::all_ops.size()];
    Place place;
    check_view_case<T>(v, op, patterns[rng() % patterns.size()], rng, place, reducers);
  }
}

//! The exact sum of view `v` (Accuracy::exact) of adversarial float data (`shape`), placed by
//! `place`, from each of `reducers` that reads its memory: every result's bits MPFR's sum of that
//! result's elements (gathered by walking the view here), in C order over the kept axes. A
//! backend that does not declare exact sums of the view's layout must refuse with `unsupported`.
//! With `mixed`, each result's elements take a shape drawn from it instead (the gaps keep `shape`).
template <class T>
void check_exact_view_case(const ViewCase& v, ExactShape shape, std::mt19937_64& rng, Placement& place,
                           const std::vector<xr::Reducer*>& reducers, const std::vector<ExactShape>& mixed = {}) {
  auto draw_as = [&](ExactShape as, std::size_t n) {
    if constexpr (xr::is_float16_v<T>) return make_exact_data16<T>(as, n, rng);
    else return make_exact_data<T>(as, n, rng);
  };
  auto draw = [&](std::size_t n) { return draw_as(mixed.empty() ? shape : mixed[rng() % mixed.size()], n); };
  std::vector<T> buffer = draw(v.span);  // the gaps' elements; each result's are drawn below
  // Each result's elements: the kept axes' indices (C order, the last fastest), then every
  // reduced index.
  const std::size_t rank = v.shape.size();
  std::vector<std::size_t> kept, reduced;
  for (std::size_t d = 0; d < rank; ++d) (v.axes.empty() || v.axes.contains(d) ? reduced : kept).push_back(d);
  auto count_of = [&](const std::vector<std::size_t>& dims) {
    std::size_t n = 1;
    for (std::size_t d : dims) n *= static_cast<std::size_t>(v.shape[d]);
    return n;
  };
  auto offset_of = [&](const std::vector<std::size_t>& dims, std::size_t i) {  // i in C order over dims
    std::int64_t at = 0;
    for (std::size_t k = dims.size(); k-- > 0;) {
      const auto extent = static_cast<std::size_t>(v.shape[dims[k]]);
      at += static_cast<std::int64_t>(i % extent) * v.strides[dims[k]];
      i /= extent;
    }
    return at;
  };
  // Each result's elements drawn as one adversarial set of their own (a tie, a cancellation, an
  // overflow of that result's sum, not only of the whole buffer's), put where the view reads them.
  const std::size_t results = count_of(kept), per_result = count_of(reduced);
  std::vector<T> expected(results);
  for (std::size_t s = 0; s < results; ++s) {
    const std::vector<T> elements = draw(per_result);
    for (std::size_t e = 0; e < per_result; ++e) buffer[v.first + offset_of(kept, s) + offset_of(reduced, e)] = elements[e];
    expected[s] = mpfr_sum(elements.data(), per_result);
  }
  const xr::View view = xr::View::of(v.shape.data(), v.strides.data(), v.shape.size());
  xr::Request q = xr::Request::over(buffer.data() + v.first, xr::dtype_of<T>(), view, v.axes, xr::Op::sum);
  q.keepdims = v.keepdims;
  q.data = static_cast<const T*>(place.put(buffer.data(), v.span * sizeof(T))) + v.first;
  q.memory = place.memory;
  INFO("seed " << xr::test::run_seed() << " (replay with XREDUCE_TEST_SEED), exact sum of " << to_string(xr::dtype_of<T>())
               << ", " << v.text << ", data " << std::string(name(shape)));
  const xr::Options exact{.accuracy = xr::Accuracy::exact};
  for (xr::Reducer* r : reducers) {
    if (!r->capabilities().reads(place.memory)) continue;
    INFO("backend " << r->name() << ", data in " << to_string(place.memory) << " memory");
    if (r->capabilities().support(xr::features_of(xr::canonical(q), xr::Accuracy::exact)) == xr::Support::none) {
      check_refused([&] { r->reduce(q, exact); }, xr::ErrorCode::unsupported, "an exact sum from a backend that does not declare them");
      continue;
    }
    const xr::Result got = r->reduce(q, exact);
    CHECK(got.shape == expected_shape(v));
    if (results == 0) {  // a kept extent of 0
      CHECK(got.values.empty());
      continue;
    }
    if (got.values.empty()) {  // one result, as a value
      REQUIRE(results == 1);
      INFO("got " << got.value.to_string() << ", MPFR " << static_cast<double>(expected[0]));
      CHECK(same_bits(got.value.get<T>(), expected[0]));
      continue;
    }
    REQUIRE(got.values.size() == results);
    std::size_t wrong = 0, first_wrong = 0;
    for (std::size_t s = 0; s < results; ++s)
      if (!same_bits(got.values[s].get<T>(), expected[s]) && wrong++ == 0) first_wrong = s;
    INFO(wrong << " of " << results << " results differ from MPFR's; the first, result " << first_wrong << ": got "
                << (wrong ? got.values[first_wrong].to_string() : std::string()) << ", MPFR "
                << static_cast<double>(expected[first_wrong]));
    CHECK(wrong == 0);
  }
}

//! `cases` random views as views_for draws them, each summed exactly (check_exact_view_case) on
//! data of every adversarial shape in turn.
template <class T, class Place>
void exact_views_for(const std::vector<xr::Reducer*>& reducers, std::size_t cases, std::size_t max_rank,
                     const std::vector<std::int64_t>& extents, std::int64_t most, std::uint64_t salt) {
  std::mt19937_64 rng(xr::test::run_seed() ^ salt ^ 0xe7ac7ull ^ static_cast<std::uint64_t>(xr::dtype_of<T>()));
  for (std::size_t c = 0; c < cases; ++c) {
    const ViewCase v = draw_view(rng, 1 + rng() % max_rank, extents, most);
    Place place;
    check_exact_view_case<T>(v, all_exact_shapes[c % std::size(all_exact_shapes)], rng, place, reducers);
  }
}

//! Short rows and columns (3 to 1500 elements, where the CPU's exact sums go through a double, or
//! two for f64, while the elements' binades allow it, and f32's and bf16's else through ten
//! digits), as C-order matrices reduced along axis 1 and along axis 0, on data of every
//! adversarial shape: the hidden tie, which a double rounds away, and the piled digits among them.
template <class T, class Place>
void exact_short_rows_and_columns(const std::vector<xr::Reducer*>& reducers) {
  std::mt19937_64 rng(xr::test::run_seed() ^ 0x5407ull ^ static_cast<std::uint64_t>(xr::dtype_of<T>()));
  for (std::int64_t length : {3, 4, 5, 8, 16, 33, 256, 257, 1000, 1500})
    for (std::size_t axis : {1, 0}) {
      ViewCase v;
      const std::int64_t others = 1 + static_cast<std::int64_t>(rng() % 64);
      v.shape = axis == 1 ? std::vector<std::int64_t>{others, length} : std::vector<std::int64_t>{length, others};
      v.strides = {v.shape[1], 1};
      v.span = static_cast<std::size_t>(others * length);
      v.axes = xr::Axes{axis};
      v.text = describe(v);
      for (ExactShape shape : all_exact_shapes) {
        Place place;
        check_exact_view_case<T>(v, shape, rng, place, reducers);
      }
      // Rows that fill the CPU's ten digits' words fastest: those past 256 elements must carry.
      Place piled_place;
      check_exact_view_case<T>(v, ExactShape::piled, rng, piled_place, reducers);
      // Zero rows or columns beside uniform ones: the doubles of one block hold both, and a
      // column of -0s must still sum to -0.
      Place place;
      check_exact_view_case<T>(v, ExactShape::uniform, rng, place, reducers, {ExactShape::uniform, ExactShape::zeros});
    }
}

// Small extents, up to 9 dimensions: every layout class turns up, and dimensions of 0 and 1.
inline const std::vector<std::int64_t> kSmall{0, 1, 1, 2, 3, 4, 5, 7};
// Fewer, longer dimensions: the CPU backends' chunks and threads, rows and columns of thousands.
inline const std::vector<std::int64_t> kLong{1, 3, 17, 64, 257, 1000, 4099};

}  // namespace xreduce::test
