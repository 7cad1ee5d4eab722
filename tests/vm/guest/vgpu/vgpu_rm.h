// Helpers for the vgpu guest suite: slots over kmodclient, a tenant's RM session through the
// proxy nodes, and nvsim's own view (debugfs) to compare charges against.
#pragma once

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "tests/vm/guest/nvsim/nvsim_rm.h"
#include "vgpu/kmodclient.h"

namespace vgpu_test {

using namespace nvsim_test;  // NOLINT: RawIoctl, Alloc, Free, Control, AllocVidmem, FbInfo

inline constexpr uint64_t kKiB = 1ull << 10;
// The per-slot caps on scheduling objects and VA spaces (kmod/core/vcore.h,
// VCORE_SLOT_MAX_TSGS / _CHANNELS / _VASPACES).
inline constexpr uint32_t kMaxTsgs = 64, kMaxChannels = 1024, kMaxVaspaces = 64;
// UVM files per slot (VCORE_SLOT_MAX_UVM_FILES).
inline constexpr uint32_t kMaxUvmFiles = 128;

inline std::unique_ptr<vgpu::kmod::Client> Netlink() {
  auto c = vgpu::kmod::Client::Open();
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? std::move(c.value()) : nullptr;
}

// nvsim's used video memory of GPU 0 (debugfs), the driver's own view.
inline uint64_t NvsimUsedBytes() {
  std::ifstream f("/sys/kernel/debug/nvsim/gpu0");
  std::string k1, k2;
  uint64_t heap = 0, used = ~0ull;
  f >> k1 >> heap >> k2 >> used;
  return used;
}

// nvsim's module parameters (its test hooks and counters, tests/vm/nvsim/README.md), as root.
inline bool WriteNvsimParam(const std::string& name, uint64_t value) {
  std::ofstream f("/sys/module/nvsim/parameters/" + name);
  f << value;
  f.flush();
  return f.good();
}

inline uint64_t ReadNvsimParam(const std::string& name) { return NvsimParam(name); }

// A comma list into one of nvsim's array parameters.
inline bool WriteNvsimList(const std::string& name, const std::string& list) {
  std::ofstream f("/sys/module/nvsim/parameters/" + name);
  f << list;
  f.flush();
  return f.good();
}

// Arms nvsim's sibling hook (tests/vm/nvsim/nvsim_sibling.c) for this process's next escape `nr`:
// another task on this mm stores the u32 `values` at `offsets` (comma lists) of its argument
// (nested false) or of the buffer the u64 at 16 points to (nested true), or replaces the pages
// holding them (replace true), just before nvsim copies the argument in.
inline bool ArmRmSibling(uint32_t nr, bool nested, const std::string& offsets,
                         const std::string& values, bool replace) {
  return WriteNvsimParam("sibling_rm_nr", nr) && WriteNvsimParam("sibling_rm_nested", nested) &&
         WriteNvsimList("sibling_rm_offsets", offsets) &&
         WriteNvsimList("sibling_rm_values", values) &&
         WriteNvsimParam("sibling_rm_replace", replace) &&
         WriteNvsimParam("sibling_rm_tgid", static_cast<uint64_t>(getpid()));
}

// Contiguous video memory of `size` owned by `owner`, 2 MiB aligned (NV01_MEMORY_LOCAL_USER).
inline nv_memory_allocation_params VidmemParams(uint32_t owner, uint64_t size) {
  nv_memory_allocation_params mp{};
  mp.owner = owner;
  mp.flags = 0x1c101;
  mp.alignment = 2 * kMiB;
  mp.size = size;
  return mp;
}

// A Debian kernel (release ending in -amd64), not the ~50x slower KASAN one: races run longer.
inline bool DebianKernel() {
  std::ifstream f("/proc/sys/kernel/osrelease");
  std::string r;
  f >> r;
  return r.size() > 6 && r.compare(r.size() - 6, 6, "-amd64") == 0;
}

// A slot created for one test and destroyed (deferred, so it never fails) at scope exit.
class ScopedSlot {
 public:
  explicit ScopedSlot(uint64_t quota, const char* name = "test", uint32_t flags = 0) {
    nl_ = Netlink();
    vgpu::kmod::SlotSpec spec;
    spec.gpu = 0;
    spec.flags = flags;
    spec.config.name = name;
    if (quota) spec.config.mem_quota = quota;
    auto s = nl_->CreateSlot(spec);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    if (s.ok()) info_ = *s;
    ok_ = s.ok();
  }
  ~ScopedSlot() {
    if (ok_) (void)nl_->DestroySlot(info_.id, VGPU_DEL_F_DEFER);
  }
  bool ok() const { return ok_; }
  uint32_t id() const { return info_.id; }
  std::string ctl() const { return "/dev/" + info_.node_ctl; }
  std::string dev() const { return "/dev/" + info_.node_dev; }
  vgpu::kmod::SlotInfo Get() const {
    auto s = nl_->GetSlot(info_.id);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? *s : vgpu::kmod::SlotInfo{};
  }
  uint64_t Stat(int stat) const { return Get().stats[stat]; }
  vgpu::kmod::Client& nl() { return *nl_; }

