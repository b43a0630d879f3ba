/* The plugin ABI, version 3: the only contract between the core and a loadable backend library.
 * Plain C so that a plugin built by another compiler, or against another C++ standard library,
 * still loads. A plugin exports xreduce_plugin_init_v3; the core calls it once, checks
 * abi_version and struct_size, and keeps the library loaded for the life of the process.
 *
 * Version 3 declares what a backend does as feature sets (xreduce::FeatureSet, a field of their
 * own) where version 2 packed flags into the high bits of a memory mask, and hands a backend the
 * canonical form of an N-D request (xreduce::canonical) with its features. Version 2 plugins
 * (xreduce_plugin_init_v2, below) still load, with what they declared; a version 1 plugin is
 * refused with a message that says so. */
#ifndef XREDUCE_PLUGIN_H
#define XREDUCE_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define XREDUCE_PLUGIN_ABI_VERSION 3u

/* What a plugin's locate() says of a pointer. */
#define XREDUCE_LOCATION_UNKNOWN 0
#define XREDUCE_LOCATION_HOST 1        /* ordinary (pageable) host memory */
#define XREDUCE_LOCATION_DEVICE 2      /* device memory (or managed) */
#define XREDUCE_LOCATION_PINNED_HOST 3 /* page-locked host memory */
#define XREDUCE_PLUGIN_ENTRY "xreduce_plugin_init_v3"
/* The entry point of ABI version 2, still loaded. */
#define XREDUCE_PLUGIN_ENTRY_V2 "xreduce_plugin_init_v2"
/* The entry point of ABI version 1, looked for only to say why such a plugin is refused. */
#define XREDUCE_PLUGIN_ENTRY_V1 "xreduce_plugin_init_v1"

/* The most dimensions of a view (xreduce::kMaxRank). */
#define XREDUCE_MAX_RANK 16

/* dtype, op, layout, accuracy, memory, engine, support and error codes take the numeric values
 * of the C++ enums in xreduce/types.hpp, xreduce/backend/features.hpp, xreduce/backend/reducer.hpp
 * and xreduce/error.hpp. */

/* A set of requests a backend does (xreduce::FeatureSet): one bit per value of each feature. A
 * request is in the set when each of its features' bits is set (several ops: every op's). */
typedef struct xreduce_feature_set_v3 {
  uint32_t dtypes;     /* bit 1 << xreduce::DType */
  uint32_t ops;        /* bit 1 << xreduce::Op */
  uint32_t layouts;    /* bit 1 << xreduce::Layout */
  uint32_t accuracies; /* bit 1 << xreduce::Accuracy */
  uint32_t memory;     /* bit 1 << xreduce::Memory: host, device */
  uint32_t passes;     /* bit 0: one op a request; bit 1: several ops in one pass */
  int32_t support;     /* xreduce::Support of the set's requests: exact or inexact */
  /* 1: the set's float statistics also come as wide results (xreduce::FeatureSet::wide_results:
   * the value in f64, unrounded, where the caller asked for another result type; the request's
   * `wide` says when). 0: the op's own type only (a plugin built before 0.2.0 wrote 0 here). */
  uint32_t wide;
} xreduce_feature_set_v3;

/* A request's features (xreduce::Features), as the core worked them out. */
typedef struct xreduce_features_v3 {
  int32_t dtype;
  uint32_t ops;     /* the op's bit, or the bits of the ops computed together */
  int32_t several;  /* 1: several ops in one pass (ops_values, ops_indices) */
  int32_t layout;
  int32_t accuracy; /* exact only for sums of floats */
  int32_t memory;   /* host or device */
} xreduce_features_v3;

