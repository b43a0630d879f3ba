#pragma once
//! The one exception type of the library, and the codes it carries (also the plugin ABI's codes).

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace xreduce {

//! Stable numeric values: plugins return them across the C ABI.
enum class ErrorCode : std::int32_t {
  ok = 0,
  invalid_argument = 1,  //!< null data with count > 0, bad option value
  empty_input = 2,       //!< min/max/argmin/argmax of nothing
  unsupported = 3,       //!< the backend cannot do this dtype/op/memory combination
  unavailable = 4,       //!< the backend cannot run here (no GPU, plugin missing)
  unknown_backend = 5,   //!< no backend of that name is registered
  config = 6,            //!< malformed configuration file or value
  plugin = 7,            //!< a plugin could not be loaded or has the wrong ABI
  io = 8,                //!< unreadable, malformed or truncated input file
  out_of_memory = 9,     //!< host or device allocation failed
  internal = 10,         //!< a bug: please report it
};

std::string_view to_string(ErrorCode);

//! Every failure the library reports. `what()` is a complete sentence for a user.
class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace xreduce
