#include "plugin_loader.hpp"

#include <dlfcn.h>

#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "xreduce/error.hpp"
#include "xreduce/backend/plugin.hpp"

namespace xreduce::detail {
namespace {

class PluginReducer final : public Reducer {
 public:
  explicit PluginReducer(const xreduce_backend_v2& b) : b_(b), name_(b.name), caps_(static_cast<Engine>(b.engine)) {
    for (DType t : all_dtypes)
      for (std::size_t op = 0; op < plugin::v2::kTableOps; ++op)
        caps_.set(t, all_ops[op], static_cast<Support>(b.support[static_cast<int>(t)][op]));
    caps_.set_memory_mask(b.memory_mask & ~(XREDUCE_MEMORY_MASK_RECORDS | XREDUCE_MEMORY_MASK_EXACT_SUMS |
                                            XREDUCE_MEMORY_MASK_EXACT_RECORDS | XREDUCE_MEMORY_MASK_SEGMENTS |
                                            XREDUCE_MEMORY_MASK_EXACT_SEGMENTS | XREDUCE_MEMORY_MASK_OPS |
                                            XREDUCE_MEMORY_MASK_SEGMENTED_OPS));
    caps_.accept_records((b.memory_mask & XREDUCE_MEMORY_MASK_RECORDS) != 0);
    if (b.memory_mask & XREDUCE_MEMORY_MASK_EXACT_SUMS)
      caps_.accept_exact_sums((b.memory_mask & XREDUCE_MEMORY_MASK_EXACT_RECORDS) != 0);
    if (b.memory_mask & XREDUCE_MEMORY_MASK_SEGMENTS)
      caps_.accept_segments((b.memory_mask & XREDUCE_MEMORY_MASK_EXACT_SEGMENTS) != 0);
    if (b.memory_mask & XREDUCE_MEMORY_MASK_OPS) caps_.accept_ops((b.memory_mask & XREDUCE_MEMORY_MASK_SEGMENTED_OPS) != 0);
    if (b.settings_info) settings_ = settings_info_from_text(b.settings_info);
  }
  std::vector<SettingInfo> settings() const override { return settings_; }
  void configure(const Settings& s) override {
    if (!b_.configure) return;
    char message[1024] = {};
    const std::string text = s.to_text();
    if (std::int32_t code = b_.configure(b_.self, text.c_str(), message, sizeof message); code != 0)
      throw Error(error_code(code), message[0] ? message : "backend '" + name_ + "' refused its settings without a message");
  }
  std::string_view name() const override { return name_; }
  Capabilities capabilities() const override { return caps_; }
  Availability available() const override {
    char reason[512] = {};
    if (b_.available(b_.self, reason, sizeof reason)) return Availability::yes();
    return Availability::no(reason[0] ? reason : "the plugin gave no reason");
  }

 protected:
  Result do_reduce(const Request& q, const Options& o) override {
    if (q.width > std::numeric_limits<std::uint32_t>::max())
      throw Error(ErrorCode::unsupported, "backend '" + name_ + "': the plugin ABI carries widths below 2^32");
    std::vector<unsigned char> values(q.width > 1 ? 8 * q.width : 0);
    const Accuracy accuracy = o.accuracy.value_or(Accuracy::standard);
    const bool segmented = q.segments.segmented();
    std::vector<ExactSum> exact(exact_sum(q.dtype, q.op, accuracy) && !segmented ? q.width : 0);
    xreduce_request_v2 cq{q.data,
                          q.count,
                          static_cast<std::int32_t>(q.dtype),
                          static_cast<std::int32_t>(q.op),
                          static_cast<std::int32_t>(q.memory),
                          static_cast<std::uint32_t>(q.width),
                          values.empty() ? nullptr : values.data(),
                          exact.empty() ? nullptr : exact.data(),
                          segmented ? 1 : 0,
                          q.segments.count,
                          q.segments.offsets,
                          q.out,
                          q.out_index,
                          plugin::v2::stat_bits(q.ops),
                          {},
                          {}};
    for (Op op : all_ops)
      if (const int k = plugin::v2::stat_of(op); q.ops_out && k >= 0)
        cq.ops_values[k] = q.ops_out->values[static_cast<int>(op)], cq.ops_indices[k] = q.ops_out->indices[static_cast<int>(op)];
    const std::string settings = o.settings.empty() ? std::string() : o.settings.to_text();
    xreduce_options_v2 co{o.block_size, o.threads, static_cast<std::int32_t>(accuracy),
                          o.settings.empty() ? nullptr : settings.c_str()};
    xreduce_result_v2 cr{};
    char message[1024] = {};
    std::int32_t code = b_.reduce(b_.self, &cq, &co, &cr, message, sizeof message);
    if (code != 0) throw Error(error_code(code), message[0] ? message : "backend '" + name_ + "' failed without a message");
    if (cr.dtype < 0 || cr.dtype >= static_cast<std::int32_t>(all_dtypes.size()))
      throw Error(ErrorCode::internal, "backend '" + name_ + "' returned an out-of-range dtype");
    Result r;
    r.value = Scalar::from_bytes(static_cast<DType>(cr.dtype), cr.value);
    if (cr.has_index) r.index = cr.index;
    for (std::size_t j = 0; j < values.size() / 8; ++j)
      r.values.push_back(Scalar::from_bytes(static_cast<DType>(cr.dtype), values.data() + 8 * j));
    r.exact = std::move(exact);
    return r;
  }

