// Two processes sharing one device buffer, the way CUDA IPC users (torch.multiprocessing, NCCL's
// intra-node paths, vLLM workers) share it: for the corpus and for the shim's same-slot checks.
// usage: ipc_pair legacy|fd [MiB=8]
//   legacy: cuMemAlloc + cuIpcGetMemHandle in the parent, cuIpcOpenMemHandle in the child
//           (RM: the child dups the parent's memory object, NV_ESC_RM_DUP_OBJECT)
//   fd:     cuMemCreate with POSIX-fd handles + cuMemExportToShareableHandle in the parent, the fd
//           passed over a unix socket (SCM_RIGHTS), cuMemImportFromShareableHandle in the child
//           (RM: NV0000_CTRL_CMD_OS_UNIX_EXPORT/IMPORT_OBJECT(S)_TO/FROM_FD and
//           GET_EXPORT_OBJECT_INFO)
// The parent fills the buffer with 0x1234, the child checks it and writes 0x5678, the parent
// checks that. Forks before cuInit (a CUDA context does not survive fork). Prints one line per
// process and "RESULT ipc=MODE ok" or "... FAIL"; exit status 0 only when both sides agree.
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cuda_check.h"

static int SendFd(int sock, int fd, const void* data, size_t len) {
  struct msghdr msg;
  struct iovec iov = {(void*)data, len};
  char ctl[CMSG_SPACE(sizeof(int))];
  memset(&msg, 0, sizeof msg);
  memset(ctl, 0, sizeof ctl);
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (fd >= 0) {
    msg.msg_control = ctl;
    msg.msg_controllen = sizeof ctl;
    struct cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof(int));
  }
  return sendmsg(sock, &msg, 0) == (ssize_t)len ? 0 : -1;
}

static int RecvFd(int sock, int* fd, void* data, size_t len) {
  struct msghdr msg;
  struct iovec iov = {data, len};
  char ctl[CMSG_SPACE(sizeof(int))];
  memset(&msg, 0, sizeof msg);
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = ctl;
  msg.msg_controllen = sizeof ctl;
  if (recvmsg(sock, &msg, MSG_WAITALL) != (ssize_t)len) {
    return -1;
  }
  *fd = -1;
  struct cmsghdr* c = CMSG_FIRSTHDR(&msg);
  if (c != NULL && c->cmsg_type == SCM_RIGHTS) {
    memcpy(fd, CMSG_DATA(c), sizeof(int));
  }
  return 0;
}

static void Context(void) {
  CUdevice dev;
  CUcontext ctx;
  CK(cuInit(0));
  CK(cuDeviceGet(&dev, 0));
  CK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cuCtxSetCurrent(ctx));
}

static CUmemAllocationProp FdProp(void) {
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  return prop;
}

// Drops this process's mapping of the shared buffer (and its handle, and the fd if any).
static void Release(int legacy, int owner, CUdeviceptr ptr, size_t bytes,
                    CUmemGenericAllocationHandle h, int fd) {
  if (legacy) {
    CK(owner ? cuMemFree(ptr) : cuIpcCloseMemHandle(ptr));
  } else {
    CK(cuMemUnmap(ptr, bytes));
    CK(cuMemAddressFree(ptr, bytes));
    CK(cuMemRelease(h));
    close(fd);
  }
}

// Counts the words of [ptr, ptr + bytes) that differ from `want`.
static size_t Mismatches(CUdeviceptr ptr, size_t bytes, uint32_t want) {
  uint32_t* host = malloc(bytes);
  size_t bad = 0;
  CK(cuMemcpyDtoH(host, ptr, bytes));
  for (size_t i = 0; i < bytes / 4; i++) {
    bad += host[i] != want;
  }
  free(host);
  return bad;
}

