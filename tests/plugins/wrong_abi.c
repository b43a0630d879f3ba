/* A plugin built for a future ABI: the loader must refuse it with a clear message. */
#include "xreduce/backend/plugin.h"

__attribute__((visibility("default"))) int32_t xreduce_plugin_init_v3(uint32_t host_abi, xreduce_plugin_v3* out,
                                                                      char* message, size_t message_size) {
  (void)host_abi;
  (void)message;
  (void)message_size;
  out->abi_version = XREDUCE_PLUGIN_ABI_VERSION + 1;
  out->struct_size = sizeof(xreduce_plugin_v3);
  out->name = "from-the-future";
  out->backend_count = 0;
  out->backends = 0;
  out->locate = 0;
  return 0;
}
