#include "ledger.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

namespace vgpu::shim {
namespace {

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

constexpr uint64_t kReapIntervalNs = 1000000000ull;
constexpr uint64_t kAliveRecheckNs = 1000000ull;  // 1 ms

}  // namespace

std::optional<uint64_t> ProcStartTime(pid_t pid) {
  char path[48];
  snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return std::nullopt;
  }
  char buf[1024];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) {
    return std::nullopt;
  }
  buf[n] = '\0';
  // comm (field 2) may hold spaces and parentheses: fields resume after the last ')'.
  char* p = strrchr(buf, ')');
  if (p == nullptr || p[1] != ' ') {
    return std::nullopt;
  }
  p += 2;
  char state = *p;
  if (state == 'Z' || state == 'X' || state == 'x') {
    return std::nullopt;  // exited: its driver files are closed already
  }
  // p is at field 3; field 22 is 19 fields further.
  for (int field = 3; field < 22; ++field) {
    p = strchr(p, ' ');
    if (p == nullptr) {
      return std::nullopt;
    }
    ++p;
  }
  return strtoull(p, nullptr, 10);
}

std::unique_ptr<SharedLedger> SharedLedger::Open(const std::string& path, std::string* err,
                                                 ProcStartFn start_fn) {
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) {
    *err = "cannot open ledger " + path + ": " + strerror(errno);
    return nullptr;
  }
  // Initialization is serialized with flock: the first process to find no magic sets up the
  // mutex; everyone else waits for it. (The robust mutex cannot protect its own creation.)
  if (flock(fd, LOCK_EX) != 0) {
    *err = "cannot lock ledger " + path + ": " + strerror(errno);
    close(fd);
    return nullptr;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    *err = "cannot stat ledger " + path + ": " + strerror(errno);
    close(fd);
    return nullptr;
  }
  // Another layout's file is refused before anything is written to it: its size may differ
  // (version 3's entries are larger), and the processes using it must keep it as it is.
  struct {
    uint64_t magic;
    uint32_t version;
  } head{};
  if (st.st_size >= static_cast<off_t>(sizeof head) && pread(fd, &head, sizeof head, 0) > 0 &&
      head.magic == LedgerFile::kMagic && head.version != LedgerFile::kVersion) {
    *err = "ledger " + path + " has version " + std::to_string(head.version) +
           ", this shim writes version " + std::to_string(LedgerFile::kVersion) +
           ": the slot's processes run different shim releases (restart them all)";
    close(fd);
    return nullptr;
  }
  if (static_cast<size_t>(st.st_size) < sizeof(LedgerFile) &&
      ftruncate(fd, sizeof(LedgerFile)) != 0) {
    *err = "cannot size ledger " + path + ": " + strerror(errno);
    close(fd);
    return nullptr;
  }
  void* p = mmap(nullptr, sizeof(LedgerFile), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    *err = "cannot map ledger " + path + ": " + strerror(errno);
    close(fd);
    return nullptr;
  }
  auto* file = static_cast<LedgerFile*>(p);
  if (file->magic != LedgerFile::kMagic) {
    memset(file, 0, sizeof *file);
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&file->mu, &attr);
    pthread_mutexattr_destroy(&attr);
    file->version = LedgerFile::kVersion;
    file->max_entries = LedgerFile::kMaxEntries;
    __atomic_store_n(&file->magic, LedgerFile::kMagic, __ATOMIC_RELEASE);
  } else if (file->version != LedgerFile::kVersion) {  // changed since the check above
    *err = "ledger " + path + " has version " + std::to_string(file->version) +
           ", this shim writes version " + std::to_string(LedgerFile::kVersion);
    munmap(p, sizeof(LedgerFile));
    close(fd);
    return nullptr;
  }
  flock(fd, LOCK_UN);
  close(fd);  // the mapping keeps the file
  return std::unique_ptr<SharedLedger>(new SharedLedger(path, file, start_fn));
}

