#include "input.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <optional>
#include <limits>
#include <new>
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
  // A FIFO or a device would block open() or read forever: refuse anything but a regular file
  // before opening it, and open without blocking in case it changes in between.
  struct stat before {};
  if (stat(file.c_str(), &before) != 0) fail(file, std::string("cannot open: ") + std::strerror(errno));
  if (!S_ISREG(before.st_mode)) fail(file, "not a regular file (a FIFO, device or folder cannot be read as an array)");
  int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
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

//! numpy's type codes, after the byte-order character: '<' or '=' (little-endian here), or '|'
//! (not applicable: one-byte types).
constexpr std::pair<const char*, DType> kDescrs[] = {
    {"f4", DType::f32}, {"f8", DType::f64}, {"i4", DType::i32}, {"i8", DType::i64}, {"u4", DType::u32},
    {"u8", DType::u64}, {"f2", DType::f16}, {"i1", DType::i8},  {"u1", DType::u8},  {"i2", DType::i16},
    {"u2", DType::u16}, {"b1", DType::boolean}};

std::optional<DType> dtype_of_descr(const std::string& d) {
  if (d.empty() || (d[0] != '<' && d[0] != '=' && d[0] != '|')) return std::nullopt;
  for (auto& [code, t] : kDescrs)
    if (d.substr(1) == code) return t;
  return std::nullopt;
}

//! The value of `key` in a .npy header's dictionary, as written (a quoted string, a tuple in
//! parentheses, a list in brackets, or a bare word), or nullopt if the key is absent. A small
//! bounded scan: headers are read from files of any content, and a backtracking regex runs out of
//! stack on long ones.
std::optional<std::string> header_value(const std::string& header, const std::string& key) {
  const std::string quoted = "'" + key + "'";
  std::size_t at = header.find(quoted);
  if (at == std::string::npos) return std::nullopt;
  at += quoted.size();
  auto skip_spaces = [&] {
    while (at < header.size() && (header[at] == ' ' || header[at] == '\t')) ++at;
  };
  skip_spaces();
  if (at >= header.size() || header[at] != ':') return std::nullopt;
  ++at;
  skip_spaces();
  if (at >= header.size()) return std::nullopt;
  const char open = header[at];
  const char close = open == '\'' ? '\'' : open == '(' ? ')' : open == '[' ? ']' : '\0';
  if (close == '\0') {  // a bare word: True, False
    const std::size_t end = header.find_first_of(",} ", at);
    return header.substr(at, end == std::string::npos ? std::string::npos : end - at);
  }
  const std::size_t end = header.find(close, at + 1);
  if (end == std::string::npos) return std::nullopt;
  return header.substr(at, end - at + 1);
}

//! A .npy shape, "(N, M, ...)" with any spaces and an optional trailing comma ("(N,)"), or "()"
//! for a 0-d array, as its extents; nullopt for anything else, more than kMaxRank extents, or an
//! extent of more than 19 digits.
std::optional<std::vector<std::int64_t>> dimensions_of(const std::string& shape) {
  std::vector<std::int64_t> dims;
  std::size_t i = 1;  // after '('
  auto spaces = [&] {
    while (i < shape.size() && shape[i] == ' ') ++i;
  };
  spaces();
  while (i < shape.size() && shape[i] >= '0' && shape[i] <= '9') {
    const std::size_t first = i;
    while (i < shape.size() && shape[i] >= '0' && shape[i] <= '9') ++i;
    if (i - first > 19 || dims.size() == kMaxRank) return std::nullopt;
    dims.push_back(static_cast<std::int64_t>(std::stoull(shape.substr(first, i - first))));
    spaces();
    if (i < shape.size() && shape[i] == ',') ++i;
    else break;  // only the last extent may go without its comma
    spaces();
  }
  if (i + 1 != shape.size() || shape[i] != ')') return std::nullopt;
  return dims;
}

//! A header's text for a message: at most 200 characters of it.
std::string excerpt(const std::string& text) { return text.size() <= 200 ? text : text.substr(0, 200) + "..."; }

