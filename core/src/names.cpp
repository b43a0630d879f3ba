#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

#include "xreduce/error.hpp"
#include "xreduce/backend/reducer.hpp"
#include "xreduce/scalar.hpp"

namespace xreduce {

std::string_view to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::ok: return "ok";
    case ErrorCode::invalid_argument: return "invalid_argument";
    case ErrorCode::empty_input: return "empty_input";
    case ErrorCode::unsupported: return "unsupported";
    case ErrorCode::unavailable: return "unavailable";
    case ErrorCode::unknown_backend: return "unknown_backend";
    case ErrorCode::config: return "config";
    case ErrorCode::plugin: return "plugin";
    case ErrorCode::io: return "io";
    case ErrorCode::out_of_memory: return "out_of_memory";
    case ErrorCode::internal: return "internal";
  }
  return "unknown";
}

std::string_view to_string(Support s) {
  switch (s) {
    case Support::none: return "none";
    case Support::exact: return "exact";
    case Support::inexact: return "inexact";
  }
  return "unknown";
}

std::string_view to_string(Engine e) {
  switch (e) {
    case Engine::cpu_serial: return "cpu-serial";
    case Engine::cpu_parallel: return "cpu-parallel";
    case Engine::gpu: return "gpu";
    case Engine::cpu_gpu: return "cpu+gpu";
  }
  return "unknown";
}

std::string Scalar::to_string() const {
  return visit_dtype(dtype_, [&](auto tag) {
    using T = decltype(tag);
    T v = get<T>();
    if constexpr (is_float_v<T>) {
      const double d = static_cast<double>(v);
      if (d != d) return std::string("nan");
      if (std::isinf(d)) return std::string(d > 0 ? "inf" : "-inf");
    }
    char buf[64];
    if constexpr (std::is_same_v<T, bool>) {
      return std::string(v ? "true" : "false");
    } else if constexpr (is_float16_v<T>) {
      // The shortest decimal that reads back to the same 16 bits (to_chars has no 16-bit floats).
      for (int digits = 1;; ++digits) {
        std::snprintf(buf, sizeof buf, "%.*g", digits, static_cast<double>(v));
        if (T(std::strtod(buf, nullptr)).bits == v.bits || digits >= 17) return std::string(buf);
      }
    } else {
      auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);  // shortest round-trip form for floats
      return std::string(buf, end);
    }
  });
}

}  // namespace xreduce
