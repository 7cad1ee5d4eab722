// Shim-internal side of vshim_hooks.h: what the ioctl path tells the hook registry.
#pragma once

#include <cstdint>

#include "kmod/core/vcore_types.h"

namespace vgpu::shim {

// After a forwarded call on a ctl fd returned 0. `status`: the RM status word of its parameters
// (vcore_call_status_addr), still to be checked here.
void HooksAfterCall(int ctl_fd, uint32_t nr, unsigned long req, const void* arg,
                    vcore_uptr_t status);
// A ctl file was released: its clients are gone (the driver frees them, nvidia-rm-abi.md §9.1).
void HooksCtlClosed(int ctl_fd);

}  // namespace vgpu::shim