/* One request, canonical (xreduce::canonical): the form of its layout. */
typedef struct xreduce_request_v3 {
  xreduce_features_v3 features;
  const void* data;
  uint64_t count;  /* elements read */
  int32_t op;      /* one op (features.several 0) */
  uint32_t rank;   /* layouts all and ragged: 0 (`count` contiguous elements); else the view: */
  int64_t shape[XREDUCE_MAX_RANK];
  int64_t strides[XREDUCE_MAX_RANK]; /* in elements */
  uint32_t axes;                     /* bit 1 << k: dimension k is reduced */
  /* Where the data lives as the caller said (xreduce::Memory: 0 automatic, ask where the pointer
   * lives; 1 host; 2 device). features.memory is the space the capabilities were tested in, host
   * for automatic: a device pointer given as automatic is still device memory. */
  uint32_t memory;
  /* Layout ragged: `segment_count` segments at `segment_offsets` (segment_count + 1 of them). */
  uint64_t segment_count;
  const uint64_t* segment_offsets;
  /* Every layout but all, one op: where the backend writes its results, packed in the order of
   * the kept dimensions (or of the segments), values of result_dtype in `out` and, for argmin
   * and argmax, indices in `out_index`; host memory, or device memory like the data. */
  void* out;
  uint64_t* out_index;
  /* Several ops: `op_count` pointers each, indexed by xreduce::Op: the results of each op asked
   * for (one, in host memory, for layout all). */
  uint32_t op_count;
  void* const* ops_values;
  uint64_t* const* ops_indices;
  /* Exact sums of layouts all and outer, else NULL: one partial of 576 bytes per result, zeroed,
   * in the layout of xreduce/exact.hpp, for the backend to fill; the core rounds them. An exact
   * mean (layout all) takes one, the partial of x; an exact var or std two, of x and then of x
   * squared (xreduce::exact_partial_count). */
  void* exact;
  /* var, std, nanvar and nanstd: the divisor is n - correction (xreduce::Request::correction).
   * Appended in 0.2.0 with the statistics: read it only for those ops, alone or among several
   * (features.ops), which a core without this field never sends (it has no statistics), so a
   * plugin never reads past an older request. */
  double correction;
  /* Appended in 0.2.0 too, and read, like `correction`, only for ops after the core ones (the
   * statistics), which a core without these fields never sends.
   * wide: 1 where a set declared wide results and the caller asked for another result type:
   * return the value as an f64, unrounded (the core rounds it once). */
  int32_t wide;
  /* var and std: three doubles the backend may fill with the variance's moments (the count of
   * the elements, their sum, the sum of their squared deviations: xreduce::Moments), which the
   * core has set to -1, 0, 0; the MPI and NCCL combine then need no second read for the mean.
   * NULL for other ops. */
  double* moments;
} xreduce_request_v3;

typedef struct xreduce_options_v3 {
  int32_t threads;
  int32_t accuracy;
  /* This call's settings for the backend, "key=value" a line, or NULL: keys it declared in
   * settings_info only (the core checks). */
  const char* settings;
} xreduce_options_v3;

typedef struct xreduce_result_v3 {
  int32_t dtype;          /* of the value */
  int32_t has_index;
  uint64_t index;
  unsigned char value[8]; /* little-endian bytes of the value */
} xreduce_result_v3;

typedef struct xreduce_backend_v3 {
  const char* name;
  int32_t priority;
  int32_t engine; /* xreduce::Engine */
  /* What it does: a request runs here when one of these sets holds its features. */
  uint32_t feature_set_count;
  const xreduce_feature_set_v3* feature_sets;
  void* self;
  /* 1 if the backend can run now; otherwise 0 and a reason in `reason`. */
  int32_t (*available)(void* self, char* reason, size_t reason_size);
  /* 0 on success; otherwise an xreduce::ErrorCode and a message in `message`. Layout all
   * returns its value in *result; the other layouts write `out` (or ops_values, `exact`). */
  int32_t (*reduce)(void* self, const xreduce_request_v3* request, const xreduce_options_v3* options,
                    xreduce_result_v3* result, char* message, size_t message_size);
  /* The settings the backend reads, "key<TAB>default<TAB>what it does" a line; "" if none. */
  const char* settings_info;
  /* Optional (may be NULL if settings_info is empty): takes the config file's settings,
   * "key=value" a line, once before any call. 0, or an error code and a message. */
  int32_t (*configure)(void* self, const char* settings, char* message, size_t message_size);
} xreduce_backend_v3;

typedef struct xreduce_plugin_v3 {
  uint32_t abi_version; /* XREDUCE_PLUGIN_ABI_VERSION the plugin was built with */
  uint32_t struct_size; /* sizeof(xreduce_plugin_v3) in the plugin's build */
  const char* name;
  size_t backend_count;
  const xreduce_backend_v3* backends;
  /* Optional (may be NULL): where a pointer lives: XREDUCE_LOCATION_*. */
  int32_t (*locate)(const void* pointer);
} xreduce_plugin_v3;

/* Fills *plugin. host_abi_version is the core's XREDUCE_PLUGIN_ABI_VERSION. Returns 0, or an
 * error code with a message written to `message`. */
typedef int32_t (*xreduce_plugin_init_v3_fn)(uint32_t host_abi_version, xreduce_plugin_v3* plugin,
                                             char* message, size_t message_size);

