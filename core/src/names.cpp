#include <charconv>
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
    if constexpr (std::is_floating_point_v<T>) {
      if (v != v) return std::string("nan");
      if (v == std::numeric_limits<T>::infinity()) return std::string("inf");
      if (v == -std::numeric_limits<T>::infinity()) return std::string("-inf");
    }
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);  // shortest round-trip form for floats
    return std::string(buf, end);
  });
}

}  // namespace xreduce
