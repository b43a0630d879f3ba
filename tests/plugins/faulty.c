/* Backends that misbehave in every way the C ABI allows short of a crash: the library must
 * survive each one with a clear error. Written against plugin.h alone, as a plugin from another
 * compiler would be. XREDUCE_FAULTY_CLAIM=engine|support|memory|layout makes its second backend
 * claim something that does not exist, which the loader must refuse. */
#include <stdlib.h>
#include <string.h>

#include "xreduce/backend/plugin.h"

static int32_t always(void* self, char* reason, size_t size) {
  (void)self;
  (void)reason;
  (void)size;
  return 1;
}

/* "test.bad_code": fails with an error code that does not exist. */
static int32_t bad_code(void* self, const xreduce_request_v3* q, const xreduce_options_v3* o, xreduce_result_v3* r,
                        char* message, size_t size) {
  (void)self, (void)q, (void)o, (void)r;
  strncpy(message, "a failure with a code from nowhere", size - 1);
  return 999;
}

/* "test.bad_dtype": succeeds with a result of a dtype that does not exist. */
static int32_t bad_dtype(void* self, const xreduce_request_v3* q, const xreduce_options_v3* o, xreduce_result_v3* r,
                         char* message, size_t size) {
  (void)self, (void)q, (void)o, (void)message, (void)size;
  r->dtype = 77;
  return 0;
}

/* "test.wrong_type": succeeds with an f64 where an f32 sum is due, and an index nobody asked for. */
static int32_t wrong_type(void* self, const xreduce_request_v3* q, const xreduce_options_v3* o, xreduce_result_v3* r,
                          char* message, size_t size) {
  (void)self, (void)q, (void)o, (void)message, (void)size;
  r->dtype = 1;
  r->has_index = 1;
  memset(r->value, 0, sizeof r->value);
  return 0;
}

static xreduce_backend_v3 backends[3];
static xreduce_feature_set_v3 sets[3];

__attribute__((visibility("default"))) int32_t xreduce_plugin_init_v3(uint32_t host_abi, xreduce_plugin_v3* out,
                                                                      char* message, size_t message_size) {
  (void)message, (void)message_size;
  const char* names[3] = {"test.bad_code", "test.bad_dtype", "test.wrong_type"};
  int32_t (*reduce[3])(void*, const xreduce_request_v3*, const xreduce_options_v3*, xreduce_result_v3*, char*, size_t) = {
      bad_code, bad_dtype, wrong_type};
  for (int i = 0; i < 3; ++i) {
    memset(&sets[i], 0, sizeof sets[i]);
    sets[i].dtypes = 1u << 0;     /* f32 */
    sets[i].ops = 1u << 0;        /* sum */
    sets[i].layouts = 1u << 0;    /* all */
    sets[i].accuracies = 1u << 0; /* standard */
    sets[i].memory = 1u << 1;     /* host */
    sets[i].passes = 1u << 0;     /* one op */
    sets[i].support = 1;          /* exact */
    memset(&backends[i], 0, sizeof backends[i]);
    backends[i].name = names[i];
    backends[i].priority = -20;
    backends[i].engine = 0; /* cpu_serial */
    backends[i].feature_set_count = 1;
    backends[i].feature_sets = &sets[i];
    backends[i].available = always;
    backends[i].reduce = reduce[i];
    backends[i].settings_info = "";
  }
  const char* claim = getenv("XREDUCE_FAULTY_CLAIM");
  if (claim && strcmp(claim, "engine") == 0) backends[1].engine = 9;
  if (claim && strcmp(claim, "support") == 0) sets[1].support = 7;
  if (claim && strcmp(claim, "memory") == 0) sets[1].memory |= 1u << 9;
  if (claim && strcmp(claim, "layout") == 0) sets[1].layouts |= 1u << 12;
  out->abi_version = host_abi == XREDUCE_PLUGIN_ABI_VERSION ? XREDUCE_PLUGIN_ABI_VERSION : 0;
  out->struct_size = sizeof(xreduce_plugin_v3);
  out->name = "faulty";
  out->backend_count = 3;
  out->backends = backends;
  out->locate = 0;
  return 0;
}
