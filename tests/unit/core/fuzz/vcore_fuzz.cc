// libFuzzer target for the filter core's dispatch entry (vcore_pre/vcore_post), built with
// clang -fsanitize=fuzzer,address,undefined (tests/unit/core/fuzz/CMakeLists.txt).
//
// Input: byte 0 = flags (bit 0: 64 MiB quota, bit 1: permissive, bit 2: pid filter), then
// records, each one ioctl:
//   u8 file (0 ctl, 1 ctl #2, 2 dev, 3 uvm, 4 close+reopen ctl #2) | u32 req |
//   u16 n, arg[n]   mapped at 0x10000
//   u16 n, p0[n]    mapped at 0x20000 (point a params field here)
//   u16 n, p1[n]    mapped at 0x30000
//   u8 rc           0: the "driver" succeeds; else -EINVAL
//   u16 n, reply[n] written over arg (the driver's reply), then u16 n, reply0[n] over p0.
// Invariants checked (abort = finding): no host allocation leaks, and after every file is
// closed nothing is charged and no object is left.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "shim/trace/replay_host.h"

using vgpu::trace::SimHost;
using vgpu::trace::SimMemory;

namespace {

struct Reader {
  const uint8_t* p;
  size_t n;
  bool ok = true;
  template <typename T>
  T Get() {
    T v{};
    if (n < sizeof(T)) {
      ok = false;
      return v;
    }
    memcpy(&v, p, sizeof(T));
    p += sizeof(T);
    n -= sizeof(T);
    return v;
  }
  std::vector<uint8_t> Bytes() {
    uint16_t len = Get<uint16_t>();
    if (len > n) len = static_cast<uint16_t>(n);
    std::vector<uint8_t> b(p, p + len);
    p += len;
    n -= len;
    return b;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  Reader r{data + 1, size - 1};
  uint8_t flags = data[0];
  SimHost host;
  if (flags & 4) host.SetSlotPids({100, 101});
  vcore_slot_config cfg{};
  cfg.mem_quota_bytes = (flags & 1) ? 64ull << 20 : 0;
  cfg.unknown_policy = (flags & 2) ? VCORE_UNKNOWN_PERMISSIVE : VCORE_UNKNOWN_STRICT;
  strcpy(cfg.driver_version, "580.159.04");
  vcore_slot* slot = vcore_slot_create((flags & 4) ? &vgpu::trace::kSimOpsWithPids : &SimHost::kOps,
                                       &host, &cfg, nullptr, nullptr);
  if (slot == nullptr) abort();
  vcore_file* files[4] = {vcore_file_open(slot, VCORE_FILE_CTL, nullptr),
                          vcore_file_open(slot, VCORE_FILE_CTL, nullptr),
                          vcore_file_open(slot, VCORE_FILE_DEV, nullptr),
                          vcore_file_open(slot, VCORE_FILE_UVM, nullptr)};
  for (int calls = 0; r.ok && r.n > 0 && calls < 64; ++calls) {
    uint8_t which = r.Get<uint8_t>() % 5;
    if (which == 4) {
      vcore_file_close(files[1]);
      files[1] = vcore_file_open(slot, VCORE_FILE_CTL, nullptr);
      continue;
    }
    uint32_t req = r.Get<uint32_t>();
    std::vector<uint8_t> arg = r.Bytes(), p0 = r.Bytes(), p1 = r.Bytes();
    uint8_t rc = r.Get<uint8_t>();
    std::vector<uint8_t> reply = r.Bytes(), reply0 = r.Bytes();
    SimMemory mem;
    if (!arg.empty()) mem.Map(0x10000, arg);
    if (!p0.empty()) mem.Map(0x20000, p0);
    if (!p1.empty()) mem.Map(0x30000, p1);
    vcore_call_ctx ctx{&mem, 100u + (rc & 1), 1};
    vcore_call* call = nullptr;
    vcore_verdict v = vcore_pre(files[which], req, 0x10000, &ctx, &call);
    if (v == VCORE_FORWARD || v == VCORE_FORWARD_REWRITTEN) {
      for (unsigned i = 0; i < vcore_call_fd_count(call); ++i) {
        const vcore_fd_field* f = vcore_call_fd(call, i);
        int32_t x;
        if (!mem.Read(f->uaddr, &x, 4)) abort();  // fd fields lie in mapped memory
      }
      if (!reply.empty()) mem.Write(0x10000, reply.data(), std::min(reply.size(), arg.size()));
      if (!reply0.empty()) mem.Write(0x20000, reply0.data(), std::min(reply0.size(), p0.size()));
    }
    vcore_post(call, (v == VCORE_FORWARD && rc >= 128) ? -VCORE_EINVAL : 0);
    vcore_stats st{};
    vcore_slot_get_stats(slot, &st);
    if (cfg.mem_quota_bytes && st.charged_bytes > cfg.mem_quota_bytes) {
      // Only a reply larger than the reservation may push past the quota.
      if (st.overquota_events == 0) abort();
    }
  }
  for (vcore_file*& f : files) vcore_file_close(f);
  vcore_stats st{};
  vcore_slot_get_stats(slot, &st);
  if (st.charged_bytes != 0 || st.objects != 0) abort();
  vcore_slot_destroy(slot);
  if (host.live_allocs() != 0) abort();
  return 0;
}
