#pragma once
//! For plugin authors: turns C++ Reducers into the C ABI of xreduce/backend/plugin.h. Header-only, so a
//! plugin needs the public headers and nothing else. Usage:
//!
//!   extern "C" XREDUCE_PLUGIN_EXPORT int32_t xreduce_plugin_init_v2(
//!       uint32_t host_abi, xreduce_plugin_v2* out, char* message, size_t size) {
//!     static xreduce::plugin::Exporter exporter("my-plugin", [] {
//!       std::vector<xreduce::plugin::Entry> v;
//!       v.push_back({std::make_unique<MyReducer>(), 50});
//!       return v;
//!     });
//!     return exporter.init(host_abi, out, message, size);
//!   }

#include <algorithm>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "xreduce/backend/plugin.h"
#include "xreduce/backend/reducer.hpp"

#define XREDUCE_PLUGIN_EXPORT __attribute__((visibility("default")))

namespace xreduce {
namespace detail {
// The plugin side calls the backend directly: the host has already checked the request.
struct ReducerAccess {
  static Result run(Reducer& r, const Request& q, const Options& o) { return r.do_reduce(q, o); }
};

inline void copy_message(const std::string& text, char* out, size_t size) {
  if (out == nullptr || size == 0) return;
  size_t n = std::min(text.size(), size - 1);
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}
}  // namespace detail

namespace plugin {

//! How ABI 2 numbers what it carries of ops (xreduce/backend/plugin.h).
namespace v2 {
//! The ops of its support table, [dtype][op]: sum to argmax.
inline constexpr std::size_t kTableOps = 6;
//! An op's number among several in one pass (XREDUCE_V2_STAT_*); -1 for one it cannot carry.
constexpr int stat_of(Op op) {
  switch (op) {
    case Op::sum: return XREDUCE_V2_STAT_SUM;
    case Op::min: return XREDUCE_V2_STAT_MIN;
    case Op::max: return XREDUCE_V2_STAT_MAX;
    case Op::argmin: return XREDUCE_V2_STAT_ARGMIN;
    case Op::argmax: return XREDUCE_V2_STAT_ARGMAX;
    case Op::sumsq: return XREDUCE_V2_STAT_SUM_OF_SQUARES;
    case Op::prod: break;
  }
  return -1;
}
constexpr std::uint32_t stat_bits(OpSet ops) {
  std::uint32_t bits = 0;
  for (Op op : all_ops)
    if (ops.contains(op) && stat_of(op) >= 0) bits |= 1u << stat_of(op);
  return bits;
}
constexpr OpSet ops_of_stat_bits(std::uint32_t bits) {
  OpSet ops;
  for (Op op : all_ops)
    if (stat_of(op) >= 0 && (bits >> stat_of(op)) & 1u) ops.add(op);
  return ops;
}
}  // namespace v2

struct Entry {
  std::unique_ptr<Reducer> reducer;
  int priority = 0;
};

class Exporter {
 public:
  //! `make` runs on the first init, so a plugin does no work at dlopen time.
  Exporter(std::string name, std::function<std::vector<Entry>()> make)
      : name_(std::move(name)), make_(std::move(make)) {}

  std::int32_t init(std::uint32_t host_abi, xreduce_plugin_v2* out, char* message, size_t size,
                    std::int32_t (*locate)(const void*) = nullptr) {
    if (host_abi != XREDUCE_PLUGIN_ABI_VERSION) {
      detail::copy_message("plugin '" + name_ + "' speaks ABI " + std::to_string(XREDUCE_PLUGIN_ABI_VERSION) +
                               ", host speaks " + std::to_string(host_abi),
                           message, size);
      return static_cast<std::int32_t>(ErrorCode::plugin);
    }
    try {
      if (entries_.empty()) build();
    } catch (const std::exception& e) {
      detail::copy_message(e.what(), message, size);
      return static_cast<std::int32_t>(ErrorCode::plugin);
    }
    out->abi_version = XREDUCE_PLUGIN_ABI_VERSION;
    out->struct_size = sizeof(xreduce_plugin_v2);
    out->name = name_.c_str();
    out->backend_count = backends_.size();
    out->backends = backends_.data();
    out->locate = locate;
    return 0;
  }

