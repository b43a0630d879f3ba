// Rows (layout inner) and segments at offsets (layout ragged) over every backend that reads host
// memory: the shared body of support/segment_cases.hpp, and the refusals every backend owes.

#include <doctest/doctest.h>

#include "conformance/backends.hpp"
#include "support/segment_cases.hpp"

namespace xr = xreduce;
using xr::test::backends, xr::test::memory_for, xr::test::quick;

namespace {

template <class T>
void segments_for_type() {
  xr::test::HostPlacement host;
  for (xr::Reducer* r : backends())
    if (memory_for(*r) == xr::Memory::host) xr::test::check_segments_for_type<T>(*r, host, quick());
}

}  // namespace

TEST_CASE("every backend: rows and segments, f32") { segments_for_type<float>(); }
TEST_CASE("every backend: rows and segments, f64") { segments_for_type<double>(); }
TEST_CASE("every backend: rows and segments, i32") { segments_for_type<std::int32_t>(); }
TEST_CASE("every backend: rows and segments, i64") { segments_for_type<std::int64_t>(); }
TEST_CASE("every backend: rows and segments, u32") { segments_for_type<std::uint32_t>(); }
TEST_CASE("every backend: rows and segments, u64") { segments_for_type<std::uint64_t>(); }
TEST_CASE("every backend: rows and segments, f16") { segments_for_type<xr::f16>(); }
TEST_CASE("every backend: rows and segments, bf16") { segments_for_type<xr::bf16>(); }
TEST_CASE("every backend: rows and segments, i8") { segments_for_type<std::int8_t>(); }
TEST_CASE("every backend: rows and segments, u16") { segments_for_type<std::uint16_t>(); }
TEST_CASE("every backend: rows and segments, bool") { segments_for_type<bool>(); }

TEST_CASE("every backend: bad segmented requests are refused, never read out of bounds") {
  std::vector<float> x(100, 1.0f);
  auto code_of = [](xr::Reducer& r, const xr::Request& q) {
    try {
      r.reduce(q);
    } catch (const xr::Error& e) {
      return e.code();
    }
    return xr::ErrorCode::ok;
  };
  for (xr::Reducer* r : backends()) {
    if (memory_for(*r) != xr::Memory::host) continue;
    INFO("backend " << r->name());
    xr::Request q{x.data(), x.size(), xr::DType::f32, xr::Op::sum, xr::Memory::host};
    const std::vector<std::uint64_t> decreasing{0, 50, 40, 100}, past_end{0, 50, 101}, fine{0, 50, 100};
    q.segments = xr::Segments::at(fine.data(), 2);
    if (xr::test::support_of(*r, q) == xr::Support::none) {
      CHECK_THROWS_WITH_AS(r->reduce(q), doctest::Contains("layout ragged"), xr::Error);
      continue;
    }
    q.segments = xr::Segments{3, nullptr};  // the old spelling of equal rows
    CHECK_THROWS_WITH_AS(r->reduce(q), doctest::Contains("Request::rows"), xr::Error);
    q.segments = xr::Segments::at(decreasing.data(), 3);
    CHECK_THROWS_WITH_AS(r->reduce(q), doctest::Contains("decrease"), xr::Error);
    q.segments = xr::Segments::at(past_end.data(), 2);
    CHECK_THROWS_WITH_AS(r->reduce(q), doctest::Contains("past the 100 elements"), xr::Error);
    q.segments = xr::Segments::at(fine.data(), 2);
    xr::Request both = q;  // a view and segments
    both.view = xr::View::of({100});
    CHECK(code_of(*r, both) == xr::ErrorCode::invalid_argument);
    q.op = xr::Op::argmax;
    float out[2];
    q.out = out;
    CHECK_THROWS_WITH_AS(r->reduce(q), doctest::Contains("out_index"), xr::Error);
  }
}