SharedLedger::~SharedLedger() {
  for (const Watch& w : watches_) {
    if (w.pidfd >= 0) {
      close(w.pidfd);
    }
  }
  munmap(file_, sizeof(LedgerFile));
}

void SharedLedger::Lock() {
  int rc = pthread_mutex_lock(&file_->mu);
  if (rc == EOWNERDEAD) {
    // The holder died mid-update; every field write is a single store, so state is whole.
    pthread_mutex_consistent(&file_->mu);
    if (__atomic_load_n(&file_->seq, __ATOMIC_RELAXED) & 1) {
      EndMoveLocked();  // it died moving counters: what it moved is whole (RetireLocked)
    }
  }
}

void SharedLedger::BeginMoveLocked() {
  __atomic_store_n(&file_->seq, file_->seq + 1, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_RELEASE);  // odd before any counter moves
}

void SharedLedger::EndMoveLocked() {
  __atomic_store_n(&file_->seq, file_->seq + 1, __ATOMIC_RELEASE);  // even after they moved
}

void SharedLedger::RetireLocked(LedgerEntry& e) {
  const bool move = e.gpu_busy_ns != 0 || e.throttled_ns != 0;
  if (move) {
    BeginMoveLocked();
  }
  // Added before the entry is cleared: a holder that dies in between leaves them counted twice
  // (a counter jumps up), never not at all (a counter would go down).
  file_->reaped_busy_ns += e.gpu_busy_ns;
  file_->reaped_throttled_ns += e.throttled_ns;
  for (LedgerClient& c : file_->clients) {
    if (c.pid == e.pid) {
      c = {};
    }
  }
  for (LedgerDup& d : file_->dups) {
    if (d.pid == e.pid) {  // the driver dropped its dups with its files: their charge goes too
      d = {};
    }
  }
  e.in_use = 0;
  e.charged = 0;
  e.gpu_busy_ns = 0;
  e.throttled_ns = 0;
  if (move) {
    EndMoveLocked();
  }
  if (file_->share_pid == e.pid) {
    file_->achieved_share_1s_pm = 0;  // its writer left: no stale share for a quiet slot
    file_->achieved_share_10s_pm = 0;
    file_->share_pid = 0;
  }
}

void SharedLedger::Unlock() { pthread_mutex_unlock(&file_->mu); }

LedgerEntry* SharedLedger::Self() {
  if (forked_.exchange(false, std::memory_order_relaxed)) {
    AttachLocked(getpid());
  }
  if (self_index_ < 0) {
    return nullptr;
  }
  LedgerEntry* e = &file_->entries[self_index_];
  if (e->in_use && e->pid == static_cast<uint32_t>(self_pid_) && e->start_time == self_start_) {
    return e;
  }
  // Reaped by someone who thought we were dead (should not happen while we live): re-add.
  for (uint32_t i = 0; i < LedgerFile::kMaxEntries; ++i) {
    if (!file_->entries[i].in_use) {
      UseEntryLocked(i, {static_cast<uint32_t>(self_pid_), 1, self_start_, 0, 0, 0, 0});
      self_index_ = static_cast<int>(i);
      // Our old entry's counters went to the accumulators: count only what comes after.
      busy_base_ = busy_published_;
      throttled_base_ = throttled_published_;
      return &file_->entries[i];
    }
  }
  self_index_ = -1;
  return nullptr;
}

uint32_t SharedLedger::EndLocked() const {
  uint32_t end = file_->high_water;
  return end < LedgerFile::kMaxEntries ? end : LedgerFile::kMaxEntries;
}

void SharedLedger::UseEntryLocked(uint32_t i, const LedgerEntry& e) {
  // Raise the bound before the entry exists: a holder that dies in between leaves a bound one
  // too high (harmless), never an entry nobody sums.
  if (i >= file_->high_water) {
    __atomic_store_n(&file_->high_water, i + 1, __ATOMIC_RELAXED);
  }
  file_->entries[i] = e;
}