Array finish(const std::filesystem::path& file, std::shared_ptr<Mapping> m, std::size_t offset, DType dtype,
             std::size_t count, std::string description, std::vector<std::int64_t> shape, bool fortran = false) {
  Array a;
  a.dtype = dtype;
  a.count = count;
  a.shape = std::move(shape);
  a.fortran = fortran;
  a.data = count ? m->bytes + offset : nullptr;
  a.owner = std::shared_ptr<const void>(m, m.get());
  a.description = file.filename().string() + " (" + description + ")";
  return a;
}

}  // namespace

Array read_npy(const std::filesystem::path& file, std::optional<DType> hint) {
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

  const std::optional<std::string> descr_value = header_value(header, "descr");
  if (!descr_value) fail(file, "header has no 'descr': " + excerpt(header));
  if (descr_value->front() == '[')
    fail(file, "structured dtypes (records with named fields) are not supported: 'descr' is " + excerpt(*descr_value));
  if (descr_value->front() != '\'') fail(file, "header's 'descr' is not a string: " + excerpt(*descr_value));
  const std::string descr = descr_value->substr(1, descr_value->size() - 2);
  const std::optional<std::string> fortran = header_value(header, "fortran_order");
  if (!fortran || (*fortran != "True" && *fortran != "False")) fail(file, "header has no 'fortran_order': " + excerpt(header));
  const std::optional<std::string> shape_value = header_value(header, "shape");
  if (!shape_value || shape_value->front() != '(') fail(file, "header has no 'shape': " + excerpt(header));
  const std::string shape = shape_value->substr(1, shape_value->size() - 2);

  if (descr.size() < 2) fail(file, "unsupported dtype '" + excerpt(descr) + "'");
  if (descr[0] == '>') fail(file, "big-endian data ('" + excerpt(descr) + "') is not supported; save it little-endian");
  std::optional<DType> dtype = dtype_of_descr(descr);
  if (descr.substr(1) == "V2") {
    // numpy has no bfloat16: ml_dtypes saves one as 'V2', two opaque bytes, which only the caller
    // can name.
    if (hint != DType::bf16 && hint != DType::f16 && hint != DType::i16 && hint != DType::u16)
      fail(file, "dtype '" + excerpt(descr) +
                     "' is two opaque bytes per element, as ml_dtypes saves bfloat16: give --dtype bf16 to read it as bfloat16");
    dtype = hint;
  }
  if (!dtype)
    fail(file, "unsupported dtype '" + excerpt(descr) +
                   "' (supported: <f2 <f4 <f8 |i1 <i2 <i4 <i8 |u1 <u2 <u4 <u8 |b1, i.e. f16 f32 f64 i8 i16 i32 i64 u8 u16 "
                   "u32 u64 bool, and bfloat16 from ml_dtypes' <V2 with --dtype bf16)");

  const std::optional<std::vector<std::int64_t>> dims = dimensions_of(*shape_value);
  if (!dims) fail(file, "shape (" + excerpt(shape) + ") is not a tuple of at most " + std::to_string(kMaxRank) + " extents");
  std::size_t count = 1;
  bool too_many = false;
  for (std::int64_t d : *dims) {
    too_many = too_many || (d != 0 && count > (std::size_t{1} << 62) / static_cast<std::size_t>(d));
    count = too_many ? count : count * static_cast<std::size_t>(d);
  }
  if (too_many) fail(file, "shape (" + excerpt(shape) + ") holds more than 2^62 elements");
  const std::size_t item = size_of(*dtype);
  if (count > (m->size - offset) / item)
    fail(file, "truncated: shape (" + excerpt(shape) + ") needs " + std::to_string(count * item) +
                   " bytes of data, the file has " + std::to_string(m->size - offset));
  if (m->size - offset != count * item)
    fail(file, std::to_string(m->size - offset - count * item) + " bytes after the data (corrupt file?)");
  // Fortran order matters from two dimensions on: the first then varies fastest.
  return finish(file, std::move(m), offset, *dtype, count, "npy " + std::to_string(major) + ".0, " + std::string(to_string(*dtype)),
                *dims, *fortran == "True");
}