/* ---- Version 2, still loaded -------------------------------------------------------------------
 * A version 2 backend declares a [dtype][op] support table and flags in the high bits of its
 * memory mask; the core hands it only requests of what it declared, in version 2's form: flat,
 * records (`width`), segments (equal rows, or offsets), several ops. */

/* In a backend's memory_mask: the backend reduces records (request width > 1). The core sends
 * width > 1 only to backends that set it, so a plugin built before records existed, which reads
 * neither `width` nor `values`, never receives them. */
#define XREDUCE_MEMORY_MASK_RECORDS (1u << 31)
/* In a backend's memory_mask: the backend sums f32/f64 exactly (accuracy exact), filling
 * request->exact; with EXACT_RECORDS, records too. The core sends exact sums only to backends
 * that set it (others refuse them with `unsupported`), so a plugin built before exact sums
 * existed, which reads no `exact`, never receives one. */
#define XREDUCE_MEMORY_MASK_EXACT_SUMS (1u << 30)
#define XREDUCE_MEMORY_MASK_EXACT_RECORDS (1u << 29)
/* In a backend's memory_mask: the backend reduces segmented requests (the fields of the request
 * from `segmented` on); with EXACT_SEGMENTS, exact sums of them too. The core sends segmented
 * requests only to backends that set it, so a plugin built before segments existed never
 * receives one. A plugin that sets it needs a core that knows segments: an older core's request
 * ends before those fields. */
#define XREDUCE_MEMORY_MASK_SEGMENTS (1u << 28)
#define XREDUCE_MEMORY_MASK_EXACT_SEGMENTS (1u << 27)
/* In a backend's memory_mask: the backend computes several ops in one pass (the fields of the
 * request from `ops` on); with SEGMENTED_OPS, of segmented requests too. The core sends such
 * requests only to backends that set it; a plugin that sets it needs a core that knows them. */
#define XREDUCE_MEMORY_MASK_OPS (1u << 26)
#define XREDUCE_MEMORY_MASK_SEGMENTED_OPS (1u << 25)

/* How version 2 numbers the ops of a request with several (the `ops` bits, ops_values and
 * ops_indices); `support` is [dtype][op] for the first six xreduce::Op values, sum to argmax. */
#define XREDUCE_V2_STAT_SUM 0
#define XREDUCE_V2_STAT_MIN 1
#define XREDUCE_V2_STAT_MAX 2
#define XREDUCE_V2_STAT_ARGMIN 3
#define XREDUCE_V2_STAT_ARGMAX 4
#define XREDUCE_V2_STAT_SUM_OF_SQUARES 5

typedef struct xreduce_request_v2 {
  const void* data;
  uint64_t count;  /* elements, or records when width > 1 */
  int32_t dtype;
  int32_t op;
  int32_t memory;
  uint32_t width;  /* 0 or 1: single values; k > 1: `count` records of k values, reduced column by column */
  /* width > 1: the backend writes the k column results here, 8 little-endian bytes each, of
   * the type it reports in result->dtype (result->value holds the first). */
  void* values;
  /* Exact sums (options->accuracy exact, op sum, dtype f32 or f64), else NULL: `width` (at least
   * one) partials of 576 bytes each, zeroed, in the layout of xreduce/exact.hpp (72 little-endian
   * int64 words), for the backend to fill; the core rounds them, and ignores `result->value`. */
  void* exact;
  /* Segmented requests (xreduce::Segments), for backends with XREDUCE_MEMORY_MASK_SEGMENTS:
   * `segmented` 1, then `segment_count` segments, equal rows when `segment_offsets` is NULL.
   * The backend writes one result per segment to `out` (packed values of result->dtype) and,
   * for argmin/argmax, indices to `out_index`; both always set, in host memory or in the data's
   * device memory. Exact segmented sums are rounded by the backend (`exact` is NULL). */
  int32_t segmented;
  uint64_t segment_count;
  const uint64_t* segment_offsets;
  void* out;
  uint64_t* out_index;
  /* Several ops in one pass, for backends with XREDUCE_MEMORY_MASK_OPS, else 0: bit 1 << k for
   * each, k numbering them as XREDUCE_V2_STAT_* do. `op` is then not used, and the backend writes
   * each asked op's results to ops_values[k] (packed values of its result type) and, for argmin
   * and argmax, ops_indices[k]: one per segment, or one (in host memory) for a flat request. */
  uint32_t ops;
  void* ops_values[6];
  uint64_t* ops_indices[6];
} xreduce_request_v2;

