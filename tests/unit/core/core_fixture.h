// Test fixture for the filter core: a slot over SimHost/SimMemory, struct builders, and FakeRm,
// a tiny model of nvidia.ko's replies (handles, status, the size RM rounds to, memory info, pids)
// that stands in for the real driver after a forwarded call.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "shim/trace/replay_host.h"

extern "C" {
#include "kmod/core/abi/classes.h"
#include "kmod/core/abi/ctrl.h"
#include "kmod/core/abi/nv_escape.h"
#include "kmod/core/abi/nvstatus.h"
#include "kmod/core/abi/uvm.h"
}

namespace vgpu::core_test {

using trace::SimHost;
using trace::SimMemory;

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGiB = 1ull << 30;
// The H200's memory figures (KiB), nvidia-rm-abi.md §5.1.
constexpr uint32_t kTotalRamKiB = 147221504;
constexpr uint32_t kHeapKiB = 146591680;
constexpr uint32_t kUsableKiB = 146941632;

inline uint32_t Req(uint32_t nr, uint32_t size) { return VCORE_IOWR('F', nr, size); }

template <typename T>
std::vector<uint8_t> Bytes(const T& v) {
  std::vector<uint8_t> b(sizeof(T));
  memcpy(b.data(), &v, sizeof(T));
  return b;
}

template <typename T>
T Get(const SimMemory& mem, uint64_t addr) {
  T v{};
  EXPECT_TRUE(mem.Read(addr, &v, sizeof v)) << "read at 0x" << std::hex << addr;
  return v;
}

// FB_GET_INFO_V2 params asking for these indices.
std::vector<uint8_t> FbV2(std::vector<uint32_t> indices);

// A model of RM's answers. Every forwarded call of a test goes through Serve().
class FakeRm {
 public:
  uint32_t next_handle = 0xc1d00001;
  uint32_t alloc_status = NV_OK;  // status RM returns for allocations
  uint64_t round = 2 * kMiB;      // RM's rounding of vidmem sizes
  int rc = 0;                     // ioctl return
  std::vector<uint32_t> pids = {100, 200, 300};
  int calls = 0;

  // Plays the driver for (req, arg) in mem: writes the reply as nvidia.ko would.
  void Serve(SimMemory& mem, uint32_t req, uint64_t arg);
};

class CoreTest : public ::testing::Test {
 protected:
  static constexpr uint64_t kArg = 0x10000;     // top-level arguments
  static constexpr uint64_t kParams = 0x20000;  // nested params
  static constexpr uint64_t kList = 0x30000;    // second-level buffers
  static constexpr uint32_t kPid = 100;

  void TearDown() override;
  // (Re)creates the slot and one ctl file.
  void MakeSlot(uint64_t quota, vcore_unknown_policy policy = VCORE_UNKNOWN_STRICT,
                const vcore_host_ops* ops = &SimHost::kOps, const vcore_ledger* ledger = nullptr);

  struct Outcome {
    vcore_verdict verdict;
    int ret;  // what the host returns to the app
    bool forwarded;
    std::vector<vcore_fd_field> fds;
  };
  // Runs one ioctl through pre, FakeRm (when forwarded) and post.
  Outcome Call(uint32_t req, uint64_t arg, vcore_file* file = nullptr, uint32_t pid = kPid);

  // Builders; they map the structs at kArg/kParams (replacing what was there).
  void Put(uint64_t addr, std::vector<uint8_t> bytes);
  // RM_ALLOC (NVOS64) of a client; returns its handle.
  uint32_t AllocClient(vcore_file* file = nullptr);
  // RM_ALLOC (NVOS64) of hClass under hParent with hNew; params mapped at kParams.
  Outcome Alloc(uint32_t h_client, uint32_t h_parent, uint32_t h_new, uint32_t cls,
                std::vector<uint8_t> params, vcore_file* file = nullptr);
  Outcome AllocVidmem(uint32_t h_client, uint32_t h_parent, uint32_t h_new, uint64_t size,
                      uint32_t flags = 0x1c101, uint32_t attr = 0);
  // NV_ESC_RM_VID_HEAP_CONTROL ALLOC_SIZE of @size as @h_new, @flags with MEMORY_HANDLE_PROVIDED.
  Outcome VidHeapAlloc(uint32_t h_client, uint32_t h_parent, uint32_t h_new, uint64_t size,
                       uint32_t flags = 0);
  Outcome Free(uint32_t h_client, uint32_t h_parent, uint32_t h_object);
  Outcome Control(uint32_t h_client, uint32_t h_object, uint32_t cmd, std::vector<uint8_t> params,
                  uint32_t params_size_override = UINT32_MAX);
  // A client, device and subdevice: the usual start of every CUDA/NVML session.
  void Session(uint32_t* client, uint32_t* device, uint32_t* subdevice);

  vcore_stats Stats();
  // The ledger's charge, as vcore_slot_charged() reads it for the kernel host's counters, and
  // the same as the stats say.
  uint64_t Charged() {
    uint64_t charged = vcore_slot_charged(slot_);
    EXPECT_EQ(charged, Stats().charged_bytes);
    return charged;
  }

  uint64_t sysmem_budget_ = 0;  // vcore_slot_config.sysmem_budget_bytes of the next MakeSlot
  uint32_t gpu_id_ = 0;         // vcore_slot_config.gpu_id of the next MakeSlot
  std::string driver_version_ = "580.159.04";  // ... and its driver_version
  SimHost host_;
  SimMemory mem_;
  FakeRm rm_;
  vcore_slot* slot_ = nullptr;
  vcore_file* ctl_ = nullptr;
  // fd numbers the "host" resolves to files of the slot (vcore_call_set_fd_file), as
  // kmod/ioctl.c does for the fds it translates.
  std::map<int32_t, vcore_file*> fd_files_;
};

}  // namespace vgpu::core_test
