#include "input.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <optional>
#include <regex>
#include <vector>

#include "xreduce/error.hpp"

namespace xreduce::cli {
namespace {

[[noreturn]] void fail(const std::filesystem::path& file, const std::string& why) {
  throw Error(ErrorCode::io, file.string() + ": " + why);
}

//! A read-only mapping of a whole file, unmapped when the last Array using it goes.
struct Mapping {
  const unsigned char* bytes = nullptr;
  std::size_t size = 0;
  ~Mapping() {
    if (bytes && size) munmap(const_cast<unsigned char*>(bytes), size);
  }
};

std::shared_ptr<Mapping> map_file(const std::filesystem::path& file) {
  int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(file, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    fail(file, "not a regular file");
  }
  auto m = std::make_shared<Mapping>();
  m->size = static_cast<std::size_t>(st.st_size);
  if (m->size > 0) {
    void* p = mmap(nullptr, m->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      close(fd);
      fail(file, std::string("cannot map: ") + std::strerror(errno));
    }
    m->bytes = static_cast<const unsigned char*>(p);
  }
  close(fd);
  return m;
}

constexpr unsigned char kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

bool has_npy_magic(const Mapping& m) { return m.size >= 6 && std::memcmp(m.bytes, kMagic, 6) == 0; }

std::optional<DType> dtype_of_descr(const std::string& d) {
  static const std::pair<const char*, DType> known[] = {{"f4", DType::f32}, {"f8", DType::f64}, {"i4", DType::i32},
                                                         {"i8", DType::i64}, {"u4", DType::u32}, {"u8", DType::u64}};
  for (auto& [code, t] : known)
    if (d.substr(1) == code) return t;
  return std::nullopt;
}

Array finish(const std::filesystem::path& file, std::shared_ptr<Mapping> m, std::size_t offset, DType dtype,
             std::size_t count, std::string description) {
  Array a;
  a.dtype = dtype;
  a.count = count;
  a.data = count ? m->bytes + offset : nullptr;
  a.owner = std::shared_ptr<const void>(m, m.get());
  a.description = file.filename().string() + " (" + description + ")";
  return a;
}

}  // namespace

Array read_npy(const std::filesystem::path& file) {
  auto m = map_file(file);
  if (!has_npy_magic(*m)) fail(file, "not a .npy file (no \\x93NUMPY magic)");
  if (m->size < 10) fail(file, "truncated .npy header");
  const unsigned major = m->bytes[6], minor = m->bytes[7];
  if (major < 1 || major > 3 || minor != 0)
    fail(file, "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                   " (supported: 1.0, 2.0, 3.0)");
  const std::size_t length_bytes = major == 1 ? 2 : 4;
  if (m->size < 8 + length_bytes) fail(file, "truncated .npy header");
  std::size_t header_len = 0;
  for (std::size_t i = 0; i < length_bytes; ++i) header_len |= std::size_t{m->bytes[8 + i]} << (8 * i);
  const std::size_t offset = 8 + length_bytes + header_len;
  if (offset > m->size) fail(file, "truncated .npy header (header says " + std::to_string(header_len) + " bytes)");
  const std::string header(reinterpret_cast<const char*>(m->bytes + 8 + length_bytes), header_len);

  std::smatch match;
  static const std::regex descr_re(R"('descr'\s*:\s*'([^']*)')");
  static const std::regex fortran_re(R"('fortran_order'\s*:\s*(True|False))");
  static const std::regex shape_re(R"('shape'\s*:\s*\(([^)]*)\))");
  if (!std::regex_search(header, match, descr_re)) fail(file, "header has no 'descr': " + header);
  const std::string descr = match[1];
  if (!std::regex_search(header, match, fortran_re)) fail(file, "header has no 'fortran_order': " + header);
  if (!std::regex_search(header, match, shape_re)) fail(file, "header has no 'shape': " + header);
  const std::string shape = match[1];

  if (descr.size() < 2) fail(file, "unsupported dtype '" + descr + "'");
  if (descr[0] == '>') fail(file, "big-endian data ('" + descr + "') is not supported; save it little-endian");
  std::optional<DType> dtype = descr[0] == '<' || descr[0] == '=' ? dtype_of_descr(descr) : std::nullopt;
  if (!dtype)
    fail(file, "unsupported dtype '" + descr + "' (supported: <f4 <f8 <i4 <i8 <u4 <u8, i.e. f32 f64 i32 i64 u32 u64)");

  // 1-D: "N," (a trailing comma, maybe spaces). Fortran order does not matter in one dimension.
  static const std::regex one_d(R"(\s*(\d+)\s*,\s*)");
  if (!std::regex_match(shape, match, one_d)) fail(file, "array must be 1-D, its shape is (" + shape + ")");
  const std::string digits = match[1];
  if (digits.size() > 19) fail(file, "shape (" + shape + ") is too large");
  const std::size_t count = std::stoull(digits);
  const std::size_t item = size_of(*dtype);
  if (count > (m->size - offset) / item)
    fail(file, "truncated: shape (" + shape + ") needs " + std::to_string(count * item) + " bytes of data, the file has " +
                   std::to_string(m->size - offset));
  if (m->size - offset != count * item)
    fail(file, std::to_string(m->size - offset - count * item) + " bytes after the data (corrupt file?)");
  return finish(file, std::move(m), offset, *dtype, count,
                "npy " + std::to_string(major) + ".0, " + std::string(to_string(*dtype)));
}

Array read_raw(const std::filesystem::path& file, DType dtype) {
  auto m = map_file(file);
  const std::size_t item = size_of(dtype);
  if (m->size % item != 0)
    fail(file, "size " + std::to_string(m->size) + " bytes is not a multiple of " + std::to_string(item) + " (" +
                   std::string(to_string(dtype)) + ")");
  const std::size_t count = m->size / item;
  return finish(file, std::move(m), 0, dtype, count, "raw " + std::string(to_string(dtype)));
}

Array read_input(const std::filesystem::path& file, std::optional<DType> dtype) {
  if (file.extension() == ".npy") return read_npy(file);
  auto m = map_file(file);
  if (has_npy_magic(*m)) return read_npy(file);
  if (!dtype) fail(file, "a raw file needs --dtype (or give a .npy file)");
  return read_raw(file, *dtype);
}

namespace {
std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
}  // namespace

Array generate(DType dtype, std::size_t n, std::uint64_t seed) {
  auto buffer = std::shared_ptr<std::uint64_t[]>(new std::uint64_t[(n * size_of(dtype) + 7) / 8 + 1]);
  const std::uint64_t key = splitmix64(seed);
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* out = reinterpret_cast<T*>(buffer.get());
    for (std::size_t i = 0; i < n; ++i) {
      std::uint64_t bits = splitmix64(key ^ (i * 0xd1342543de82ef95ULL));
      if constexpr (std::is_same_v<T, float>) out[i] = static_cast<float>(bits >> 40) * 0x1p-24f;
      else if constexpr (std::is_same_v<T, double>) out[i] = static_cast<double>(bits >> 11) * 0x1p-53;
      else if constexpr (std::is_signed_v<T>) out[i] = static_cast<T>(static_cast<std::int64_t>(bits >> 43) - (1 << 20));
      else out[i] = static_cast<T>(bits >> 44);
    }
  });
  Array a;
  a.dtype = dtype;
  a.count = n;
  a.data = buffer.get();
  a.owner = std::shared_ptr<const void>(buffer, buffer.get());
  a.description = "random " + std::string(to_string(dtype)) + ", seed " + std::to_string(seed);
  return a;
}

}  // namespace xreduce::cli
