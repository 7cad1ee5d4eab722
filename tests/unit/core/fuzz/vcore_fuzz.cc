// libFuzzer target for the filter core's dispatch entry (vcore_pre/vcore_post), built with
// clang -fsanitize=fuzzer,address,undefined (tests/unit/core/fuzz/CMakeLists.txt).
//
// Input: byte 0 = flags (bit 0: 64 MiB quota, bit 1: permissive, bit 2: pid filter, bit 3:
// in-flight calls finish newest first), then records, each one step of a sequence:
//   u8 op: low 7 bits, modulo 6: 0 ctl, 1 ctl #2, 2 dev, 3 uvm: an ioctl on that file;
//          4: close and reopen ctl #2 (skipped while a call on it is in flight: the kernel's
//          fd reference keeps a file open during its calls); 5: finish one in-flight call.
//          Bit 7 on an ioctl: leave it in flight (vcore_pre now, its driver reply and
//          vcore_post at a later op 5 or at the end), so that other calls, frees and closes
//          run between a call's pre and post, as a sibling thread's do (up to 4 in flight).
//   u32 req |
//   u16 n, arg[n]   mapped at 0x10000 (each call has its own user memory)
//   u16 n, p0[n]    mapped at 0x20000 (point a params field here)
//   u16 n, p1[n]    mapped at 0x30000
//   u8 rc           0: the "driver" succeeds; else -EINVAL
//   u16 n, reply[n] written over arg (the driver's reply), then u16 n, reply0[n] over p0.
// Invariants checked (abort = finding): no host allocation leaks, the charge stays within the
// quota unless an over-quota event was counted, and after every file is closed nothing is
// charged and no object is left.
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
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

// The harness runs every call on one thread. A UVM call on a file whose earlier UVM call is still
// between pre and post (it holds the file's lock, kmod/core/uvm_external.c) would wait for that
// call on this thread forever; a real host runs it on another thread, which waits killably. So it
// is answered as a caller killed while waiting (-EINTR): the in-flight calls still interleave with
// every other call, and the refusal path is fuzzed too.
int LockFileOrKilled(void* lock) {
  return static_cast<std::mutex*>(lock)->try_lock() ? 0 : -VCORE_EINTR;
}

const vcore_host_ops* FuzzOps(bool with_pids) {
  static const std::array<vcore_host_ops, 2> ops = [] {
    std::array<vcore_host_ops, 2> o = {SimHost::kOps, vgpu::trace::kSimOpsWithPids};
    for (vcore_host_ops& op : o) op.lock_file_killable = LockFileOrKilled;
    return o;
  }();
  return &ops[with_pids ? 1 : 0];
}

// A call between its vcore_pre and its vcore_post, with its own user memory.
struct InFlight {
  unsigned file = 0;
  vcore_call* call = nullptr;
  std::unique_ptr<SimMemory> mem;
  std::vector<uint8_t> reply, reply0;
  size_t arg_size = 0, p0_size = 0;
  bool forwarded = false, fail = false;
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
  vcore_slot* slot = vcore_slot_create(FuzzOps(flags & 4), &host, &cfg, nullptr, nullptr);
  if (slot == nullptr) abort();
  vcore_file* files[4] = {vcore_file_open(slot, VCORE_FILE_CTL, nullptr),
                          vcore_file_open(slot, VCORE_FILE_CTL, nullptr),
                          vcore_file_open(slot, VCORE_FILE_DEV, nullptr),
                          vcore_file_open(slot, VCORE_FILE_UVM, nullptr)};
  std::deque<InFlight> in_flight;
  auto finish = [&](InFlight& c) {
    if (c.forwarded) {
      if (!c.reply.empty())
        c.mem->Write(0x10000, c.reply.data(), std::min(c.reply.size(), c.arg_size));
      if (!c.reply0.empty())
        c.mem->Write(0x20000, c.reply0.data(), std::min(c.reply0.size(), c.p0_size));
    }
    vcore_post(c.call, c.fail ? -VCORE_EINVAL : 0);
    vcore_stats st{};
    vcore_slot_get_stats(slot, &st);
    if (cfg.mem_quota_bytes && st.charged_bytes > cfg.mem_quota_bytes) {
      // Only a reply larger than the reservation may push past the quota.
      if (st.overquota_events == 0) abort();
    }
  };
  auto finish_one = [&]() {
    bool newest = flags & 8;
    InFlight c = std::move(newest ? in_flight.back() : in_flight.front());
    if (newest)
      in_flight.pop_back();
    else
      in_flight.pop_front();
    finish(c);
  };
  for (int calls = 0; r.ok && r.n > 0 && calls < 64; ++calls) {
    uint8_t op = r.Get<uint8_t>();
    unsigned which = (op & 0x7f) % 6;
    if (which == 5) {
      if (!in_flight.empty()) finish_one();
      continue;
    }
    if (which == 4) {
      bool busy = false;
      for (const InFlight& c : in_flight) busy |= c.file == 1;
      if (busy) continue;
      vcore_file_close(files[1]);
      files[1] = vcore_file_open(slot, VCORE_FILE_CTL, nullptr);
      continue;
    }
    uint32_t req = r.Get<uint32_t>();
    std::vector<uint8_t> arg = r.Bytes(), p0 = r.Bytes(), p1 = r.Bytes();
    uint8_t rc = r.Get<uint8_t>();
    InFlight c;
    c.file = which;
    c.reply = r.Bytes();
    c.reply0 = r.Bytes();
    c.arg_size = arg.size();
    c.p0_size = p0.size();
    c.mem = std::make_unique<SimMemory>();
    if (!arg.empty()) c.mem->Map(0x10000, arg);
    if (!p0.empty()) c.mem->Map(0x20000, p0);
    if (!p1.empty()) c.mem->Map(0x30000, p1);
    vcore_call_ctx ctx{c.mem.get(), 100u + (rc & 1), 1};
    vcore_verdict v = vcore_pre(files[which], req, 0x10000, &ctx, &c.call);
    c.forwarded = v == VCORE_FORWARD || v == VCORE_FORWARD_REWRITTEN;
    c.fail = v == VCORE_FORWARD && rc >= 128;
    if (c.forwarded) {
      for (unsigned i = 0; i < vcore_call_fd_count(c.call); ++i) {
        const vcore_fd_field* f = vcore_call_fd(c.call, i);
        int32_t x;
        if (!c.mem->Read(f->uaddr, &x, 4)) abort();  // fd fields lie in mapped memory
      }
    }
    if ((op & 0x80) && in_flight.size() < 4) {
      in_flight.push_back(std::move(c));
      continue;
    }
    finish(c);
  }
  while (!in_flight.empty()) finish_one();
  for (vcore_file*& f : files) vcore_file_close(f);
  vcore_stats st{};
  vcore_slot_get_stats(slot, &st);
  if (st.charged_bytes != 0 || st.objects != 0) abort();
  vcore_slot_destroy(slot);
  if (host.live_allocs() != 0) abort();
  return 0;
}