bool SharedLedger::Attach(pid_t pid) {
  Lock();
  bool ok = AttachLocked(pid == 0 ? getpid() : pid);
  Unlock();
  return ok;
}

bool SharedLedger::AttachLocked(pid_t pid) {
  auto start = start_fn_(pid);
  self_pid_ = pid;
  // A new member (a fork child, or an image after exec): its controller counts from zero.
  busy_base_ = throttled_base_ = busy_published_ = throttled_published_ = 0;
  self_start_ = start.value_or(0);
  int free_index = -1;
  self_index_ = -1;
  const uint32_t end = EndLocked();
  for (uint32_t i = 0; i < end; ++i) {
    LedgerEntry& e = file_->entries[i];
    if (!e.in_use) {
      if (free_index < 0) {
        free_index = static_cast<int>(i);
      }
      continue;
    }
    if (e.pid == static_cast<uint32_t>(pid)) {
      if (e.start_time == self_start_) {
        // Our image before exec: its memory went with its files, its counters to the slot's
        // accumulators (the new image's controller starts from zero).
        e.charged = 0;
        if (e.gpu_busy_ns != 0 || e.throttled_ns != 0) {
          BeginMoveLocked();
          file_->reaped_busy_ns += e.gpu_busy_ns;
          file_->reaped_throttled_ns += e.throttled_ns;
          e.gpu_busy_ns = e.throttled_ns = 0;
          EndMoveLocked();
        }
        self_index_ = static_cast<int>(i);
      } else {
        RetireLocked(e);  // an earlier process with our pid: dead
        ++file_->reaped;
        if (free_index < 0) {
          free_index = static_cast<int>(i);
        }
      }
    }
  }
  if (self_index_ < 0 && free_index < 0 && end < LedgerFile::kMaxEntries) {
    free_index = static_cast<int>(end);  // every entry below the bound is taken
  }
  if (self_index_ < 0 && free_index < 0) {
    ReapLocked();
    for (uint32_t i = 0; i < LedgerFile::kMaxEntries; ++i) {
      if (!file_->entries[i].in_use) {
        free_index = static_cast<int>(i);
        break;
      }
    }
  }
  if (self_index_ < 0 && free_index >= 0) {
    UseEntryLocked(static_cast<uint32_t>(free_index),
                   {static_cast<uint32_t>(pid), 1, self_start_, 0, 0, 0, 0});
    self_index_ = free_index;
  }
  return self_index_ >= 0;
}

void SharedLedger::Detach() {
  Lock();
  if (LedgerEntry* e = Self()) {
    RetireLocked(*e);  // the charge leaves the slot, the counters stay in its totals
  }
  self_index_ = -1;
  Unlock();
}

uint64_t SharedLedger::TotalLocked() {
  uint64_t total = 0;
  const uint32_t end = EndLocked();
  for (uint32_t i = 0; i < end; ++i) {
    if (file_->entries[i].in_use) {
      total += file_->entries[i].charged;
    }
  }
  return total;
}

int SharedLedger::ReapLocked() {
  int n = 0;
  uint32_t new_end = 0;
  const uint32_t end = EndLocked();
  for (uint32_t i = 0; i < end; ++i) {
    LedgerEntry& e = file_->entries[i];
    if (!e.in_use) {
      continue;
    }
    if (static_cast<int>(i) != self_index_) {
      auto start = start_fn_(static_cast<pid_t>(e.pid));
      if (!start || *start != e.start_time) {
        RetireLocked(e);
        ++n;
        continue;
      }
    }
    new_end = i + 1;
  }
  // Every entry at or above new_end is free now: lower the bound (one store, crash-safe).
  __atomic_store_n(&file_->high_water, new_end, __ATOMIC_RELAXED);
  file_->reaped += static_cast<uint64_t>(n);
  file_->last_reap_ns = NowNs();
  return n;
}

