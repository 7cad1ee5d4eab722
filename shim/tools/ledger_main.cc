// vgpu-shim-ledger FILE: prints a slot ledger (shim/preload/ledger.h) for operators and the GPU
// suite: one line per member, then "total=N peak=N members=K live_total=N reaped=N" and the
// slot's compute totals (gpu_busy_ns, throttled_ns, share_1s_pm: ledger.h, version 3).
// Reads without the lock: a snapshot, possibly a moment stale, never a wrong layout.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>

#include "shim/preload/ledger.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: vgpu-shim-ledger LEDGER_FILE\n");
    return 2;
  }
  int fd = open(argv[1], O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    perror(argv[1]);
    return 1;
  }
  using vgpu::shim::LedgerFile;
  void* p = mmap(nullptr, sizeof(LedgerFile), PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    perror("mmap");
    return 1;
  }
  const auto* f = static_cast<const LedgerFile*>(p);
  if (f->magic != LedgerFile::kMagic) {
    fprintf(stderr, "%s: not a shim ledger\n", argv[1]);
    return 1;
  }
  if (f->version != LedgerFile::kVersion) {
    fprintf(stderr, "%s: ledger version %u, this tool reads version %u\n", argv[1], f->version,
            LedgerFile::kVersion);
    return 1;
  }
  unsigned long long total = 0, live_total = 0;
  int members = 0;
  for (uint32_t i = 0; i < LedgerFile::kMaxEntries; ++i) {
    const auto& e = f->entries[i];
    if (!e.in_use) {
      continue;
    }
    ++members;
    total += e.charged;
    auto start = vgpu::shim::ProcStartTime(static_cast<pid_t>(e.pid));
    bool alive = start && *start == e.start_time;
    if (alive) {
      live_total += e.charged;
    }
    printf("member pid=%u charged=%llu peak=%llu alive=%d gpu_busy_ns=%llu throttled_ns=%llu\n",
           e.pid, static_cast<unsigned long long>(e.charged),
           static_cast<unsigned long long>(e.peak), alive ? 1 : 0,
           static_cast<unsigned long long>(e.gpu_busy_ns),
           static_cast<unsigned long long>(e.throttled_ns));
  }
  const vgpu::shim::LedgerComputeTotals c = vgpu::shim::SumLedgerCompute(*f);
  printf(
      "total=%llu peak=%llu members=%d live_total=%llu reaped=%llu gpu_busy_ns=%llu "
      "throttled_ns=%llu share_1s_pm=%u share_10s_pm=%u\n",
      total, static_cast<unsigned long long>(f->peak), members, live_total,
      static_cast<unsigned long long>(f->reaped), static_cast<unsigned long long>(c.gpu_busy_ns),
      static_cast<unsigned long long>(c.throttled_ns), c.achieved_share_1s_pm,
      c.achieved_share_10s_pm);
  return 0;
}
