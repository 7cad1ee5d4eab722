// libvshim-hookprobe.so: stands in for shim/compute in the hook tests. Registers an object hook
// with libvgpu-shim.so (found at run time, as the compute part is linked in for real) and
// prints each event, the owning ctl fd, and the result of a filter-bypassing RM control.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>

#include "shim/include/vshim_hooks.h"

namespace {

using SetHookFn = int (*)(vshim_obj_hook_fn, void*);
using CtlFdFn = int (*)(uint32_t);
using RmControlFn = int (*)(uint32_t, uint32_t, uint32_t, void*, uint32_t, uint32_t*);

CtlFdFn ctl_fd_for_client = nullptr;
RmControlFn rm_control = nullptr;

void OnEvent(void*, const vshim_obj_info* i) {
  char line[256];
  int n = snprintf(line, sizeof line,
                   "EVENT %d client=0x%x parent=0x%x object=0x%x class=0x%x engine=%u fd_ok=%d\n",
                   static_cast<int>(i->event), i->h_client, i->h_parent, i->h_object, i->h_class,
                   i->engine_type, i->ctl_fd >= 0 && ctl_fd_for_client(i->h_client) == i->ctl_fd);
  if (write(STDERR_FILENO, line, static_cast<size_t>(n)) < 0) {
    return;
  }
  if (i->event == VSHIM_TSG_CREATED) {
    uint64_t timeslice_us = 1000;  // NVA06C_CTRL_CMD_SET_TIMESLICE {u64 timesliceUs}
    uint32_t status = 0xffff;
    int rc = rm_control(i->h_client, i->h_object, 0xa06c0103u, &timeslice_us, sizeof timeslice_us,
                        &status);
    n = snprintf(line, sizeof line, "CTRL rc=%d status=0x%x\n", rc, status);
    if (write(STDERR_FILENO, line, static_cast<size_t>(n)) < 0) {
      return;
    }
  }
}

__attribute__((constructor)) void Register() {
  auto set_hook = reinterpret_cast<SetHookFn>(dlsym(RTLD_DEFAULT, "vshim_set_obj_hook"));
  ctl_fd_for_client = reinterpret_cast<CtlFdFn>(dlsym(RTLD_DEFAULT, "vshim_ctl_fd_for_client"));
  rm_control = reinterpret_cast<RmControlFn>(dlsym(RTLD_DEFAULT, "vshim_rm_control"));
  if (set_hook != nullptr && ctl_fd_for_client != nullptr && rm_control != nullptr) {
    set_hook(OnEvent, nullptr);
  }
}

}  // namespace