void SharedLedger::MaybeReapLocked() {
  if (NowNs() - file_->last_reap_ns >= kReapIntervalNs) {
    ReapLocked();
  }
}

int SharedLedger::TryCharge(uint64_t bytes, uint64_t quota) {
  Lock();
  LedgerEntry* self = Self();
  if (self == nullptr) {
    Unlock();
    return -ENOSPC;
  }
  uint64_t total = TotalLocked();
  if (quota != 0 && (total + bytes > quota || total + bytes < total)) {
    if (ReapLocked() > 0) {
      total = TotalLocked();
    }
    if (total + bytes > quota || total + bytes < total) {
      Unlock();
      return -ENOSPC;
    }
  }
  self->charged += bytes;
  if (self->charged > self->peak) {
    self->peak = self->charged;
  }
  if (total + bytes > file_->peak) {
    file_->peak = total + bytes;
  }
  Unlock();
  return 0;
}

void SharedLedger::ForceCharge(uint64_t bytes) {
  Lock();
  if (LedgerEntry* self = Self()) {
    self->charged += bytes;
    if (self->charged > self->peak) {
      self->peak = self->charged;
    }
    uint64_t total = TotalLocked();
    if (total > file_->peak) {
      file_->peak = total;
    }
  }
  Unlock();
}

void SharedLedger::Uncharge(uint64_t bytes) {
  Lock();
  if (LedgerEntry* self = Self()) {
    self->charged = self->charged > bytes ? self->charged - bytes : 0;
  }
  Unlock();
}

LedgerEntry* SharedLedger::MemberLocked(uint32_t pid) {
  const uint32_t end = EndLocked();
  for (uint32_t i = 0; i < end; ++i) {
    if (file_->entries[i].in_use && file_->entries[i].pid == pid) {
      return &file_->entries[i];
    }
  }
  return nullptr;
}

void SharedLedger::AddChargeLocked(LedgerEntry& e, uint64_t bytes) {
  e.charged += bytes;
  if (e.charged > e.peak) {
    e.peak = e.charged;
  }
}

void SharedLedger::RecordClient(uint32_t h_client, bool live) {
  Lock();
  LedgerEntry* self = Self();
  LedgerClient* free_slot = nullptr;
  for (LedgerClient& c : file_->clients) {
    if (self != nullptr && c.pid == self->pid && c.h_client == h_client) {
      if (!live) {
        c = {};
      }
      Unlock();
      return;
    }
    if (c.pid == 0 && free_slot == nullptr) {
      free_slot = &c;
    }
  }
  // A full table only costs sharing: another member's dup of this client's memory is refused.
  if (live && self != nullptr && free_slot != nullptr) {
    *free_slot = {self->pid, h_client};
  }
  Unlock();
}

bool SharedLedger::ClientOfOtherMember(uint32_t h_client) {
  Lock();
  const LedgerEntry* self = Self();
  const uint32_t self_pid = self != nullptr ? self->pid : static_cast<uint32_t>(getpid());
  MaybeReapLocked();  // a dead member's client handles may be reused by the driver
  bool found = false;
  for (const LedgerClient& c : file_->clients) {
    if (c.pid != 0 && c.h_client == h_client && c.pid != self_pid &&
        MemberLocked(c.pid) != nullptr) {
      found = true;
      break;
    }
  }
  Unlock();
  return found;
}

void SharedLedger::RecordDup(uint32_t h_client, uint32_t h_object, bool live) {
  Lock();
  LedgerEntry* self = Self();
  if (self == nullptr) {
    Unlock();
    return;
  }
  if (live) {
    for (LedgerDup& d : file_->dups) {
      if (d.pid == 0) {
        d = {self->pid, h_client, h_object, 0, 0};
        break;
      }
    }
    Unlock();
    return;
  }
  for (LedgerDup& d : file_->dups) {
    if (d.pid != self->pid || d.h_client != h_client || d.h_object != h_object) {
      continue;
    }
    const uint64_t bytes = d.bytes;
    d = {};
    if (bytes != 0) {  // the owner let go first: the charge moves to the next holder, if any
      self->charged = self->charged > bytes ? self->charged - bytes : 0;
      for (LedgerDup& next : file_->dups) {
        LedgerEntry* holder =
            next.pid != 0 && next.h_client == h_client && next.h_object == h_object
                ? MemberLocked(next.pid)
                : nullptr;
        if (holder != nullptr) {
          AddChargeLocked(*holder, bytes);
          next.bytes += bytes;
          break;
        }
      }
    }
    break;
  }
  Unlock();
}

