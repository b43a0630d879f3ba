// libFuzzer target: the .npy reader (cli/input.cpp) on files of any content. The bytes become a
// memory-backed file, read through the same path as `xreduce run --input`: a clean Error for
// anything malformed, never a crash, a hang or a read past the mapping.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "input.hpp"
#include "xreduce/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const int fd = memfd_create("xreduce-fuzz-npy", MFD_CLOEXEC);
  if (fd < 0) return 0;
  std::size_t written = 0;
  while (written < size) {
    const ssize_t n = write(fd, data + written, size - written);
    if (n <= 0) break;
    written += static_cast<std::size_t>(n);
  }
  try {
    // The type the caller names (--dtype), drawn from the size: none, or one of every DType, so
    // that '<V2' files are read as bf16 (and the 16-bit types) as well as refused.
    std::optional<xreduce::DType> named;
    if (const std::size_t k = size % (xreduce::all_dtypes.size() + 1); k > 0) named = xreduce::all_dtypes[k - 1];
    const xreduce::cli::Array a = xreduce::cli::read_npy("/proc/self/fd/" + std::to_string(fd), named);
    // Touch every byte the reader says it holds: ASan reports a read past the mapping.
    volatile unsigned char sink = 0;
    const auto* bytes = static_cast<const unsigned char*>(a.data);
    for (std::size_t i = 0; i < a.count * xreduce::size_of(a.dtype); ++i) sink = sink ^ bytes[i];
  } catch (const xreduce::Error&) {
  }
  close(fd);
  return 0;
}
