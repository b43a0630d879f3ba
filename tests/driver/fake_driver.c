/* A stand-in for the GPU driver (libcuda.so.1) that says so whenever it is loaded: its
 * constructor appends a line to $XREDUCE_FAKE_DRIVER_LOG. The CUDA runtime loads the driver on
 * its first call, so an empty log proves that no CUDA call was made. Its cuInit finds no device,
 * so a call that does load it fails as on a machine without a GPU. */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void loaded(void) {
  const char* log = getenv("XREDUCE_FAKE_DRIVER_LOG");
  if (!log) return;
  int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) return;
  if (write(fd, "driver loaded\n", 14) < 0) { /* nothing to do */ }
  close(fd);
}

int cuInit(unsigned flags) {
  (void)flags;
  return 100; /* CUDA_ERROR_NO_DEVICE */
}

int cuDriverGetVersion(int* version) {
  *version = 13000;
  return 0;
}