bool SharedLedger::PassCharge(uint32_t h_client, uint32_t h_object, uint64_t bytes) {
  Lock();
  LedgerEntry* self = Self();
  bool moved = false;
  for (LedgerDup& d : file_->dups) {
    if (d.pid == 0 || d.h_client != h_client || d.h_object != h_object ||
        (self != nullptr && d.pid == self->pid)) {
      continue;
    }
    if (LedgerEntry* holder = MemberLocked(d.pid)) {
      AddChargeLocked(*holder, bytes);
      d.bytes += bytes;
      if (self != nullptr) {
        self->charged = self->charged > bytes ? self->charged - bytes : 0;
      }
      moved = true;
      break;
    }
  }
  Unlock();
  return moved;
}

bool SharedLedger::MemberMayHaveDiedLocked() {
  if (start_fn_ != ProcStartTime) {
    return true;  // fake processes (tests): no pidfd can watch them
  }
  // Within kAliveRecheckNs of a poll that found every member alive, trust it: a member's GPU
  // memory is freed when its files close, before it becomes a zombie, so the only effect is a
  // view that counts a just-dead member for at most that long. Refusals always reap (TryCharge).
  const uint64_t now = NowNs();
  if (now - all_alive_ns_ < kAliveRecheckNs) {
    return false;
  }
  const uint32_t end = EndLocked();
  if (watches_.size() < end) {
    watches_.resize(end);
  }
  pollfd fds[LedgerFile::kMaxEntries];
  uint32_t index[LedgerFile::kMaxEntries];
  nfds_t n = 0;
  for (uint32_t i = 0; i < end; ++i) {
    const LedgerEntry& e = file_->entries[i];
    Watch& w = watches_[i];
    if (!e.in_use || static_cast<int>(i) == self_index_) {
      if (w.pidfd >= 0) {  // the member left or was reaped
        close(w.pidfd);
        w = {};
      }
      continue;
    }
    if (w.pidfd < 0 || w.pid != e.pid || w.start_time != e.start_time) {
      if (w.pidfd >= 0) {
        close(w.pidfd);
      }
      w = {e.pid, e.start_time, -1};
      // Open first, then check the start time: if it still matches, the pidfd is the member
      // (a pid is not reused while its process lives). pidfds are close-on-exec.
      int fd = static_cast<int>(syscall(SYS_pidfd_open, static_cast<pid_t>(e.pid), 0u));
      if (fd < 0) {
        return true;  // gone (ESRCH) or no pidfds here: the full reap decides
      }
      w.pidfd = fd;
      auto start = start_fn_(static_cast<pid_t>(e.pid));
      if (!start || *start != e.start_time) {
        return true;
      }
    }
    index[n] = i;
    fds[n++] = {w.pidfd, POLLIN, 0};
  }
  // A pidfd polls readable once its process has exited (zombie included): one system call for
  // all members. An error, or POLLNVAL (the application closed our fd), also means "reap".
  if (n > 0 && poll(fds, n, 0) != 0) {
    for (nfds_t k = 0; k < n; ++k) {
      if (fds[k].revents & POLLNVAL) {
        watches_[index[k]] = {};  // not ours any more (closed behind our back): reopen later
      } else if (fds[k].revents != 0) {
        watches_[index[k]].readable = true;  // exited, or the fd number is someone else's now
      }
    }
    return true;
  }
  all_alive_ns_ = now;
  return false;
}

