#pragma once
//! The interface every backend implements, and what a backend says about itself.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "xreduce/request.hpp"

namespace xreduce {

//! How well a backend does one dtype/op combination.
enum class Support : std::uint8_t {
  none,     //!< refuses it with ErrorCode::unsupported
  exact,    //!< obeys the semantics table (floating sums within the stated tolerance)
  inexact,  //!< runs, but makes no accuracy promise (the seeds' naive loop)
};
//! What kind of engine a backend is; the dispatcher chooses among engines. cpu_gpu: the CPU and
//! a GPU at work on one request together.
enum class Engine : std::uint8_t { cpu_serial, cpu_parallel, gpu, cpu_gpu };

std::string_view to_string(Support);
std::string_view to_string(Engine);

//! The dtype x op table of a backend, and the memory spaces it reads.
class Capabilities {
 public:
  explicit constexpr Capabilities(Engine engine = Engine::cpu_serial) : engine_(engine) {}

  constexpr Capabilities& set(DType t, Op op, Support s) {
    table_[static_cast<int>(t)][static_cast<int>(op)] = s;
    return *this;
  }
  //! Sets one op for every dtype.
  constexpr Capabilities& set(Op op, Support s) {
    for (DType t : all_dtypes) set(t, op, s);
    return *this;
  }
  //! Sets every dtype and op.
  constexpr Capabilities& set_all(Support s) {
    for (Op op : all_ops) set(op, s);
    return *this;
  }
  constexpr Capabilities& accept(Memory m) {
    memory_mask_ |= bit(m);
    return *this;
  }
  //! Reduces records (Request::width > 1) column by column, for sum, prod, min and max.
  constexpr Capabilities& accept_records(bool yes = true) {
    records_ = yes;
    return *this;
  }
  //! Sums f32 and f64 exactly when asked (Accuracy::exact), returning Result::exact: single
  //! values, and records too if `records`. A backend without it refuses exact sums (unsupported).
  constexpr Capabilities& accept_exact_sums(bool records = true) {
    exact_sums_ = true;
    exact_records_ = records;
    return *this;
  }

  //! Reduces segmented requests (Request::segments) for every op it supports; exact sums of them
  //! too (Accuracy::exact) if `exact_sums`.
  constexpr Capabilities& accept_segments(bool exact_sums = false) {
    segments_ = true;
    exact_segments_ = exact_sums;
    return *this;
  }

  //! Computes several ops in one read (Request::ops), for every dtype: flat requests, and
  //! segmented ones too if `segments` (and accept_segments()).
  constexpr Capabilities& accept_ops(bool segments = false) {
    ops_ = true;
    segmented_ops_ = segments;
    return *this;
  }

  constexpr Engine engine() const { return engine_; }
  constexpr Support support(DType t, Op op) const {
    return table_[static_cast<int>(t)][static_cast<int>(op)];
  }
  //! `automatic` is accepted by everyone: it is resolved before the backend sees the request.
  constexpr bool accepts(Memory m) const { return m == Memory::automatic || (memory_mask_ & bit(m)); }
  constexpr bool records() const { return records_; }
  //! Whether it sums floats exactly (Accuracy::exact), of records (width > 1) if `records`.
  constexpr bool exact_sums(bool records = false) const { return exact_sums_ && (!records || exact_records_); }
  constexpr bool segments() const { return segments_; }
  constexpr bool exact_segments() const { return segments_ && exact_segments_; }
  //! Whether it does several ops in one read, of segments if `segmented`.
  constexpr bool ops(bool segmented = false) const { return ops_ && (!segmented || (segments_ && segmented_ops_)); }
  constexpr std::uint32_t memory_mask() const { return memory_mask_; }
  constexpr Capabilities& set_memory_mask(std::uint32_t mask) {
    memory_mask_ = mask;
    return *this;
  }

 private:
  static constexpr std::uint32_t bit(Memory m) { return 1u << static_cast<unsigned>(m); }
  Engine engine_;
  std::array<std::array<Support, all_ops.size()>, all_dtypes.size()> table_{};
  std::uint32_t memory_mask_ = bit(Memory::host);
  bool records_ = false;
  bool exact_sums_ = false;
  bool exact_records_ = false;
  bool segments_ = false;
  bool exact_segments_ = false;
  bool ops_ = false;
  bool segmented_ops_ = false;
};

//! Whether a backend can run on this machine now, and if not, why.
struct Availability {
  bool ok = true;
  std::string reason;  //!< empty when ok
  static Availability yes() { return {}; }
  static Availability no(std::string why) { return {false, std::move(why)}; }
  explicit operator bool() const { return ok; }
};

namespace detail {
struct ReducerAccess;
}

//! A reduction engine. Backends implement `do_reduce`; callers use `reduce`, which checks the
//! request once for every backend (null data, unsupported combinations, availability), answers
//! empty input, copies misaligned data to aligned memory, and names the backend in the result.
//! So `do_reduce` may assume count > 0, aligned non-null data and a supported combination.
//! Segmented requests (Request::segments) reach it even with count 0 (each segment still has a
//! result), always with Request::out (and out_index for argmin/argmax) set; their offsets are
//! the backend's to check as it reads them (they may be device memory): Error(invalid_argument)
//! for decreasing offsets or ones past Request::count. Requests with several ops
//! (Request::ops) always come with Request::ops_out set, for every requested stat (host memory
//! for flat ones), and reach it with count 0 only if segmented; the backend writes there.
class Reducer {
 public:
  virtual ~Reducer() = default;
  //! Stable name: "sequential", "tbb", "cuda.cascaded".
  virtual std::string_view name() const = 0;
  virtual Capabilities capabilities() const = 0;
  virtual Availability available() const = 0;

  //! Checks and runs one request. Throws Error.
  Result reduce(const Request& request, const Options& options = {});

  //! The settings this backend reads, from its config table (`[backends.<name>]`, or its
  //! plugin's) and from Options::settings. Default: none.
  virtual std::vector<SettingInfo> settings() const { return {}; }
  //! Takes this backend's settings from the config file, once, before any call; the keys are
  //! already checked against settings(). Throws Error(invalid_argument) for a bad value.
  virtual void configure(const Settings& /*from_config*/) {}

  //! A chunk of user-compiled work, for the template API (xreduce/custom.hpp): a plugin
  //! boundary cannot carry a user's operator, but a CPU backend's threads can run it.
  using ChunkBody = void (*)(void* context, std::size_t chunk);
  //! Runs body(context, c) for every c in [0, chunks), in any order, on this backend's threads
  //! (`threads` of them; 0: all). Returns false if this backend runs no host code (the default).
  virtual bool run_chunks(std::size_t /*chunks*/, ChunkBody, void* /*context*/, int /*threads*/) { return false; }

 protected:
  virtual Result do_reduce(const Request& request, const Options& options) = 0;

 private:
  friend struct detail::ReducerAccess;
};

}  // namespace xreduce