 private:
  static ErrorCode error_code(std::int32_t code) {
    const bool known = code > 0 && code <= static_cast<std::int32_t>(ErrorCode::internal);
    return known ? static_cast<ErrorCode>(code) : ErrorCode::internal;
  }

  xreduce_backend_v2 b_;
  std::string name_;
  Capabilities caps_;
  std::vector<SettingInfo> settings_;
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

}  // namespace

void check_plugin_table(const std::filesystem::path& library, const xreduce_plugin_v2& table) {
  if (table.abi_version != XREDUCE_PLUGIN_ABI_VERSION)
    refuse(library, "was built for plugin ABI version " + std::to_string(table.abi_version) + ", this library speaks " +
                        std::to_string(XREDUCE_PLUGIN_ABI_VERSION) + "; rebuild it against this xreduce");
  if (table.struct_size != sizeof(xreduce_plugin_v2))
    refuse(library, "has a plugin table of " + std::to_string(table.struct_size) + " bytes, expected " +
                        std::to_string(sizeof(xreduce_plugin_v2)) + "; rebuild it against this xreduce");
  if (table.backend_count > 0 && table.backends == nullptr) refuse(library, "lists backends but gives no table");
  for (std::size_t i = 0; i < table.backend_count; ++i) {
    const xreduce_backend_v2& b = table.backends[i];
    if (b.name == nullptr || b.name[0] == '\0' || b.available == nullptr || b.reduce == nullptr)
      refuse(library, "backend #" + std::to_string(i) + " has no name or no functions");
    // What the core would act on must be a value it knows: an engine or support level beyond
    // the enums, or a memory space it has never heard of, is a plugin built wrong.
    const std::string which = "backend '" + std::string(b.name) + "'";
    if (b.engine < 0 || b.engine > static_cast<std::int32_t>(Engine::cpu_gpu))
      refuse(library, which + " claims an engine (" + std::to_string(b.engine) + ") that does not exist");
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
  auto init = reinterpret_cast<xreduce_plugin_init_v2_fn>(dlsym(handle, XREDUCE_PLUGIN_ENTRY));
  if (init == nullptr && dlsym(handle, XREDUCE_PLUGIN_ENTRY_V1) != nullptr)
    refuse(library, "was built for plugin ABI version 1 (it exports " XREDUCE_PLUGIN_ENTRY_V1 "), this library speaks " +
                        std::to_string(XREDUCE_PLUGIN_ABI_VERSION) + "; rebuild it against this xreduce");
  if (init == nullptr) refuse(library, "has no entry point " XREDUCE_PLUGIN_ENTRY " (not an xreduce plugin?)");

  xreduce_plugin_v2 table{};
  char message[1024] = {};
  std::int32_t code = init(XREDUCE_PLUGIN_ABI_VERSION, &table, message, sizeof message);
  if (code != 0) refuse(library, std::string("initialisation failed: ") + (message[0] ? message : "no message"));
  check_plugin_table(library, table);
  const xreduce_memory_v1* memory = nullptr;
  if (auto entry = reinterpret_cast<xreduce_plugin_memory_v1_fn>(dlsym(handle, XREDUCE_PLUGIN_MEMORY_ENTRY))) {
    memory = entry();
    if (memory && memory->struct_size != sizeof(xreduce_memory_v1))
      refuse(library, "has a memory table of " + std::to_string(memory->struct_size) + " bytes, expected " +
                          std::to_string(sizeof(xreduce_memory_v1)) + "; rebuild it against this xreduce");
  }
  return loaded().emplace(key, LoadedPlugin{key, table, memory}).first->second;
}

std::unique_ptr<Reducer> make_plugin_reducer(const xreduce_backend_v2& backend) {
  return std::make_unique<PluginReducer>(backend);
}

}  // namespace xreduce::detail
