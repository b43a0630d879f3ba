// libFuzzer target: the command's --shape and --axis parsers (cli/input.cpp), then the core's
// canonical form of the view they describe. The input is "SHAPE\nAXES\nFLAGS": shape and axes as
// the command takes them, and a byte a dimension that reverses it (odd) or leaves a gap after it
// (2). A bad shape or axis is a clean Error, never a crash; a good one gives a canonical request
// whose layout, result count and element count agree with the view.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "input.hpp"
#include "xreduce/backend/features.hpp"
#include "xreduce/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::size_t first = text.find('\n');
  const std::size_t second = first == std::string::npos ? std::string::npos : text.find('\n', first + 1);
  const std::string shape_text = text.substr(0, first);
  const std::string axes_text = first == std::string::npos ? "" : text.substr(first + 1, second - first - 1);
  const std::string flags = second == std::string::npos ? "" : text.substr(second + 1);
  try {
    const std::vector<std::int64_t> shape = xreduce::cli::parse_shape(shape_text, "--shape");
    const xreduce::Axes axes = xreduce::cli::parse_axes(axes_text, shape.size());
    xreduce::View view = xreduce::View::of(shape.data(), nullptr, shape.size());
    // Strides of a buffer laid out with the flags' gaps, some reversed; never read.
    std::int64_t step = 1;
    for (std::size_t k = shape.size(); k-- > 0;) {
      const unsigned char f = k < flags.size() ? static_cast<unsigned char>(flags[k]) : 0;
      view.strides[k] = (f & 1) ? -step : step;
      if (__builtin_mul_overflow(step, shape[k] + ((f & 2) ? 1 : 0), &step)) return 0;
    }
    static float element;
    xreduce::Request q = xreduce::Request::over(&element, xreduce::DType::f32, view, axes);
    q.keepdims = !flags.empty() && (flags.back() & 4);
    const xreduce::Request c = xreduce::canonical(q);
    std::uint64_t elements = 1, results = 1;
    for (std::size_t k = 0; k < shape.size(); ++k) {
      elements *= static_cast<std::uint64_t>(shape[k]);
      if (!axes.empty() && !axes.contains(k)) results *= static_cast<std::uint64_t>(shape[k]);
    }
    if (c.count != elements) __builtin_trap();
    if (elements > 0 && xreduce::result_count(c) != results) __builtin_trap();
    (void)xreduce::features_of(c, xreduce::Accuracy::standard);
    (void)xreduce::result_shape(q);
  } catch (const xreduce::Error&) {
  }
  return 0;
}
