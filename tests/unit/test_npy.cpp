#include <doctest/doctest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "input.hpp"
#include "xreduce/xreduce.hpp"

namespace xr = xreduce;

namespace {

std::filesystem::path temp_dir() {
  auto dir = std::filesystem::temp_directory_path() / ("xreduce-npy-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

//! Writes a .npy file the way NumPy does: magic, version, header length, dict padded with
//! spaces to a multiple of 64 and ended by a newline, then the data.
std::filesystem::path write_npy(const std::string& name, int major, const std::string& dict, const void* data,
                                std::size_t bytes) {
  const std::size_t prefix = major == 1 ? 10 : 12;
  std::string header = dict;
  while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += '\0';
  for (std::size_t i = 0; i < prefix - 8; ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  out += header;
  out.append(static_cast<const char*>(data), bytes);
  auto path = temp_dir() / name;
  std::ofstream(path, std::ios::binary) << out;
  return path;
}

std::string io_error(const std::filesystem::path& p) {
  try {
    xr::cli::read_npy(p);
  } catch (const xr::Error& e) {
    CHECK(e.code() == xr::ErrorCode::io);
    return e.what();
  }
  FAIL("no error for " << p);
  return {};
}

}  // namespace

TEST_CASE("npy: versions 1.0, 2.0 and 3.0 of every dtype read back exactly") {
  for (int major : {1, 2, 3}) {
    std::vector<double> d{1.5, -2.25, 1e300};
    auto a = xr::cli::read_npy(write_npy("f8.npy", major, "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", d.data(), 24));
    CHECK(a.dtype == xr::DType::f64);
    REQUIRE(a.count == 3);
    CHECK(std::memcmp(a.data, d.data(), 24) == 0);
  }
  const std::pair<const char*, xr::DType> kinds[] = {
      {"<f4", xr::DType::f32}, {"<i4", xr::DType::i32}, {"<i8", xr::DType::i64}, {"<u4", xr::DType::u32},
      {"<u8", xr::DType::u64}, {"<f2", xr::DType::f16}, {"|i1", xr::DType::i8},  {"|u1", xr::DType::u8},
      {"<i2", xr::DType::i16}, {"<u2", xr::DType::u16}, {"|b1", xr::DType::boolean}, {"=f2", xr::DType::f16}};
  for (auto [descr, t] : kinds) {
    std::vector<unsigned char> bytes(5 * xr::size_of(t), 7);
    auto a = xr::cli::read_npy(write_npy("k.npy", 1, std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (5,), }",
                                         bytes.data(), bytes.size()));
    CHECK(a.dtype == t);
    CHECK(a.count == 5);
  }
  auto empty = xr::cli::read_npy(write_npy("empty.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (0,), }", nullptr, 0));
  CHECK(empty.count == 0);
  // Fortran order is the same layout in one dimension.
  float one = 1;
  CHECK(xr::cli::read_npy(write_npy("fo.npy", 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }", &one, 4)).count == 1);
  // A 0-d array is one element, with no dimensions.
  const auto scalar = xr::cli::read_npy(write_npy("0d.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }", &one, 4));
  CHECK(scalar.count == 1);
  CHECK(scalar.shape.empty());
}

TEST_CASE("npy: N-D arrays in C and Fortran order read as views with their strides") {
  float data[24];
  for (int i = 0; i < 24; ++i) data[i] = static_cast<float>(i);
  const auto c = xr::cli::read_npy(write_npy("c3.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, 4), }", data, 96));
  CHECK(c.count == 24);
  CHECK(c.shape == std::vector<std::int64_t>{2, 3, 4});
  const xr::View cv = c.view();
  REQUIRE(cv.rank == 3);
  CHECK((cv.strides[0] == 12 && cv.strides[1] == 4 && cv.strides[2] == 1));
  const auto f = xr::cli::read_npy(write_npy("f3.npy", 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3, 4), }", data, 96));
  CHECK(f.shape == std::vector<std::int64_t>{2, 3, 4});
  const xr::View fv = f.view();
  REQUIRE(fv.rank == 3);
  CHECK((fv.strides[0] == 1 && fv.strides[1] == 2 && fv.strides[2] == 6));
  // Element (i, j, k) of the Fortran file is data[i + 2 j + 6 k].
  const auto* x = static_cast<const float*>(f.data);
  CHECK(x[1 * fv.strides[0] + 2 * fv.strides[1] + 3 * fv.strides[2]] == 1 + 4 + 18);
}

TEST_CASE("npy: shapes and axes given as text") {
  CHECK(xr::cli::parse_shape("100,200,3", "--shape") == std::vector<std::int64_t>{100, 200, 3});
  CHECK(xr::cli::parse_shape("0", "--shape") == std::vector<std::int64_t>{0});
  for (const char* bad : {"", "1,,2", "-1", "1,x", "010", "4611686018427387904,2", "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1"})
    CHECK_THROWS_AS(xr::cli::parse_shape(bad, "--shape"), xr::Error);
  CHECK(xr::cli::parse_axes("0,2", 3) == xr::Axes{0, 2});
  CHECK(xr::cli::parse_axes("-1", 3) == xr::Axes{2});
  CHECK(xr::cli::parse_axes("", 3).empty());
  for (const char* bad : {"3", "-4", "0,0", "0,-3", "1,x", ","}) {
    INFO(bad);
    CHECK_THROWS_AS(xr::cli::parse_axes(bad, 3), xr::Error);
  }
}

TEST_CASE("npy: malformed, truncated and unsupported files are clear errors") {
  float data[4] = {1, 2, 3, 4};
  const std::string good = "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }";
  CHECK(io_error(write_npy("trunc.npy", 1, good, data, 12)).find("truncated") != std::string::npos);
  CHECK(io_error(write_npy("extra.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", data, 16))
            .find("bytes after the data") != std::string::npos);
  CHECK(io_error(write_npy("be.npy", 1, "{'descr': '>f4', 'fortran_order': False, 'shape': (4,), }", data, 16))
            .find("big-endian") != std::string::npos);
  CHECK(io_error(write_npy("2d.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", data, 16))
            .find("truncated: shape (2, 3) needs 24 bytes") != std::string::npos);
  std::string dims;
  for (int k = 0; k < 17; ++k) dims += "1, ";
  CHECK(io_error(write_npy("17d.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }", data, 4))
            .find("at most 16 extents") != std::string::npos);
  CHECK(io_error(write_npy("neg.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, -2), }", data, 16))
            .find("shape") != std::string::npos);
  CHECK(io_error(write_npy("c8.npy", 1, "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", data, 16))
            .find("unsupported dtype '<c8'") != std::string::npos);
  // ml_dtypes' bfloat16 is '<V2' in a .npy: two opaque bytes, read only when the caller names the type.
  const std::string v2 = "{'descr': '<V2', 'fortran_order': False, 'shape': (8,), }";
  CHECK(io_error(write_npy("v2.npy", 1, v2, data, 16)).find("--dtype bf16") != std::string::npos);
  CHECK(xr::cli::read_npy(write_npy("v2.npy", 1, v2, data, 16), xr::DType::bf16).dtype == xr::DType::bf16);
  CHECK(io_error(write_npy("obj.npy", 1, "{'descr': '|O', 'fortran_order': False, 'shape': (4,), }", data, 16))
            .find("unsupported dtype") != std::string::npos);
  CHECK(io_error(write_npy("nodescr.npy", 1, "{'fortran_order': False, 'shape': (4,), }", data, 16)).find("no 'descr'") !=
        std::string::npos);
  CHECK(io_error(write_npy("v4.npy", 4, good, data, 16)).find("version 4.0") != std::string::npos);

  auto dir = temp_dir();
  std::ofstream(dir / "magic.npy", std::ios::binary) << "NOTNUMPY and some more bytes";
  CHECK(io_error(dir / "magic.npy").find("magic") != std::string::npos);
  std::ofstream(dir / "short.npy", std::ios::binary) << std::string("\x93NUMPY\x01\x00\xff\x00", 10);
  CHECK(io_error(dir / "short.npy").find("truncated .npy header") != std::string::npos);
  std::ofstream(dir / "tiny.npy", std::ios::binary) << std::string("\x93NUMPY\x01", 7);
  CHECK(io_error(dir / "tiny.npy").find("truncated") != std::string::npos);
  CHECK(io_error(dir / "missing.npy").find("cannot open") != std::string::npos);
}

TEST_CASE("raw input: size must be a whole number of elements; .npy is recognised by content") {
  auto dir = temp_dir();
  std::ofstream(dir / "seven.bin", std::ios::binary) << "1234567";
  CHECK_THROWS_WITH_AS(xr::cli::read_input(dir / "seven.bin", xr::DType::f32), doctest::Contains("not a multiple of 4"), xr::Error);
  CHECK_THROWS_WITH_AS(xr::cli::read_input(dir / "seven.bin", std::nullopt), doctest::Contains("needs --dtype"), xr::Error);
  std::ofstream(dir / "eight.bin", std::ios::binary) << "12345678";
  CHECK(xr::cli::read_input(dir / "eight.bin", xr::DType::i32).count == 2);
  float x = 1;
  auto renamed = write_npy("data.dat", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", &x, 4);
  CHECK(xr::cli::read_input(renamed, xr::DType::u64).dtype == xr::DType::f32);
}

TEST_CASE("generated data is the same for the same seed and differs for another") {
  auto a = xr::cli::generate(xr::DType::i32, 1000, 7), b = xr::cli::generate(xr::DType::i32, 1000, 7),
       c = xr::cli::generate(xr::DType::i32, 1000, 8);
  CHECK(std::memcmp(a.data, b.data, 4000) == 0);
  CHECK(std::memcmp(a.data, c.data, 4000) != 0);
  auto f = xr::cli::generate(xr::DType::f32, 1000, 1);
  for (std::size_t i = 0; i < f.count; ++i) {
    float v = static_cast<const float*>(f.data)[i];
    REQUIRE(v >= 0.0f);
    REQUIRE(v < 1.0f);
  }
}