uint64_t SharedLedger::Charged() {
  Lock();
  // Views (FB_GET_INFO, NVML, nvidia-smi) read this: reap first if any member may have died,
  // so a killed member's memory shows as free at once.
  if (MemberMayHaveDiedLocked()) {
    ReapLocked();
    // A member still alive after the reap whose pidfd polled readable: the application closed
    // our pidfd and the number now names another file. Forget it (not ours to close) and watch
    // that member afresh next time, instead of reaping through /proc on every read from now on.
    const uint32_t end = EndLocked();
    for (uint32_t i = 0; i < end && i < watches_.size(); ++i) {
      Watch& w = watches_[i];
      if (w.readable) {
        const LedgerEntry& e = file_->entries[i];
        if (e.in_use && e.pid == w.pid && e.start_time == w.start_time) {
          w = {};
        } else {
          w.readable = false;
        }
      }
    }
  }
  uint64_t total = TotalLocked();
  Unlock();
  return total;
}

uint64_t SharedLedger::ChargedBy(pid_t pid) {
  Lock();
  uint64_t v = 0;
  const uint32_t end = EndLocked();
  for (uint32_t i = 0; i < end; ++i) {
    const LedgerEntry& e = file_->entries[i];
    if (e.in_use && e.pid == static_cast<uint32_t>(pid)) {
      v = e.charged;
    }
  }
  Unlock();
  return v;
}

bool SharedLedger::IsMember(pid_t pid) {
  Lock();
  MaybeReapLocked();
  bool found = false;
  const uint32_t end = EndLocked();
  for (uint32_t i = 0; i < end && !found; ++i) {
    const LedgerEntry& e = file_->entries[i];
    found = e.in_use && e.pid == static_cast<uint32_t>(pid);
  }
  Unlock();
  return found;
}

uint64_t SharedLedger::Peak() {
  Lock();
  uint64_t v = file_->peak;
  Unlock();
  return v;
}

int SharedLedger::Reap() {
  Lock();
  int n = ReapLocked();
  Unlock();
  return n;
}

void SharedLedger::PublishCompute(uint64_t busy_ns, uint64_t throttled_ns,
                                  uint32_t achieved_share_1s_pm, uint32_t achieved_share_10s_pm,
                                  const LedgerBusySample* unattributed, size_t n_unattributed) {
  Lock();
  if (LedgerEntry* self = Self()) {
    busy_published_ = busy_ns;
    throttled_published_ = throttled_ns;
    const uint64_t busy = busy_ns > busy_base_ ? busy_ns - busy_base_ : 0;
    const uint64_t throttled = throttled_ns > throttled_base_ ? throttled_ns - throttled_base_ : 0;
    // Each a single store, each only upward: a lockless reader sees every counter monotonic
    // without the seqlock.
    if (busy > self->gpu_busy_ns) {
      self->gpu_busy_ns = busy;
    }
    if (throttled > self->throttled_ns) {
      self->throttled_ns = throttled;
    }
    // Each sample once for the slot, whichever member publishes it first. A member that
    // publishes a sample after another member published a newer one loses it: only around a
    // member's first second (its reads start later than the others'), an undercount, never
    // a double count.
    for (size_t i = 0; i < n_unattributed; ++i) {
      if (unattributed[i].ts > file_->unattributed_last_ts) {
        file_->unattributed_busy_ns += unattributed[i].busy_ns;
        file_->unattributed_last_ts = unattributed[i].ts;
      }
    }
    file_->achieved_share_1s_pm = achieved_share_1s_pm;
    file_->achieved_share_10s_pm = achieved_share_10s_pm;
    file_->share_pid = self->pid;
  }
  Unlock();
}

LedgerComputeTotals SharedLedger::ComputeTotals() {
  Lock();
  LedgerComputeTotals t = SumLedgerCompute(*file_);
  Unlock();
  return t;
}

}  // namespace vgpu::shim
