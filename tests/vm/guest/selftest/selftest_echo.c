// Static C check of /dev/vmselftest: the module answers, counts, and rejects bad input.
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "tests/vm/selftest/vmselftest_uapi.h"

static int failures;

#define CHECK(cond)                                                                          \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      fprintf(stderr, "selftest_echo: FAILED %s:%d: %s (errno %d %s)\n", __FILE__, __LINE__, \
              #cond, errno, strerror(errno));                                                \
      failures++;                                                                            \
    }                                                                                        \
  } while (0)

int main(void) {
  int fd = open("/dev/vmselftest", O_RDWR);
  CHECK(fd >= 0);
  if (fd < 0) return 1;
  struct vmselftest_echo e = {.in = 41};
  CHECK(ioctl(fd, VMSELFTEST_IOC_ECHO, &e) == 0);
  CHECK(e.out == 42);
  CHECK(e.calls >= 1);
  CHECK(ioctl(fd, VMSELFTEST_IOC_ECHO, (void*)16) == -1 && errno == EFAULT);
  CHECK(ioctl(fd, _IO('S', 9)) == -1 && errno == ENOTTY);
  close(fd);
  printf("selftest_echo: %d failed\n", failures);
  return failures ? 1 : 0;
}