 private:
  void build() {
    entries_ = make_();
    names_.reserve(entries_.size());  // c_str() pointers into names_ and infos_ must stay put
    infos_.reserve(entries_.size());
    for (Entry& e : entries_) {
      names_.emplace_back(e.reducer->name());
      Capabilities caps = e.reducer->capabilities();
      xreduce_backend_v2 b{};
      b.name = names_.back().c_str();
      b.priority = e.priority;
      b.engine = static_cast<std::int32_t>(caps.engine());
      for (DType t : all_dtypes)
        for (std::size_t op = 0; op < v2::kTableOps; ++op)
          b.support[static_cast<int>(t)][op] = static_cast<std::uint8_t>(caps.support(t, all_ops[op]));
      b.memory_mask = caps.memory_mask() | (caps.records() ? XREDUCE_MEMORY_MASK_RECORDS : 0u) |
                      (caps.exact_sums() ? XREDUCE_MEMORY_MASK_EXACT_SUMS : 0u) |
                      (caps.exact_sums(true) ? XREDUCE_MEMORY_MASK_EXACT_RECORDS : 0u) |
                      (caps.segments() ? XREDUCE_MEMORY_MASK_SEGMENTS : 0u) |
                      (caps.exact_segments() ? XREDUCE_MEMORY_MASK_EXACT_SEGMENTS : 0u) |
                      (caps.ops() ? XREDUCE_MEMORY_MASK_OPS : 0u) | (caps.ops(true) ? XREDUCE_MEMORY_MASK_SEGMENTED_OPS : 0u);
      b.self = e.reducer.get();
      b.available = &available;
      b.reduce = &reduce;
      infos_.push_back(settings_info_to_text(e.reducer->settings()));
      b.configure = &configure;
      backends_.push_back(b);
    }
    for (std::size_t i = 0; i < backends_.size(); ++i) backends_[i].settings_info = infos_[i].c_str();
  }

  static std::int32_t configure(void* self, const char* settings, char* message, size_t size) {
    return guarded(message, size, [&] {
      static_cast<Reducer*>(self)->configure(Settings::from_text(settings ? settings : "", "the config file"));
    });
  }

  //! Runs `body`, turning what it throws into an ABI error code and message.
  template <class Body>
  static std::int32_t guarded(char* message, size_t size, Body&& body) {
    try {
      body();
      return 0;
    } catch (const Error& e) {
      detail::copy_message(e.what(), message, size);
      return static_cast<std::int32_t>(e.code());
    } catch (const std::bad_alloc&) {
      detail::copy_message("out of host memory", message, size);
      return static_cast<std::int32_t>(ErrorCode::out_of_memory);
    } catch (const std::exception& e) {
      detail::copy_message(e.what(), message, size);
      return static_cast<std::int32_t>(ErrorCode::internal);
    }
  }

  static std::int32_t available(void* self, char* reason, size_t size) {
    try {
      Availability a = static_cast<Reducer*>(self)->available();
      if (!a) detail::copy_message(a.reason, reason, size);
      return a ? 1 : 0;
    } catch (const std::exception& e) {
      detail::copy_message(e.what(), reason, size);
      return 0;
    }
  }

  static std::int32_t reduce(void* self, const xreduce_request_v2* q, const xreduce_options_v2* o,
                             xreduce_result_v2* r, char* message, size_t size) {
    return guarded(message, size, [&] {
      Request request{q->data, static_cast<std::size_t>(q->count), static_cast<DType>(q->dtype),
                      static_cast<Op>(q->op), static_cast<Memory>(q->memory), q->width > 1 ? q->width : 1u};
      // Only a backend that declared segments gets one (and only then are these fields there).
      if (static_cast<Reducer*>(self)->capabilities().segments() && q->segmented) {
        request.segments = Segments{static_cast<std::size_t>(q->segment_count), q->segment_offsets};
        request.out = q->out;
        request.out_index = q->out_index;
      }
      // Only a backend that declared several ops gets them (and only then are these fields there).
      OpsOut ops_out;
      if (static_cast<Reducer*>(self)->capabilities().ops() && q->ops) {
        request.ops = v2::ops_of_stat_bits(q->ops);
        for (Op op : all_ops)
          if (const int k = v2::stat_of(op); k >= 0)
            ops_out.values[static_cast<int>(op)] = q->ops_values[k], ops_out.indices[static_cast<int>(op)] = q->ops_indices[k];
        request.ops_out = &ops_out;
      }
      Options options;
      options.block_size = o->block_size;
      options.threads = o->threads;
      options.accuracy = static_cast<Accuracy>(o->accuracy);
      if (o->settings) options.settings = Settings::from_text(o->settings, "the caller");
      Result result = detail::ReducerAccess::run(*static_cast<Reducer*>(self), request, options);
      r->dtype = static_cast<std::int32_t>(result.value.dtype());
      std::memcpy(r->value, result.value.bytes(), size_of(result.value.dtype()));
      r->has_index = result.index.has_value() ? 1 : 0;
      r->index = result.index.value_or(0);
      for (std::size_t j = 0; request.width > 1 && j < result.values.size() && j < request.width; ++j)
        std::memcpy(static_cast<unsigned char*>(q->values) + 8 * j, result.values[j].bytes(), 8);
      if (q->exact && !request.segments.segmented()) {
        if (result.exact.size() != request.width)
          throw Error(ErrorCode::internal, "backend '" + std::string(static_cast<Reducer*>(self)->name()) +
                                               "' returned no exact partials for an exact sum");
        std::memcpy(q->exact, result.exact.data(), request.width * sizeof(ExactSum));
      }
    });
  }

  std::string name_;
  std::function<std::vector<Entry>()> make_;
  std::vector<Entry> entries_;
  std::vector<std::string> names_;
  std::vector<std::string> infos_;  // settings_info texts; c_str() pointers into them stay put
  std::vector<xreduce_backend_v2> backends_;
};

}  // namespace plugin
}  // namespace xreduce
