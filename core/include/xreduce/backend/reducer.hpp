#pragma once
//! The interface every backend implements, and what a backend says about itself.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "xreduce/backend/features.hpp"
#include "xreduce/error.hpp"
#include "xreduce/request.hpp"

namespace xreduce {

//! What kind of engine a backend is; the dispatcher chooses among engines. cpu_gpu: the CPU and
//! a GPU at work on one request together.
enum class Engine : std::uint8_t { cpu_serial, cpu_parallel, gpu, cpu_gpu };

std::string_view to_string(Support);
std::string_view to_string(Engine);

//! What a backend does: its engine, and the requests it takes, as a union of FeatureSets. A
//! request fits if one set contains its Features; its promise is the best such set's.
//!
//!   static constexpr Capabilities kCaps = Capabilities(Engine::cpu_serial)
//!       .add(FeatureSet().every_dtype().ops({Op::sum, Op::max}).layouts({Layout::all}));
class Capabilities {
 public:
  static constexpr std::size_t kMaxSets = 16;

  explicit constexpr Capabilities(Engine engine = Engine::cpu_serial) : engine_(engine) {}
  //! One more set of requests it takes. At most kMaxSets.
  constexpr Capabilities& add(const FeatureSet& s) {
    if (count_ == kMaxSets) throw Error(ErrorCode::internal, "Capabilities: more than 16 feature sets");
    sets_[count_++] = s;
    return *this;
  }

  constexpr Engine engine() const { return engine_; }
  //! How well it does requests of these features: the best promise among the sets that contain
  //! them (exact over inexact), none if no set does.
  constexpr Support support(const Features& f) const {
    Support best = Support::none;
    for (std::size_t k = 0; k < count_; ++k)
      if (sets_[k].contains(f)) {
        if (sets_[k].promise() == Support::exact) return Support::exact;
        best = sets_[k].promise();
      }
    return best;
  }
  //! The same for one op over a flat array of `t` (standard accuracy), in the first memory it reads.
  constexpr Support support(DType t, Op op) const {
    Features f;
    f.dtype = t;
    f.ops = OpSet{op};
    f.memory = reads(Memory::host) ? Memory::host : Memory::device;
    return support(f);
  }
  //! Whether some set reads memory `m` (automatic: any, it is resolved before a backend runs).
  constexpr bool reads(Memory m) const {
    if (m == Memory::automatic) return true;
    for (std::size_t k = 0; k < count_; ++k)
      if (sets_[k].memory_bits() & FeatureSet::bit(m)) return true;
    return false;
  }
  //! Whether some set takes layout `l` (for some type and op): "does it do segments at all".
  constexpr bool takes(Layout l) const { return any_set([&](const FeatureSet& s) { return (s.layout_bits() & FeatureSet::bit(l)) != 0; }); }
  //! Whether some set takes exact sums (Accuracy::exact).
  constexpr bool takes_exact_sums() const {
    return any_set([](const FeatureSet& s) { return (s.accuracy_bits() & FeatureSet::bit(Accuracy::exact)) != 0; });
  }
  //! Whether some set takes several ops in one pass (Request::ops).
  constexpr bool takes_several() const {
    return any_set([](const FeatureSet& s) { return (s.pass_bits() & FeatureSet::kSeveral) != 0; });
  }
  constexpr const FeatureSet* begin() const { return sets_; }
  constexpr const FeatureSet* end() const { return sets_ + count_; }
  constexpr std::size_t size() const { return count_; }

 private:
  template <class Predicate>
  constexpr bool any_set(Predicate p) const {
    for (std::size_t k = 0; k < count_; ++k)
      if (p(sets_[k])) return true;
    return false;
  }

  Engine engine_;
  FeatureSet sets_[kMaxSets] = {};
  std::size_t count_ = 0;
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
//! request once for every backend (a bad view, null data, a combination the backend does not
//! declare, availability), answers empty input, copies misaligned host data to aligned memory,
//! and brings the results into the Result.
//!
//! So `do_reduce` receives a canonical request (xreduce/backend/features.hpp) whose Features its
//! capabilities contain, with count > 0 and aligned data, except ragged requests, which reach
//! it even with count 0 (each segment still has a result). What it returns, by layout:
//!
//! - all: Result::value (and Result::index for argmin/argmax); an exact sum returns its exact
//!   partial in Result::exact instead; several ops write their one result each to ops_out.
//! - outer, exact sums: one exact partial per column in Result::exact.
//! - every other request: its results written to Request::out (and out_index), packed in the
//!   order of the kept axes, or to ops_out for several ops; always set, host memory or device
//!   memory like the data.
//!
//! A ragged request's offsets are the backend's to check as it reads them (they may be device
//! memory): Error(invalid_argument) for decreasing offsets or ones past Request::count.
class Reducer {
 public:
  virtual ~Reducer() = default;
  //! Stable name: "sequential", "tbb", "cuda.cascaded".
  virtual std::string_view name() const = 0;
  virtual Capabilities capabilities() const = 0;
  virtual Availability available() const = 0;

  //! Checks and runs one request. Throws Error.
  Result reduce(const Request& request, const Options& options = {});

  //! The settings this backend reads, from its config table (`[backends.NAME]`, or its
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
