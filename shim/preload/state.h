// Process-wide state of libvgpu-shim.so: the slot configuration, the shared ledger, the
// filter core's slot, and one record per open NVIDIA file. Created on the first open of an
// NVIDIA node (processes that never touch the GPU never read the config).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "config.h"
#include "kmod/core/vcore.h"
#include "ledger.h"
#include "shim/base/fd_table.h"

namespace vgpu::shim {

// One open file description of an NVIDIA node, shared by the fds dup'ed from it.
struct ShimFile {
  vcore_file* core;
  DevKind kind;
  std::atomic<int> refs;
};

struct ShimState {
  SlotConfig cfg;
  std::unique_ptr<SharedLedger> ledger;  // null: the core's process-local ledger
  vcore_slot* slot = nullptr;
  std::string init_error;  // non-empty: every NVIDIA open is refused with this reason
};

// The state, initializing it on first call (thread-safe). `ctl_fd_hint` is an open ctl fd the
// init may query for the driver version if /sys and /proc do not show it; -1 if none.
ShimState* EnsureState(int ctl_fd_hint);
// The state if already initialized, else nullptr (never initializes).
ShimState* CurrentState();

// Fills the core's host and ledger op tables for `state`.
const vcore_host_ops* HostOps();
const vcore_ledger_ops* LedgerOps();

// The driver's version string, from /sys/module/nvidia/version or /proc/driver/nvidia/version;
// "" if neither says.
std::string ReadDriverVersion();
// Parses the version out of /proc/driver/nvidia/version text ("... 580.159.04  Release ...").
std::string ParseProcDriverVersion(const std::string& text);

// Cached getpid(), refreshed in a fork child.
pid_t CachedPid();
void RefreshPidAfterFork();
// True in a child that shares our memory without having gone through our fork() wrapper:
// vfork() and posix_spawn()'s CLONE_VM|CLONE_VFORK child (CPython's subprocess uses them).
// Such a child has its own fd table but our memory, so fd bookkeeping done there would
// corrupt the parent's (closing the parent's ctl fd there would refund the parent's charges).
// False in processes that never touched an NVIDIA node (no system call then).
bool InBorrowedMemory();

}  // namespace vgpu::shim
