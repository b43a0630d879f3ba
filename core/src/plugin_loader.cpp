#include "plugin_loader.hpp"

#include <dlfcn.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "xreduce/error.hpp"

namespace xreduce::detail {
namespace {

//! Capabilities from an ABI 3 backend's feature sets.
Capabilities capabilities_of(const xreduce_backend_v3& b) {
  Capabilities caps(static_cast<Engine>(b.engine));
  for (std::uint32_t i = 0; i < b.feature_set_count; ++i) {
    const xreduce_feature_set_v3& s = b.feature_sets[i];
    FeatureSet set = FeatureSet::from_bits(s.dtypes, s.ops, s.layouts, s.accuracies, s.memory, s.passes, static_cast<Support>(s.support));
    if (s.wide) set.wide_results();
    caps.add(set);
  }
  return caps;
}

class PluginReducer final : public PluginReducerBase<xreduce_backend_v3> {
 public:
  explicit PluginReducer(const xreduce_backend_v3& b) : PluginReducerBase(b, capabilities_of(b)) {}

 protected:
  Result do_reduce(const Request& q, const Options& o) override {
    const Accuracy accuracy = o.accuracy.value_or(Accuracy::standard);
    const Features f = features_of(q, accuracy);
    xreduce_request_v3 cq{};
    cq.features = {static_cast<std::int32_t>(f.dtype), f.ops.bits(),         f.several ? 1 : 0,
                   static_cast<std::int32_t>(f.layout), static_cast<std::int32_t>(f.accuracy), static_cast<std::int32_t>(f.memory)};
    cq.data = q.data;
    cq.memory = static_cast<std::uint32_t>(q.memory);
    cq.count = q.count;
    cq.op = static_cast<std::int32_t>(q.op);
    cq.rank = static_cast<std::uint32_t>(q.view.rank);
    for (std::size_t k = 0; k < q.view.rank; ++k) cq.shape[k] = q.view.shape[k], cq.strides[k] = q.view.strides[k];
    cq.axes = q.axes.bits();
    cq.segment_count = q.segments.count;
    cq.segment_offsets = q.segments.offsets;
    cq.out = q.out;
    cq.out_index = q.out_index;
    cq.correction = q.correction;
    cq.wide = wide_results(o) ? 1 : 0;
    double moments[3] = {-1, 0, 0};  // a count of -1: not filled
    if (!f.several && (q.op == Op::var || q.op == Op::std)) cq.moments = moments;
    void* values[all_ops.size()] = {};
    std::uint64_t* indices[all_ops.size()] = {};
    if (q.ops_out) {
      for (std::size_t k = 0; k < all_ops.size(); ++k) values[k] = q.ops_out->values[k], indices[k] = q.ops_out->indices[k];
      cq.op_count = static_cast<std::uint32_t>(all_ops.size());
      cq.ops_values = values;
      cq.ops_indices = indices;
    }
    // Exact sums of a flat array or of records, and exact statistics: the partials the core rounds.
    std::vector<ExactSum> exact(exact_partial_count(q, f));
    cq.exact = exact.empty() ? nullptr : exact.data();
    const std::string settings = o.settings.empty() ? std::string() : o.settings.to_text();
    const xreduce_options_v3 co{o.threads, static_cast<std::int32_t>(accuracy), o.settings.empty() ? nullptr : settings.c_str()};
    xreduce_result_v3 cr{};
    char message[1024] = {};
    if (std::int32_t code = b_.reduce(b_.self, &cq, &co, &cr, message, sizeof message); code != 0)
      throw Error(plugin_error_code(code), message[0] ? message : "backend '" + name_ + "' failed without a message");
    Result r;
    if (f.layout == Layout::all && !f.several) {
      if (cr.dtype < 0 || cr.dtype >= static_cast<std::int32_t>(all_dtypes.size()))
        throw Error(ErrorCode::internal, "backend '" + name_ + "' returned an out-of-range dtype");
      r.value = Scalar::from_bytes(static_cast<DType>(cr.dtype), cr.value);
      if (cr.has_index) r.index = cr.index;
      if (moments[0] >= 0) r.moments = Moments{moments[0], moments[1], moments[2]};
    }
    r.exact = std::move(exact);
    return r;
  }

};

std::mutex& loader_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::filesystem::path, LoadedPlugin>& loaded() {
  static std::map<std::filesystem::path, LoadedPlugin> plugins;
  return plugins;
}

[[noreturn]] void refuse(const std::filesystem::path& p, const std::string& why) {
  throw Error(ErrorCode::plugin, "plugin " + p.string() + ": " + why);
}

//! What both ABIs' backend entries must hold: a name, functions, an engine that exists.
template <class Backend>
void check_backend(const std::filesystem::path& library, std::size_t i, const Backend& b) {
  if (b.name == nullptr || b.name[0] == '\0' || b.available == nullptr || b.reduce == nullptr)
    refuse(library, "backend #" + std::to_string(i) + " has no name or no functions");
  if (b.engine < 0 || b.engine > static_cast<std::int32_t>(Engine::cpu_gpu))
    refuse(library, "backend '" + std::string(b.name) + "' claims an engine (" + std::to_string(b.engine) + ") that does not exist");
}

template <class Table>
void check_table_size(const std::filesystem::path& library, const Table& table, std::uint32_t abi) {
  if (table.abi_version != abi)
    refuse(library, "was built for plugin ABI version " + std::to_string(table.abi_version) + ", this library speaks " +
                        std::to_string(XREDUCE_PLUGIN_ABI_VERSION) + " (and loads 2); rebuild it against this xreduce");
  if (table.struct_size != sizeof(Table))
    refuse(library, "has a plugin table of " + std::to_string(table.struct_size) + " bytes, expected " +
                        std::to_string(sizeof(Table)) + "; rebuild it against this xreduce");
  if (table.backend_count > 0 && table.backends == nullptr) refuse(library, "lists backends but gives no table");
}

}  // namespace

ErrorCode plugin_error_code(std::int32_t code) {
  const bool known = code > 0 && code <= static_cast<std::int32_t>(ErrorCode::internal);
  return known ? static_cast<ErrorCode>(code) : ErrorCode::internal;
}

void check_plugin_table(const std::filesystem::path& library, const xreduce_plugin_v3& table) {
  check_table_size(library, table, XREDUCE_PLUGIN_ABI_VERSION);
  for (std::size_t i = 0; i < table.backend_count; ++i) {
    const xreduce_backend_v3& b = table.backends[i];
    check_backend(library, i, b);
    // What the core would act on must be a value it knows: a feature value beyond the enums, or
    // a support level that does not exist, is a plugin built wrong.
    const std::string which = "backend '" + std::string(b.name) + "'";
    if (b.feature_set_count > Capabilities::kMaxSets || (b.feature_set_count > 0 && b.feature_sets == nullptr))
      refuse(library, which + " declares " + std::to_string(b.feature_set_count) + " feature sets (at most " +
                          std::to_string(Capabilities::kMaxSets) + ", in a table)");
    for (std::uint32_t k = 0; k < b.feature_set_count; ++k) {
      const xreduce_feature_set_v3& s = b.feature_sets[k];
      const FeatureSet known = FeatureSet::from_bits(s.dtypes, s.ops, s.layouts, s.accuracies, s.memory, s.passes, Support::exact);
      if (known.dtype_bits() != s.dtypes || known.op_set().bits() != s.ops || known.layout_bits() != s.layouts ||
          known.accuracy_bits() != s.accuracies || known.memory_bits() != s.memory || known.pass_bits() != s.passes)
        refuse(library, which + " claims a dtype, op, layout, accuracy, memory space or pass (feature set " +
                            std::to_string(k) + ") that does not exist");
      if (s.support != static_cast<std::int32_t>(Support::exact) && s.support != static_cast<std::int32_t>(Support::inexact))
        refuse(library, which + " claims a support level (" + std::to_string(s.support) + ") that does not exist");
      if (s.wide > 1) refuse(library, which + " sets wide results to " + std::to_string(s.wide) + " (feature set " + std::to_string(k) + "): 0 or 1");
    }
  }
}

void check_plugin_table(const std::filesystem::path& library, const xreduce_plugin_v2& table) {
  check_table_size(library, table, 2);
  for (std::size_t i = 0; i < table.backend_count; ++i) {
    const xreduce_backend_v2& b = table.backends[i];
    check_backend(library, i, b);
    const std::string which = "backend '" + std::string(b.name) + "'";
    for (const auto& row : b.support)
      for (std::uint8_t level : row)
        if (level > static_cast<std::uint8_t>(Support::inexact))
          refuse(library, which + " claims a support level (" + std::to_string(level) + ") that does not exist");
    const std::uint32_t known_memory = (1u << static_cast<unsigned>(Memory::automatic)) |
                                       (1u << static_cast<unsigned>(Memory::host)) |
                                       (1u << static_cast<unsigned>(Memory::device)) | XREDUCE_MEMORY_MASK_RECORDS |
                                       XREDUCE_MEMORY_MASK_EXACT_SUMS | XREDUCE_MEMORY_MASK_EXACT_RECORDS |
                                       XREDUCE_MEMORY_MASK_SEGMENTS | XREDUCE_MEMORY_MASK_EXACT_SEGMENTS |
                                       XREDUCE_MEMORY_MASK_OPS | XREDUCE_MEMORY_MASK_SEGMENTED_OPS;
    if (b.memory_mask & ~known_memory)
      refuse(library, which + " claims memory spaces (mask " + std::to_string(b.memory_mask) + ") that do not exist");
  }
}

const LoadedPlugin& load_plugin_library(const std::filesystem::path& library) {
  std::error_code ec;
  std::filesystem::path key = std::filesystem::weakly_canonical(library, ec);
  if (ec) key = library;
  std::lock_guard lock(loader_mutex());
  if (auto it = loaded().find(key); it != loaded().end()) return it->second;

  if (!std::filesystem::exists(key)) refuse(library, "no such file");
  // RTLD_LOCAL: two plugins may carry symbols of the same name. Never dlclose'd: reducers,
  // names and static state of the plugin live as long as the process.
  void* handle = dlopen(key.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) refuse(library, std::string("cannot be loaded: ") + dlerror());
  LoadedPlugin plugin{key};
  char message[1024] = {};
  std::int32_t code = 0;
  if (auto init = reinterpret_cast<xreduce_plugin_init_v3_fn>(dlsym(handle, XREDUCE_PLUGIN_ENTRY))) {
    code = init(XREDUCE_PLUGIN_ABI_VERSION, &plugin.table, message, sizeof message);
    if (code == 0) check_plugin_table(library, plugin.table);
  } else if (auto init_v2 = reinterpret_cast<xreduce_plugin_init_v2_fn>(dlsym(handle, XREDUCE_PLUGIN_ENTRY_V2))) {
    plugin.abi = 2;
    code = init_v2(2, &plugin.table_v2, message, sizeof message);
    if (code == 0) check_plugin_table(library, plugin.table_v2);
  } else if (dlsym(handle, XREDUCE_PLUGIN_ENTRY_V1) != nullptr) {
    refuse(library, "was built for plugin ABI version 1 (it exports " XREDUCE_PLUGIN_ENTRY_V1 "), this library speaks " +
                        std::to_string(XREDUCE_PLUGIN_ABI_VERSION) + " (and loads 2); rebuild it against this xreduce");
  } else {
    refuse(library, "has no entry point " XREDUCE_PLUGIN_ENTRY " (not an xreduce plugin?)");
  }
  if (code != 0) refuse(library, std::string("initialisation failed: ") + (message[0] ? message : "no message"));
  if (auto entry = reinterpret_cast<xreduce_plugin_memory_v1_fn>(dlsym(handle, XREDUCE_PLUGIN_MEMORY_ENTRY))) {
    plugin.memory = entry();
    if (plugin.memory && plugin.memory->struct_size != sizeof(xreduce_memory_v1))
      refuse(library, "has a memory table of " + std::to_string(plugin.memory->struct_size) + " bytes, expected " +
                          std::to_string(sizeof(xreduce_memory_v1)) + "; rebuild it against this xreduce");
  }
  if (auto entry = reinterpret_cast<xreduce_plugin_device_memory_v1_fn>(dlsym(handle, XREDUCE_PLUGIN_DEVICE_MEMORY_ENTRY))) {
    plugin.device_memory = entry();
    if (plugin.device_memory && plugin.device_memory->struct_size != sizeof(xreduce_device_memory_v1))
      refuse(library, "has a device-memory table of " + std::to_string(plugin.device_memory->struct_size) + " bytes, expected " +
                          std::to_string(sizeof(xreduce_device_memory_v1)) + "; rebuild it against this xreduce");
  }
  return loaded().emplace(key, plugin).first->second;
}

std::unique_ptr<Reducer> make_plugin_reducer(const xreduce_backend_v3& backend) {
  return std::make_unique<PluginReducer>(backend);
}

}  // namespace xreduce::detail
