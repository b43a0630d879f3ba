// ABI 2 plugins, still loaded: their [dtype][op] support table and memory-mask flags become
// feature sets, and the canonical requests of what they declared go to them in ABI 2's form
// (flat, records, equal rows or offsets, several ops), with their results brought back.

#include <cstring>
#include <string>
#include <vector>

#include "plugin_loader.hpp"
#include "xreduce/error.hpp"

namespace xreduce::detail {
namespace {

//! ABI 2's support table covers the first six ops, sum to argmax.
constexpr std::size_t kTableOps = 6;

//! An op's number among several in one pass in ABI 2 (XREDUCE_V2_STAT_*); -1 for one it has not.
constexpr int stat_of(Op op) {
  switch (op) {
    case Op::sum: return XREDUCE_V2_STAT_SUM;
    case Op::min: return XREDUCE_V2_STAT_MIN;
    case Op::max: return XREDUCE_V2_STAT_MAX;
    case Op::argmin: return XREDUCE_V2_STAT_ARGMIN;
    case Op::argmax: return XREDUCE_V2_STAT_ARGMAX;
    case Op::sumsq: return XREDUCE_V2_STAT_SUM_OF_SQUARES;
    default: break;  // prod, and the statistics: ABI 2 has none of them among several
  }
  return -1;
}

//! What an ABI 2 backend declared, as feature sets: each op of its table at each support level,
//! in the layouts its flags name; exact sums; several ops.
Capabilities capabilities_of(const xreduce_backend_v2& b) {
  Capabilities caps(static_cast<Engine>(b.engine));
  const std::uint32_t flags = b.memory_mask;
  const bool host = flags & (1u << static_cast<unsigned>(Memory::host)), device = flags & (1u << static_cast<unsigned>(Memory::device));
  if (!host && !device) return caps;  // it reads no memory at all
  auto in_memory = [&](FeatureSet& s) -> FeatureSet& {
    if (host && device) return s.memory({Memory::host, Memory::device});
    return s.memory({host ? Memory::host : Memory::device});
  };
  const bool segments = flags & XREDUCE_MEMORY_MASK_SEGMENTS;
  for (std::size_t op = 0; op < kTableOps; ++op)
    for (Support level : {Support::exact, Support::inexact}) {
      FeatureSet s;
      for (DType t : dtypes_32_64)  // the table's rows: the types that existed in version 2
        if (b.support[static_cast<int>(t)][op] == static_cast<std::uint8_t>(level)) s.dtypes({t});
      if (s.dtype_bits() == 0) continue;
      const Op o = all_ops[op];
      in_memory(s).ops({o}).layouts({Layout::all}).support(level);
      if ((flags & XREDUCE_MEMORY_MASK_RECORDS) && !returns_index(o)) s.layouts({Layout::outer});
      if (segments) s.layouts({Layout::inner, Layout::ragged});
      caps.add(s);
    }
  if (flags & XREDUCE_MEMORY_MASK_EXACT_SUMS) {
    FeatureSet s;
    for (DType t : {DType::f32, DType::f64})
      if (b.support[static_cast<int>(t)][static_cast<int>(Op::sum)] == static_cast<std::uint8_t>(Support::exact)) s.dtypes({t});
    in_memory(s).ops({Op::sum}).layouts({Layout::all}).only_exact_sums();
    if (flags & XREDUCE_MEMORY_MASK_EXACT_RECORDS) s.layouts({Layout::outer});
    if (segments && (flags & XREDUCE_MEMORY_MASK_EXACT_SEGMENTS)) s.layouts({Layout::inner, Layout::ragged});
    if (s.dtype_bits() != 0) caps.add(s);
  }
  if (flags & XREDUCE_MEMORY_MASK_OPS) {
    FeatureSet s;
    in_memory(s).every_dtype().ops({Op::sum, Op::min, Op::max, Op::argmin, Op::argmax, Op::sumsq}).layouts({Layout::all}).only_together();
    if (segments && (flags & XREDUCE_MEMORY_MASK_SEGMENTED_OPS)) s.layouts({Layout::inner, Layout::ragged});
    caps.add(s);
  }
  return caps;
}

class PluginReducerV2 final : public PluginReducerBase<xreduce_backend_v2> {
 public:
  explicit PluginReducerV2(const xreduce_backend_v2& b) : PluginReducerBase(b, capabilities_of(b)) {}

