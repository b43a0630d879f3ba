/* A plugin built for ABI version 2, which still loads: "test.abi2", a plain f64 sum of a flat
 * array, of records (column by column) and of segments (equal rows or offsets), as version 2
 * declared them (a support table and memory-mask flags). Written against plugin.h's version 2
 * section alone, as a plugin built then was. */
#include <string.h>

#include "xreduce/backend/plugin.h"

static int32_t always(void* self, char* reason, size_t size) {
  (void)self, (void)reason, (void)size;
  return 1;
}

static double sum(const double* x, uint64_t n, uint64_t stride) {
  double s = 0;
  for (uint64_t i = 0; i < n; ++i) s += x[i * stride];
  return s;
}

static int32_t reduce(void* self, const xreduce_request_v2* q, const xreduce_options_v2* o, xreduce_result_v2* r,
                      char* message, size_t size) {
  (void)self, (void)o, (void)message, (void)size;
  const double* x = (const double*)q->data;
  r->dtype = 1; /* f64 */
  r->has_index = 0;
  if (q->segmented) { /* one sum a segment, into `out` */
    double* out = (double*)q->out;
    for (uint64_t s = 0; s < q->segment_count; ++s) {
      const uint64_t row = q->segment_count ? q->count / q->segment_count : 0;
      const uint64_t b = q->segment_offsets ? q->segment_offsets[s] : s * row;
      const uint64_t e = q->segment_offsets ? q->segment_offsets[s + 1] : (s + 1) * row;
      out[s] = sum(x + b, e - b, 1);
    }
    return 0;
  }
  if (q->width > 1) { /* records: a column's sum in each 8-byte slot of `values` */
    for (uint32_t j = 0; j < q->width; ++j) {
      const double s = sum(x + j, q->count, q->width);
      memcpy((unsigned char*)q->values + 8 * j, &s, 8);
    }
    memcpy(r->value, q->values, 8);
    return 0;
  }
  const double s = sum(x, q->count, 1);
  memcpy(r->value, &s, 8);
  return 0;
}

static xreduce_backend_v2 backend;

__attribute__((visibility("default"))) int32_t xreduce_plugin_init_v2(uint32_t host_abi, xreduce_plugin_v2* out,
                                                                      char* message, size_t message_size) {
  (void)message, (void)message_size;
  memset(&backend, 0, sizeof backend);
  backend.name = "test.abi2";
  backend.priority = -30;
  backend.engine = 0;           /* cpu_serial */
  backend.support[1][0] = 1;    /* f64 sum, exact */
  backend.memory_mask = (1u << 1) | XREDUCE_MEMORY_MASK_RECORDS | XREDUCE_MEMORY_MASK_SEGMENTS; /* host */
  backend.available = always;
  backend.reduce = reduce;
  backend.settings_info = "";
  out->abi_version = host_abi; /* 2: what the core asks a version 2 plugin with */
  out->struct_size = sizeof(xreduce_plugin_v2);
  out->name = "abi2";
  out->backend_count = 1;
  out->backends = &backend;
  out->locate = 0;
  return 0;
}