 private:
  std::unique_ptr<vgpu::kmod::Client> nl_;
  vgpu::kmod::SlotInfo info_;
  bool ok_ = false;
};

// What `read` returns once it reads `want` (or what it read after ~2 s).
template <typename Read>
inline auto Settled(Read read, decltype(read()) want) {
  auto got = read();
  for (int i = 0; i < 100 && got != want; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    got = read();
  }
  return got;
}

// The slot's charge once it has settled at `want`. A proxy file whose real file the driver still
// holds when it closes (a dev file registered to a ctl file closes after it; a mapping) is
// finished by a worker once the driver's last reference went (kmod/file_release.c), a few ms later:
// the driver frees first, then the charge is refunded, so a settled charge of 0 means the driver
// holds nothing for the slot either.
inline uint64_t SettledCharge(const ScopedSlot& slot, uint64_t want) {
  return Settled([&] { return slot.Stat(VGPU_STAT_MEM_CHARGED); }, want);
}

// The slot's open files once they have settled at `want`: that worker refunds a file's charge
// first and uncounts the file after it (vgpu_file_finish, kmod/file_release.c).
inline uint32_t SettledOpenFiles(const ScopedSlot& slot, uint32_t want) {
  return Settled([&] { return slot.Get().open_files; }, want);
}

// One tenant's RM session through a slot's nodes, as libcuda builds it: ctl file, a
// registered dev file, a client, device 0 and its subdevice.
struct Session {
  int ctl = -1;
  int dev = -1;
  uint32_t client = 0;
  uint32_t device = 0xd0000001;
  uint32_t subdevice = 0xd0000002;

  Session() = default;
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session() {
    if (dev >= 0) close(dev);
    if (ctl >= 0) close(ctl);
  }

  // Returns "" or what failed.
  std::string Open(const std::string& ctl_path, const std::string& dev_path) {
    ctl = open(ctl_path.c_str(), O_RDWR | O_CLOEXEC);
    if (ctl < 0) return "open " + ctl_path + ": " + strerror(errno);
    dev = open(dev_path.c_str(), O_RDWR | O_CLOEXEC);
    if (dev < 0) return "open " + dev_path + ": " + strerror(errno);
    nv_ioctl_register_fd r{ctl};
    Rc rc = RawIoctl(dev, NV_ESC_REGISTER_FD, &r, sizeof(r));
    if (rc.ret) return "REGISTER_FD: " + std::string(strerror(rc.err));
    if (int64_t st = AllocClient(ctl, &client); st != NV_OK) return "client: " + std::to_string(st);
    nv0080_alloc_params dp{};
    if (int64_t st = Alloc(ctl, client, client, &device, NV01_DEVICE_0, &dp); st != NV_OK)
      return "device: " + std::to_string(st);
    uint32_t sub_params[1] = {0};
    if (int64_t st = Alloc(ctl, client, device, &subdevice, NV20_SUBDEVICE_0, sub_params);
        st != NV_OK)
      return "subdevice: " + std::to_string(st);
    return "";
  }