Array read_raw(const std::filesystem::path& file, DType dtype) {
  auto m = map_file(file);
  const std::size_t item = size_of(dtype);
  if (m->size % item != 0)
    fail(file, "size " + std::to_string(m->size) + " bytes is not a multiple of " + std::to_string(item) + " (" +
                   std::string(to_string(dtype)) + ")");
  const std::size_t count = m->size / item;
  return finish(file, std::move(m), 0, dtype, count, "raw " + std::string(to_string(dtype)), {static_cast<std::int64_t>(count)});
}

Array read_input(const std::filesystem::path& file, std::optional<DType> dtype) {
  if (file.extension() == ".npy") return read_npy(file, dtype);
  auto m = map_file(file);
  if (has_npy_magic(*m)) return read_npy(file, dtype);
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

std::size_t parse_count(const std::string& text, const std::string& option) {
  const bool digits = !text.empty() && text.size() <= 19 && text.find_first_not_of("0123456789") == std::string::npos;
  if (!digits || (text.size() > 1 && text[0] == '0') || std::stoull(text) > (std::uint64_t{1} << 62))
    throw Error(ErrorCode::invalid_argument,
                option + " " + text + ": give a whole number in decimal, 0 to 2^62 (no sign, no leading zero)");
  return static_cast<std::size_t>(std::stoull(text));
}

Array generate(DType dtype, std::size_t n, std::uint64_t seed, std::size_t first) {
  // n * size: a count near 2^62 would wrap the byte count to a small buffer.
  if (n > (std::numeric_limits<std::size_t>::max() - 16) / size_of(dtype))
    throw Error(ErrorCode::invalid_argument, std::to_string(n) + " elements of " + std::string(to_string(dtype)) +
                                                 " are more bytes than this machine can address");
  const std::size_t words = (n * size_of(dtype) + 7) / 8 + 1;
  std::shared_ptr<std::uint64_t[]> buffer(new (std::nothrow) std::uint64_t[words]);
  if (!buffer)
    throw Error(ErrorCode::out_of_memory, "cannot allocate " + std::to_string(words * 8) + " bytes for " +
                                              std::to_string(n) + " generated elements of " + std::string(to_string(dtype)));
  const std::uint64_t key = splitmix64(seed);
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* out = reinterpret_cast<T*>(buffer.get());
    for (std::size_t i = 0; i < n; ++i) {
      std::uint64_t bits = splitmix64(key ^ ((first + i) * 0xd1342543de82ef95ULL));
      // Floats uniform in [0, 1) at their own precision; 32- and 64-bit integers in [-2^20, 2^20)
      // or [0, 2^20); the narrower ones over their whole range; bools true or false alike.
      if constexpr (std::is_same_v<T, float>) out[i] = static_cast<float>(bits >> 40) * 0x1p-24f;
      else if constexpr (std::is_same_v<T, double>) out[i] = static_cast<double>(bits >> 11) * 0x1p-53;
      else if constexpr (std::is_same_v<T, f16>) out[i] = f16(static_cast<double>(bits >> 53) * 0x1p-11);
      else if constexpr (std::is_same_v<T, bf16>) out[i] = bf16(static_cast<double>(bits >> 56) * 0x1p-8);
      else if constexpr (std::is_same_v<T, bool>) out[i] = (bits >> 63) != 0;
      else if constexpr (sizeof(T) <= 2) out[i] = static_cast<T>(bits >> (64 - 8 * sizeof(T)));
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
  a.shape = {static_cast<std::int64_t>(n)};
  return a;
}

View Array::view() const {
  std::vector<std::int64_t> strides(shape.size());
  std::int64_t step = 1;
  for (std::size_t i = 0; i < shape.size(); ++i) {  // Fortran order: the first extent fastest
    const std::size_t k = fortran ? i : shape.size() - 1 - i;
    strides[k] = step;
    step *= shape[k] > 0 ? shape[k] : 1;
  }
  return View::of(shape.data(), strides.data(), shape.size());
}

namespace {
//! A comma-separated list's items, spaces around them dropped.
std::vector<std::string> items_of(const std::string& text) {
  std::vector<std::string> items;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    std::string item = text.substr(start, comma - start);
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    items.push_back(item);
    start = comma + 1;
  }
  return items;
}
}  // namespace

std::vector<std::int64_t> parse_shape(const std::string& text, const std::string& option) {
  std::vector<std::int64_t> shape;
  std::size_t count = 1;
  for (const std::string& item : items_of(text)) {
    if (shape.size() == kMaxRank)
      throw Error(ErrorCode::invalid_argument, option + " " + text + ": at most " + std::to_string(kMaxRank) + " extents");
    const std::size_t extent = parse_count(item, option + " " + text + ": an extent");
    if (extent != 0 && count > (std::size_t{1} << 62) / extent)
      throw Error(ErrorCode::invalid_argument, option + " " + text + ": more than 2^62 elements");
    count *= extent;
    shape.push_back(static_cast<std::int64_t>(extent));
  }
  return shape;
}

Axes parse_axes(const std::string& text, std::size_t rank) {
  Axes axes;
  if (text.empty()) return axes;
  const auto r = static_cast<long long>(rank);
  for (const std::string& item : items_of(text)) {
    const bool negative = !item.empty() && item[0] == '-';
    const std::string digits = negative ? item.substr(1) : item;
    if (digits.empty() || digits.size() > 3 || digits.find_first_not_of("0123456789") != std::string::npos)
      throw Error(ErrorCode::invalid_argument, "--axis " + text + ": '" + item + "' is not an axis (a whole number, negative from the end)");
    const long long k = negative ? -std::stoll(digits) : std::stoll(digits);
    if (k < -r || k >= r)
      throw Error(ErrorCode::invalid_argument, "--axis " + text + ": axis " + item + " is not one of the array's " +
                                                   std::to_string(rank) + (rank == 1 ? " dimension" : " dimensions"));
    const auto axis = static_cast<std::size_t>(k < 0 ? k + r : k);
    if (axes.contains(axis)) throw Error(ErrorCode::invalid_argument, "--axis " + text + ": axis " + std::to_string(axis) + " is named twice");
    axes.add(axis);
  }
  return axes;
}

void write_npy(const std::filesystem::path& file, DType dtype, const std::vector<std::int64_t>& shape, const void* values) {
  // In the order of DType; bf16 as ml_dtypes saves it (numpy has no code for it).
  static constexpr const char* descr[] = {"<f4", "<f8", "<i4", "<i8", "<u4", "<u8", "<f2",
                                          "<V2", "|i1", "|u1", "<i2", "<u2", "|b1"};
  static_assert(std::size(descr) == all_dtypes.size());
  std::size_t count = 1;
  std::string dims;  // "3, 4"; one dimension keeps its comma, "3,"
  for (std::size_t k = 0; k < shape.size(); ++k) {
    count *= static_cast<std::size_t>(shape[k]);
    dims += (k ? ", " : "") + std::to_string(shape[k]);
  }
  if (shape.size() == 1) dims += ",";
  std::string header = "{'descr': '" + std::string(descr[static_cast<int>(dtype)]) + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  // Padded with spaces and a line break so that the data start on a 64-byte boundary (npy 1.0).
  const std::size_t total = (10 + header.size() + 1 + 63) / 64 * 64;
  header.append(total - 10 - header.size() - 1, ' ');
  header.push_back('\n');
  std::ofstream out(file, std::ios::binary);
  const unsigned char preamble[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, static_cast<unsigned char>(header.size() & 0xff),
                                      static_cast<unsigned char>(header.size() >> 8)};
  out.write(reinterpret_cast<const char*>(preamble), sizeof preamble);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(static_cast<const char*>(values), static_cast<std::streamsize>(count * size_of(dtype)));
  out.close();
  if (!out) throw Error(ErrorCode::io, file.string() + ": cannot write the results");
}

}  // namespace xreduce::cli
