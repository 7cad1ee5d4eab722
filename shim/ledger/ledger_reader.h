// Reading a shim-mode slot's ledger (uapi/vgpu_ledger.h) from outside the slot: the manager's
// metrics and control API, vgpuctl, vgpu-shim-ledger. A reader never takes the writers' lock
// and never maps the file: it preads a private copy (a file truncated under it then reads short
// instead of raising SIGBUS) and retries until the copy is consistent (the format's `seq`).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "uapi/vgpu_ledger.h"

namespace vgpu::ledger {

// The slot's figures from one consistent copy, as uapi/vgpu_ledger.h defines them.
struct LedgerTotals {
  uint64_t charged = 0;       // bytes, summed over the members present
  uint64_t peak = 0;          // max(the file's peak, charged)
  uint32_t members = 0;       // entries in use
  uint64_t gpu_busy_ns = 0;   // present + reaped + unattributed; never goes down
  uint64_t throttled_ns = 0;  // present + reaped; process-seconds
  uint32_t achieved_share_1s_pm = 0;
  uint32_t achieved_share_10s_pm = 0;
};
LedgerTotals SumLedger(const vgpu_ledger& f);

enum class LedgerReadStatus {
  kOk,            // `copy` holds a consistent snapshot
  kAbsent,        // no file, or one a shim is creating: no process of the slot ran yet
  kIoError,       // open/stat/read failed (`error` names the errno)
  kNotLedger,     // wrong magic, or a file of the right version but the wrong size
  kOtherVersion,  // a ledger of another format version (`version` holds it)
  kUnstable,      // kept changing while being read: retry later
};

struct LedgerRead {
  LedgerReadStatus status = LedgerReadStatus::kAbsent;
  std::string error;     // "" when kOk or kAbsent; else names the file and what is wrong
  uint32_t version = 0;  // the file's version, when it has a header
  std::unique_ptr<vgpu_ledger> copy;  // kOk only
};

// Reads the ledger open at `fd` (read-only is enough); `name` is used in errors.
LedgerRead ReadLedgerFd(int fd, const std::string& name);
// Opens `path` (O_NOFOLLOW: a slot directory is tenant-writable) and reads it; a missing file
// is kAbsent.
LedgerRead ReadLedgerFile(const std::string& path);

const char* LedgerReadStatusName(LedgerReadStatus s);

}  // namespace vgpu::ledger