  int64_t Vidmem(uint32_t handle, uint64_t size) {
    return AllocVidmem(ctl, client, device, &handle, &size);
  }
  // `size` bytes of system memory (NV01_MEMORY_SYSTEM) as `handle`, owned by this client.
  int64_t Sysmem(uint32_t handle, uint64_t size) {
    nv_memory_allocation_params mp{};
    mp.owner = client;
    mp.size = size;
    return Alloc(ctl, client, device, &handle, NV01_MEMORY_SYSTEM, &mp);
  }
  int64_t FreeObj(uint32_t handle) { return Free(ctl, client, device, handle); }
  uint32_t Fb(uint32_t index) { return FbInfo(ctl, client, subdevice, index); }
};

// A va-space file of the slot's UVM node after UVM_INITIALIZE, or -1.
inline int OpenUvm(const ScopedSlot& slot) {
  int uvm = open(("/dev/vgpu-uvm" + std::to_string(slot.id())).c_str(), O_RDWR | O_CLOEXEC);
  if (uvm < 0) return -1;
  uvm_initialize_params ip{};
  if (ioctl(uvm, UVM_INITIALIZE, &ip) != 0) {
    close(uvm);
    return -1;
  }
  return uvm;
}

// A va-space file of the UVM node at `path` after a UVM_INITIALIZE that says NV_OK, or -1.
inline int OpenUvmAt(const std::string& path) {
  const int uvm = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (uvm < 0) return -1;
  uvm_initialize_params ip{};
  if (ioctl(uvm, UVM_INITIALIZE, &ip) != 0 || ip.rmStatus != NV_OK) {
    close(uvm);
    return -1;
  }
  return uvm;
}

inline int OpenUvmOf(const ScopedSlot& slot) {
  return OpenUvmAt("/dev/vgpu-uvm" + std::to_string(slot.id()));
}

// External mappings, as libcuda maps every cuMemAlloc (docs/nvidia-rm-abi.md §4.2):
// CREATE_EXTERNAL_RANGE of [va, va + range) (range 0: size) + MAP_EXTERNAL_ALLOCATION of
// (client, memory) at [va, va + size) on GPU 0; the map's rmStatus, or ~0u if a call failed
// outright.
inline uint32_t MapExternal(int uvm, uint64_t va, uint64_t size, uint32_t client, uint32_t memory,
                            uint64_t range = 0) {
  if (UvmCreateRange(uvm, va, range ? range : size) != NV_OK) return ~0u;
  return UvmMapOnGpu0(uvm, va, size, client, memory);
}

// The test's oracle of what the core charges one UVM mapping of [va, va + size) on one GPU for
// UVM's page tables (kmod/core/tables_580.c vcore_uvm_map_ptables, issue 17 F11.1): a 4 KiB page
// for each directory of Hopper's depths 1-4 (covering 2^56, 2^47, 2^38 and 2^29 B) and each
// 2 MiB PTE table the span touches, as if none existed yet. nvsim builds only those the mapping
// is the first under, at the mapping's page size (tests/vm/nvsim/nvsim_uvm_ext.c): never more.
inline uint64_t UvmMapPtables(uint64_t va, uint64_t size) {
  const uint64_t last = va + size - 1;
  uint64_t pages = 0;
  for (unsigned shift : {56u, 47u, 38u, 29u, 21u}) pages += (last >> shift) - (va >> shift) + 1;
  return pages * 4096;
}

// UVM_FREE of the external range [va, va + size): its rmStatus, or ~0u.
inline uint32_t FreeRange(int uvm, uint64_t va, uint64_t size) {
  uvm_free_params fp{};
  fp.base = va;
  fp.length = size;
  return ioctl(uvm, UVM_FREE, &fp) != 0 ? ~0u : fp.rmStatus;
}

// One UVM_MM_INITIALIZE of the va-space file `va` on a fresh MM file of `uvm_path`, as cuInit
// does: 1 if it succeeded, 0 if the call or its status failed, -1 if the node did not open.
inline int MmInitializeOnce(const std::string& uvm_path, int va) {
  int mm = open(uvm_path.c_str(), O_RDWR | O_CLOEXEC);
  if (mm < 0) return -1;
  uvm_mm_initialize_params p{va, ~0u};
  const bool ok = ioctl(mm, UVM_MM_INITIALIZE, &p) == 0 && p.rmStatus == NV_OK;
  close(mm);
  return ok ? 1 : 0;
}

inline bool IsChar(const std::string& path, unsigned* major_out) {
  struct stat st {};
  if (stat(path.c_str(), &st)) return false;
  *major_out = major(st.st_rdev);
  return S_ISCHR(st.st_mode);
}

}  // namespace vgpu_test
