#pragma once
//! For plugin authors: turns C++ Reducers into the C ABI of xreduce/backend/plugin.h. Header-only, so a
//! plugin needs the public headers and nothing else. Usage:
//!
//!   extern "C" XREDUCE_PLUGIN_EXPORT int32_t xreduce_plugin_init_v3(
//!       uint32_t host_abi, xreduce_plugin_v3* out, char* message, size_t size) {
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

struct Entry {
  std::unique_ptr<Reducer> reducer;
  int priority = 0;
};

class Exporter {
 public:
  //! `make` runs on the first init, so a plugin does no work at dlopen time.
  Exporter(std::string name, std::function<std::vector<Entry>()> make)
      : name_(std::move(name)), make_(std::move(make)) {}

  std::int32_t init(std::uint32_t host_abi, xreduce_plugin_v3* out, char* message, size_t size,
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
    out->struct_size = sizeof(xreduce_plugin_v3);
    out->name = name_.c_str();
    out->backend_count = backends_.size();
    out->backends = backends_.data();
    out->locate = locate;
    return 0;
  }

 private:
  void build() {
    entries_ = make_();
    names_.reserve(entries_.size());  // c_str() and data() pointers into these must stay put
    infos_.reserve(entries_.size());
    sets_.reserve(entries_.size());
    for (Entry& e : entries_) {
      names_.emplace_back(e.reducer->name());
      const Capabilities caps = e.reducer->capabilities();
      std::vector<xreduce_feature_set_v3> sets;
      for (const FeatureSet& f : caps)
        sets.push_back({f.dtype_bits(), f.op_set().bits(), f.layout_bits(), f.accuracy_bits(), f.memory_bits(),
                        f.pass_bits(), static_cast<std::int32_t>(f.promise()), f.takes_wide_results() ? 1u : 0u});
      sets_.push_back(std::move(sets));
      xreduce_backend_v3 b{};
      b.name = names_.back().c_str();
      b.priority = e.priority;
      b.engine = static_cast<std::int32_t>(caps.engine());
      b.feature_set_count = static_cast<std::uint32_t>(sets_.back().size());
      b.feature_sets = sets_.back().data();
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

  static std::int32_t reduce(void* self, const xreduce_request_v3* q, const xreduce_options_v3* o,
                             xreduce_result_v3* r, char* message, size_t size) {
    return guarded(message, size, [&] {
      const xreduce_features_v3& f = q->features;
      const auto layout = static_cast<Layout>(f.layout);
      Request request;
      request.data = q->data;
      request.count = static_cast<std::size_t>(q->count);
      request.dtype = static_cast<DType>(f.dtype);
      request.op = static_cast<Op>(q->op);
      request.memory = static_cast<Memory>(q->memory);  // as the caller said: automatic stays automatic
      request.view.rank = std::min<std::size_t>(q->rank, kMaxRank);
      for (std::size_t k = 0; k < request.view.rank; ++k) request.view.shape[k] = q->shape[k], request.view.strides[k] = q->strides[k];
      request.axes = Axes::from_bits(q->axes);
      if (layout == Layout::ragged) request.segments = Segments{static_cast<std::size_t>(q->segment_count), q->segment_offsets};
      request.out = q->out;
      request.out_index = q->out_index;
      // The fields appended in 0.2.0 are read for the statistics alone: their comments say why.
      // A var or std alone, or among several ops: both are 0.2.0's, as the field is.
      const OpSet named = f.several ? OpSet::from_bits(f.ops) : OpSet{request.op};
      if (std::any_of(all_ops.begin(), all_ops.end(), [&](Op op) { return named.contains(op) && uses_correction(op); }))
        request.correction = q->correction;
      const bool statistic = !is_core_op(request.op) && !f.several;
      OpsOut ops_out;
      if (f.several) {
        request.ops = OpSet::from_bits(f.ops);
        for (std::size_t k = 0; k < q->op_count && k < all_ops.size(); ++k)
          ops_out.values[k] = q->ops_values[k], ops_out.indices[k] = q->ops_indices[k];
        request.ops_out = &ops_out;
      }
      Options options;
      options.threads = o->threads;
      options.accuracy = static_cast<Accuracy>(o->accuracy);
      if (o->settings) options.settings = Settings::from_text(o->settings, "the caller");
      if (statistic && q->wide) options.result_dtype = DType::f64;  // wide_results(options)
      Result result = detail::ReducerAccess::run(*static_cast<Reducer*>(self), request, options);
      r->dtype = static_cast<std::int32_t>(result.value.dtype());
      std::memcpy(r->value, result.value.bytes(), size_of(result.value.dtype()));
      r->has_index = result.index.has_value() ? 1 : 0;
      r->index = result.index.value_or(0);
      if (statistic && q->moments && result.moments) {
        q->moments[0] = result.moments->n;
        q->moments[1] = result.moments->sum;
        q->moments[2] = result.moments->m2;
      }
      if (q->exact) {
        Features features;
        features.accuracy = Accuracy::exact;
        features.layout = layout;
        features.several = f.several != 0;
        const std::size_t partials = exact_partial_count(request, features);
        if (result.exact.size() != partials)
          throw Error(ErrorCode::internal, "backend '" + std::string(static_cast<Reducer*>(self)->name()) + "' returned " +
                                               std::to_string(result.exact.size()) + " exact partials where " +
                                               std::to_string(partials) + " were due");
        std::memcpy(q->exact, result.exact.data(), partials * sizeof(ExactSum));
      }
    });
  }

  std::string name_;
  std::function<std::vector<Entry>()> make_;
  std::vector<Entry> entries_;
  std::vector<std::string> names_;
  std::vector<std::string> infos_;  // settings_info texts; c_str() pointers into them stay put
  std::vector<std::vector<xreduce_feature_set_v3>> sets_;
  std::vector<xreduce_backend_v3> backends_;
};

}  // namespace plugin
}  // namespace xreduce