 protected:
  Result do_reduce(const Request& q, const Options& o) override {
    const Accuracy accuracy = o.accuracy.value_or(Accuracy::standard);
    const Features f = features_of(q, accuracy);
    const bool records = f.layout == Layout::outer, rows = f.layout == Layout::inner;
    const std::size_t width = records ? static_cast<std::size_t>(q.view.shape[1]) : 1;
    if (width > 0xffffffffu) throw Error(ErrorCode::unsupported, "backend '" + name_ + "': ABI 2 carries widths below 2^32");
    std::vector<unsigned char> values(records ? 8 * width : 0);  // 8 bytes a column result
    std::vector<ExactSum> exact(f.accuracy == Accuracy::exact && (records || f.layout == Layout::all) ? width : 0);
    xreduce_request_v2 cq{};
    cq.data = q.data;
    cq.count = records ? static_cast<std::uint64_t>(q.view.shape[0]) : q.count;
    cq.dtype = static_cast<std::int32_t>(q.dtype);
    cq.op = static_cast<std::int32_t>(q.op);
    cq.memory = static_cast<std::int32_t>(q.memory);
    cq.width = static_cast<std::uint32_t>(width);
    cq.values = values.empty() ? nullptr : values.data();
    cq.exact = exact.empty() ? nullptr : exact.data();
    if (rows || f.layout == Layout::ragged) {
      cq.segmented = 1;
      cq.segment_count = rows ? static_cast<std::uint64_t>(q.view.shape[0]) : q.segments.count;
      cq.segment_offsets = q.segments.offsets;  // null for rows: equal rows
      cq.out = q.out;
      cq.out_index = q.out_index;
    }
    for (Op op : all_ops)
      if (const int k = stat_of(op); q.ops_out && k >= 0 && q.ops.contains(op)) {
        cq.ops |= 1u << k;
        cq.ops_values[k] = q.ops_out->values[static_cast<int>(op)];
        cq.ops_indices[k] = q.ops_out->indices[static_cast<int>(op)];
      }
    // ABI 2 had block_size as an option of its own: a `block_size` setting fills it.
    const std::int32_t block = static_cast<std::int32_t>(o.settings.integer("block_size", 0, 1 << 30).value_or(0));
    const std::string settings = o.settings.empty() ? std::string() : o.settings.to_text();
    const xreduce_options_v2 co{block, o.threads, static_cast<std::int32_t>(accuracy), o.settings.empty() ? nullptr : settings.c_str()};
    xreduce_result_v2 cr{};
    char message[1024] = {};
    if (std::int32_t code = b_.reduce(b_.self, &cq, &co, &cr, message, sizeof message); code != 0)
      throw Error(plugin_error_code(code), message[0] ? message : "backend '" + name_ + "' failed without a message");
    Result r;
    r.exact = std::move(exact);
    if (!r.exact.empty() || f.several || (f.layout != Layout::all && !records)) return r;
    if (cr.dtype < 0 || cr.dtype >= static_cast<std::int32_t>(all_dtypes.size()))
      throw Error(ErrorCode::internal, "backend '" + name_ + "' returned an out-of-range dtype");
    const auto type = static_cast<DType>(cr.dtype);
    if (records) {  // its 8-byte column slots, packed into `out` as the core wants them
      if (type != result_dtype(q.dtype, q.op)) throw Error(ErrorCode::internal, "backend '" + name_ + "' returned the wrong type");
      for (std::size_t j = 0; j < width; ++j)
        std::memcpy(static_cast<unsigned char*>(q.out) + j * size_of(type), values.data() + 8 * j, size_of(type));
      return r;
    }
    r.value = Scalar::from_bytes(type, cr.value);
    if (cr.has_index) r.index = cr.index;
    return r;
  }

};

}  // namespace

std::unique_ptr<Reducer> make_plugin_reducer(const xreduce_backend_v2& backend) {
  return std::make_unique<PluginReducerV2>(backend);
}

}  // namespace xreduce::detail