typedef struct xreduce_options_v2 {
  int32_t block_size; /* a `block_size` setting the backend declares, else 0 */
  int32_t threads;
  int32_t accuracy;
  /* This call's settings for the backend, "key=value" a line, or NULL: keys it declared in
   * settings_info only (the core checks). */
  const char* settings;
} xreduce_options_v2;

typedef struct xreduce_result_v2 {
  int32_t dtype;          /* of the value */
  int32_t has_index;
  uint64_t index;
  unsigned char value[8]; /* little-endian bytes of the value */
} xreduce_result_v2;

typedef struct xreduce_backend_v2 {
  const char* name;
  int32_t priority;
  int32_t engine;         /* xreduce::Engine */
  uint8_t support[6][6];  /* [dtype][op]: xreduce::Support */
  uint32_t memory_mask;   /* bit (1 << xreduce::Memory) per memory space read */
  void* self;
  /* 1 if the backend can run now; otherwise 0 and a reason in `reason`. */
  int32_t (*available)(void* self, char* reason, size_t reason_size);
  /* 0 on success; otherwise an xreduce::ErrorCode and a message in `message`. */
  int32_t (*reduce)(void* self, const xreduce_request_v2* request, const xreduce_options_v2* options,
                    xreduce_result_v2* result, char* message, size_t message_size);
  /* The settings the backend reads, "key<TAB>default<TAB>what it does" a line; "" if none. */
  const char* settings_info;
  /* Optional (may be NULL if settings_info is empty): takes the config file's settings,
   * "key=value" a line, once before any call. 0, or an error code and a message. */
  int32_t (*configure)(void* self, const char* settings, char* message, size_t message_size);
} xreduce_backend_v2;

typedef struct xreduce_plugin_v2 {
  uint32_t abi_version;  /* 2 */
  uint32_t struct_size;  /* sizeof(xreduce_plugin_v2) in the plugin's build */
  const char* name;
  size_t backend_count;
  const xreduce_backend_v2* backends;
  /* Optional (may be NULL): where a pointer lives: XREDUCE_LOCATION_*. */
  int32_t (*locate)(const void* pointer);
} xreduce_plugin_v2;

/* Fills *plugin. host_abi_version is 2 (the version the plugin speaks). */
typedef int32_t (*xreduce_plugin_init_v2_fn)(uint32_t host_abi_version, xreduce_plugin_v2* plugin,
                                             char* message, size_t message_size);

/* Optional second entry point, for a module that can page-lock host memory (the CUDA module):
 * the core's PinnedBuffer and PinnedRegion use the first loaded plugin that exports it. */
#define XREDUCE_PLUGIN_MEMORY_ENTRY "xreduce_plugin_memory_v1"

typedef struct xreduce_memory_v1 {
  uint32_t struct_size; /* sizeof(xreduce_memory_v1) in the plugin's build */
  /* Page-locked host memory, or NULL with the reason in `message`. */
  void* (*allocate)(size_t bytes, char* message, size_t message_size);
  void (*release)(void* pointer);
  /* Page-locks existing host memory: 1 on success, else 0 with the reason in `message`. */
  int32_t (*pin)(void* pointer, size_t bytes, char* message, size_t message_size);
  void (*unpin)(void* pointer);
} xreduce_memory_v1;

typedef const xreduce_memory_v1* (*xreduce_plugin_memory_v1_fn)(void);

/* Optional, a second symbol: memory of a GPU, for callers that put their data where the GPU
 * backends read it in place (xreduce::DeviceBuffer, the command's `--memory device`). The core
 * uses the first loaded plugin that exports it. */
#define XREDUCE_PLUGIN_DEVICE_MEMORY_ENTRY "xreduce_plugin_device_memory_v1"

typedef struct xreduce_device_memory_v1 {
  uint32_t struct_size; /* sizeof(xreduce_device_memory_v1) in the plugin's build */
  /* Memory of the calling thread's current device, or NULL with the reason in `message`. */
  void* (*allocate)(size_t bytes, char* message, size_t message_size);
  void (*release)(void* pointer);
  /* Copies `bytes` from `source` to `target`, each host or device memory, and waits: 1 on
   * success, else 0 with the reason in `message`. */
  int32_t (*copy)(void* target, const void* source, size_t bytes, char* message, size_t message_size);
} xreduce_device_memory_v1;

typedef const xreduce_device_memory_v1* (*xreduce_plugin_device_memory_v1_fn)(void);

#ifdef __cplusplus
}
#endif

#endif
