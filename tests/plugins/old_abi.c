/* A plugin built for ABI version 1, which had another entry point: the loader must say so. */
#include <stddef.h>
#include <stdint.h>

__attribute__((visibility("default"))) int32_t xreduce_plugin_init_v1(uint32_t host_abi, void* out, char* message,
                                                                      size_t message_size) {
  (void)host_abi;
  (void)out;
  (void)message;
  (void)message_size;
  return 1;
}
