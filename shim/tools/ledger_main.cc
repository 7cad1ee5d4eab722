// vgpu-shim-ledger FILE: prints a slot ledger (uapi/vgpu_ledger.h) for operators and the GPU
// suite: one line per member, then "total=N peak=N members=K live_total=N reaped=N" and the
// slot's compute totals (gpu_busy_ns, throttled_ns, share_1s_pm, share_10s_pm).
// Reads through the format's lockless reader (shim/ledger/ledger_reader.h): a consistent
// snapshot, possibly a moment stale.
#include <cstdio>

#include "shim/ledger/ledger_reader.h"
#include "shim/preload/ledger.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: vgpu-shim-ledger LEDGER_FILE\n");
    return 2;
  }
  namespace vl = vgpu::ledger;
  vl::LedgerRead read = vl::ReadLedgerFile(argv[1]);
  if (read.status == vl::LedgerReadStatus::kAbsent) {
    fprintf(stderr, "%s: no ledger yet (no process of the slot has run under the shim)\n", argv[1]);
    return 1;
  }
  if (read.status != vl::LedgerReadStatus::kOk) {
    fprintf(stderr, "%s\n", read.error.c_str());
    return 1;
  }
  const vgpu_ledger& f = *read.copy;
  unsigned long long live_total = 0;
  for (uint32_t i = 0; i < VGPU_LEDGER_MAX_ENTRIES; ++i) {
    const vgpu_ledger_entry& e = f.entries[i];
    if (!e.in_use) {
      continue;
    }
    // Liveness as the writer judges it; meaningful only in the slot's PID namespace.
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
  const vl::LedgerTotals t = vl::SumLedger(f);
  printf(
      "total=%llu peak=%llu members=%u live_total=%llu reaped=%llu gpu_busy_ns=%llu "
      "throttled_ns=%llu share_1s_pm=%u share_10s_pm=%u\n",
      static_cast<unsigned long long>(t.charged), static_cast<unsigned long long>(f.peak),
      t.members, live_total, static_cast<unsigned long long>(f.reaped),
      static_cast<unsigned long long>(t.gpu_busy_ns),
      static_cast<unsigned long long>(t.throttled_ns), t.achieved_share_1s_pm,
      t.achieved_share_10s_pm);
  return 0;
}
