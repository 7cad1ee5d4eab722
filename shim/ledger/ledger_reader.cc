#include "shim/ledger/ledger_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>

#include "vgpu/enum_names.h"

namespace vgpu::ledger {
namespace {

LedgerRead Fail(LedgerReadStatus status, std::string error) {
  LedgerRead r;
  r.status = status;
  r.error = std::move(error);
  return r;
}

LedgerRead Errno(const std::string& what, const std::string& name, int err) {
  return Fail(LedgerReadStatus::kIoError, what + " " + name + ": " + strerror(err));
}

// Reads exactly `n` bytes at `off`; false with errno set (0 on a short file).
bool PreadAll(int fd, void* buf, size_t n, off_t off) {
  auto* out = static_cast<char*>(buf);
  size_t done = 0;
  while (done < n) {
    ssize_t got = ::pread(fd, out + done, n - done, off + static_cast<off_t>(done));
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got <= 0) {
      if (got == 0) {
        errno = 0;
      }
      return false;
    }
    done += static_cast<size_t>(got);
  }
  return true;
}

}  // namespace

LedgerTotals SumLedger(const vgpu_ledger& f) {
  LedgerTotals t;
  // Only entries below high_water can be in use (uapi/vgpu_ledger.h); clamp what the file says.
  const uint32_t end = std::min<uint32_t>(f.high_water, VGPU_LEDGER_MAX_ENTRIES);
  for (uint32_t i = 0; i < end; ++i) {
    const vgpu_ledger_entry& e = f.entries[i];
    if (e.in_use) {
      ++t.members;
      t.charged += e.charged;
      t.gpu_busy_ns += e.gpu_busy_ns;
      t.throttled_ns += e.throttled_ns;
    }
  }
  t.peak = std::max(f.peak, t.charged);
  t.gpu_busy_ns += f.reaped_busy_ns + f.unattributed_busy_ns;
  t.throttled_ns += f.reaped_throttled_ns;
  t.achieved_share_1s_pm = f.achieved_share_1s_pm;
  t.achieved_share_10s_pm = f.achieved_share_10s_pm;
  return t;
}

LedgerRead ReadLedgerFd(int fd, const std::string& name) {
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    return Errno("stat ledger", name, errno);
  }
  struct {
    uint64_t magic;
    uint32_t version;
  } head{};
  if (static_cast<uint64_t>(st.st_size) < sizeof head) {
    return {};  // a shim is creating it right now (it sizes the file next)
  }
  if (!PreadAll(fd, &head, sizeof head, 0)) {
    return errno != 0 ? Errno("read ledger", name, errno)
                      : Fail(LedgerReadStatus::kUnstable, "ledger " + name + " shrank");
  }
  if (head.magic == 0) {
    return {};  // sized but not yet initialized by the shim that created it
  }
  if (head.magic != VGPU_LEDGER_MAGIC) {
    return Fail(LedgerReadStatus::kNotLedger, "ledger " + name + " is not a vgpu ledger");
  }
  if (head.version != VGPU_LEDGER_VERSION) {
    LedgerRead r = Fail(LedgerReadStatus::kOtherVersion,
                        "ledger " + name + " has version " + std::to_string(head.version) +
                            ", this reader reads version " + std::to_string(VGPU_LEDGER_VERSION) +
                            " (the slot's processes run a shim of another release)");
    r.version = head.version;
    return r;
  }
  if (static_cast<uint64_t>(st.st_size) < sizeof(vgpu_ledger)) {
    return Fail(LedgerReadStatus::kNotLedger,
                "ledger " + name + " is " + std::to_string(st.st_size) + " bytes, a version " +
                    std::to_string(VGPU_LEDGER_VERSION) + " ledger is " +
                    std::to_string(sizeof(vgpu_ledger)));
  }
  auto copy = std::make_unique<vgpu_ledger>();
  constexpr int kTries = 16;
  for (int attempt = 0;; ++attempt) {
    if (!PreadAll(fd, copy.get(), sizeof(vgpu_ledger), 0)) {
      return errno != 0 ? Errno("read ledger", name, errno)
                        : Fail(LedgerReadStatus::kNotLedger,
                               "ledger " + name + " shrank while being read");
    }
    uint64_t seq_after = 0;
    if (!PreadAll(fd, &seq_after, sizeof seq_after, offsetof(vgpu_ledger, seq))) {
      return Errno("read ledger", name, errno);
    }
    // Even and unchanged: a whole snapshot. Odd but unchanged for half the tries: a member died
    // moving its counters and none has locked the ledger since; what it moved is counted.
    if (seq_after == copy->seq && (seq_after % 2 == 0 || attempt >= kTries / 2)) {
      break;
    }
    if (attempt + 1 >= kTries) {
      return Fail(LedgerReadStatus::kUnstable,
                  "ledger " + name + " kept changing while being read");
    }
  }
  if (copy->magic != VGPU_LEDGER_MAGIC || copy->version != VGPU_LEDGER_VERSION ||
      copy->max_entries != VGPU_LEDGER_MAX_ENTRIES) {
    return Fail(LedgerReadStatus::kNotLedger, "ledger " + name + " is not a version " +
                                                  std::to_string(VGPU_LEDGER_VERSION) +
                                                  " vgpu ledger");
  }
  LedgerRead r;
  r.status = LedgerReadStatus::kOk;
  r.version = copy->version;
  r.copy = std::move(copy);
  return r;
}

LedgerRead ReadLedgerFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    if (errno == ENOENT) {
      return {};  // no process of the slot has run under the shim yet
    }
    return Errno("open ledger", path, errno);
  }
  LedgerRead r = ReadLedgerFd(fd, path);
  ::close(fd);
  return r;
}

const char* LedgerReadStatusName(LedgerReadStatus s) {
  using enum LedgerReadStatus;
  static constexpr EnumName<LedgerReadStatus> kNames[] = {
      {kOk, "ok"},
      {kAbsent, "absent"},
      {kIoError, "io-error"},
      {kNotLedger, "not-a-ledger"},
      {kOtherVersion, "other-version"},
      {kUnstable, "unstable"},
  };
  static_assert(ListsEach(kNames, kOk, kUnstable));
  return NameOf(s, kNames, "?").data();
}

}  // namespace vgpu::ledger
