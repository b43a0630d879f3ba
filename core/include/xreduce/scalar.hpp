#pragma once
//! A value of any element type, tagged with its type.

#include <cstdint>
#include <cstring>
#include <string>

#include "xreduce/error.hpp"
#include "xreduce/types.hpp"

namespace xreduce {

class Scalar {
 public:
  Scalar() = default;  //!< f64 zero
  template <class T>
  explicit Scalar(T value) : dtype_(dtype_of<T>()) {
    std::memcpy(bytes_, &value, sizeof value);
  }
  //! Reassembles a scalar from its type and raw little-endian bytes (the plugin ABI's form).
  static Scalar from_bytes(DType t, const void* bytes) {
    Scalar s;
    s.dtype_ = t;
    std::memcpy(s.bytes_, bytes, size_of(t));
    return s;
  }

  DType dtype() const { return dtype_; }
  const void* bytes() const { return bytes_; }

  //! The value as T; throws if the scalar holds another type.
  template <class T>
  T get() const {
    if (dtype_ != dtype_of<T>())
      throw Error(ErrorCode::invalid_argument, "Scalar holds " + std::string(xreduce::to_string(dtype_)) +
                                                   ", not " + std::string(xreduce::to_string(dtype_of<T>())));
    T v;
    std::memcpy(&v, bytes_, sizeof v);
    return v;
  }
  //! The value converted to double (may round 64-bit integers).
  double to_double() const {
    return visit_dtype(dtype_, [&](auto tag) { return static_cast<double>(get<decltype(tag)>()); });
  }
  //! Exact text: integers in full, floats in the shortest form that reads back to the same value.
  std::string to_string() const;

  //! Same type and same value; NaN equals NaN here (a result that is NaN matches a NaN reference).
  friend bool operator==(const Scalar& a, const Scalar& b) {
    if (a.dtype_ != b.dtype_) return false;
    return visit_dtype(a.dtype_, [&](auto tag) {
      using T = decltype(tag);
      T x = a.get<T>(), y = b.get<T>();
      if constexpr (is_float_v<T>) {
        if (x != x && y != y) return true;  // the 16-bit floats compare as the floats they are
      }
      return x == y;
    });
  }

 private:
  DType dtype_ = DType::f64;
  alignas(8) unsigned char bytes_[8] = {};
};

}  // namespace xreduce