// The child: maps what the parent shared, checks 0x1234, writes 0x5678.
static int Child(int sock, int legacy, size_t bytes) {
  Context();
  CUdeviceptr ptr = 0;
  CUmemGenericAllocationHandle h = 0;
  int fd = -1;
  if (legacy) {
    CUipcMemHandle ipc;
    if (RecvFd(sock, &fd, &ipc, sizeof ipc) != 0) {
      return 1;
    }
    CK(cuIpcOpenMemHandle(&ptr, ipc, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
  } else {
    char tag;
    if (RecvFd(sock, &fd, &tag, 1) != 0 || fd < 0) {
      return 1;
    }
    CUmemAllocationProp prop = FdProp();
    CUmemAccessDesc access = {{CU_MEM_LOCATION_TYPE_DEVICE, 0}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CK(cuMemImportFromShareableHandle(&h, (void*)(uintptr_t)fd,
                                      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    CK(cuMemAddressReserve(&ptr, bytes, 0, 0, 0));
    CK(cuMemMap(ptr, bytes, 0, h, 0));
    CK(cuMemSetAccess(ptr, bytes, &access, 1));
    (void)prop;
  }
  size_t bad = failures ? bytes / 4 : Mismatches(ptr, bytes, 0x1234);
  if (!failures) {
    CK(cuMemsetD32(ptr, 0x5678, bytes / 4));
    CK(cuCtxSynchronize());
  }
  Release(legacy, 0, ptr, bytes, h, fd);
  printf("[%d] child saw %zu wrong words of %zu\n", getpid(), bad, bytes / 4);
  char done = (bad == 0 && failures == 0) ? 'y' : 'n';
  return SendFd(sock, -1, &done, 1) == 0 && done == 'y' ? 0 : 1;
}

int main(int argc, char** argv) {
  int legacy = argc > 1 && strcmp(argv[1], "legacy") == 0;
  if (argc < 2 || (!legacy && strcmp(argv[1], "fd") != 0)) {
    fprintf(stderr, "usage: ipc_pair legacy|fd [MiB]\n");
    return 2;
  }
  size_t bytes = (size_t)(argc > 2 ? atoi(argv[2]) : 8) << 20;
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
    perror("socketpair");
    return 1;
  }
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    close(sv[0]);
    _exit(Child(sv[1], legacy, bytes));
  }
  close(sv[1]);
  Context();
  CUdeviceptr ptr = 0;
  CUmemGenericAllocationHandle h = 0;
  int fd = -1;
  if (legacy) {
    CK(cuMemAlloc(&ptr, bytes));
  } else {
    CUmemAllocationProp prop = FdProp();
    size_t gran = 0;
    CK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    if (gran && bytes % gran) {
      bytes += gran - bytes % gran;
    }
    CUmemAccessDesc access = {{CU_MEM_LOCATION_TYPE_DEVICE, 0}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CK(cuMemCreate(&h, bytes, &prop, 0));
    CK(cuMemAddressReserve(&ptr, bytes, 0, 0, 0));
    CK(cuMemMap(ptr, bytes, 0, h, 0));
    CK(cuMemSetAccess(ptr, bytes, &access, 1));
  }
  CK(cuMemsetD32(ptr, 0x1234, bytes / 4));
  CK(cuCtxSynchronize());
  int sent;
  if (legacy) {
    CUipcMemHandle ipc;
    memset(&ipc, 0, sizeof ipc);
    CK(cuIpcGetMemHandle(&ipc, ptr));
    sent = SendFd(sv[0], -1, &ipc, sizeof ipc);
  } else {
    CK(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    char tag = 'f';
    sent = SendFd(sv[0], fd, &tag, 1);
  }
  char done = 'n';
  int got = -1;
  if (sent != 0 || RecvFd(sv[0], &got, &done, 1) != 0) {
    done = 'n';
  }
  int status = 0;
  waitpid(pid, &status, 0);
  size_t bad = Mismatches(ptr, bytes, 0x5678);
  Release(legacy, 1, ptr, bytes, h, fd);
  int ok =
      done == 'y' && bad == 0 && failures == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  printf("[%d] parent saw %zu wrong words after the child wrote\n", getpid(), bad);
  printf("RESULT ipc=%s bytes=%zu %s\n", argv[1], bytes, ok ? "ok" : "FAIL");
  return ok ? 0 : 1;
}
