#include "tests/unit/core/core_fixture.h"

#include <cstdio>

#include "tests/unit/core/delta_branch.h"

namespace vgpu::core_test {

namespace {

// The fake driver reads quietly: a test may hand it unmapped pointers on purpose.
uint32_t Rd32(const SimMemory& mem, uint64_t a) {
  uint32_t v = 0;
  mem.Read(a, &v, 4);
  return v;
}
uint64_t Rd64(const SimMemory& mem, uint64_t a) {
  uint64_t v = 0;
  mem.Read(a, &v, 8);
  return v;
}
void Wr32(SimMemory& mem, uint64_t a, uint32_t v) { mem.Write(a, &v, 4); }
void Wr64(SimMemory& mem, uint64_t a, uint64_t v) { mem.Write(a, &v, 8); }

}  // namespace

std::vector<uint8_t> FbV2(std::vector<uint32_t> indices) {
  NV2080_CTRL_FB_GET_INFO_V2_PARAMS p{};
  p.fbInfoListSize = static_cast<uint32_t>(indices.size());
  for (size_t i = 0; i < indices.size(); ++i) {
    p.fbInfoList[i].index = indices[i];
  }
  return Bytes(p);
}

void FakeRm::Serve(SimMemory& mem, uint32_t req, uint64_t arg) {
  ++calls;
  uint32_t nr = VCORE_IOC_NR(req), size = VCORE_IOC_SIZE(req);
  if (nr == NV_ESC_IOCTL_XFER_CMD) {
    nr = Rd32(mem, arg);
    size = Rd32(mem, arg + 4);
    arg = Rd64(mem, arg + 8);
  }
  switch (nr) {
    case NV_ESC_RM_ALLOC: {
      uint32_t status_off = size == 32 ? 28 : 40;
      uint32_t cls = Rd32(mem, arg + 12);
      if (alloc_status != NV_OK) {
        Wr32(mem, arg + status_off, alloc_status);
        return;
      }
      if (Rd32(mem, arg + 8) == 0) {
        Wr32(mem, arg + 8, next_handle++);
      }
      if (cls == NV01_MEMORY_LOCAL_USER || cls == NV50_MEMORY_VIRTUAL) {
        uint64_t p = Rd64(mem, arg + 16);
        uint64_t sz = Rd64(mem, p + 64);
        Wr64(mem, p + 64, (sz + round - 1) / round * round);
      }
      Wr32(mem, arg + status_off, NV_OK);
      return;
    }
    case NV_ESC_RM_FREE:
      Wr32(mem, arg + 12, NV_OK);
      return;
    case NV_ESC_RM_ALLOC_MEMORY:
      if (Rd32(mem, arg + 8) == 0) {
        Wr32(mem, arg + 8, next_handle++);
      }
      if (Rd32(mem, arg + 12) == NV01_MEMORY_LOCAL_USER) {
        Wr64(mem, arg + 32, uint64_t{kHeapKiB} * 1024 - 1);  // legacy heap query
      }
      Wr32(mem, arg + 40, NV_OK);
      return;
    case NV_ESC_RM_VID_HEAP_CONTROL: {
      uint32_t fn = Rd32(mem, arg + 8);
      if (fn == NVOS32_FUNCTION_INFO) {
        Wr64(mem, arg + 24, uint64_t{kHeapKiB} * 1024);
        Wr64(mem, arg + 32, uint64_t{kHeapKiB} * 1024 - 64 * kMiB);
      } else if (fn == NVOS32_FUNCTION_ALLOC_SIZE) {
        if (Rd32(mem, arg + 44) == 0) {
          Wr32(mem, arg + 44, next_handle++);
        }
        uint64_t sz = Rd64(mem, arg + 88);
        Wr64(mem, arg + 88, (sz + round - 1) / round * round);
      }
      Wr32(mem, arg + 20, alloc_status);
      return;
    }
    case NV_ESC_RM_DUP_OBJECT:
      if (Rd32(mem, arg + 8) == 0) {
        Wr32(mem, arg + 8, next_handle++);
      }
      Wr32(mem, arg + 24, NV_OK);
      return;
    case NV_ESC_RM_CONTROL: {
      uint32_t cmd = Rd32(mem, arg + 8);
      uint64_t p = Rd64(mem, arg + 16);
      // The test delta branch serves FB_GET_INFO_V2 under another number (delta_branch.h).
      if (cmd == NV2080_CTRL_CMD_FB_GET_INFO_V2 || cmd == NV2080_CTRL_CMD_FB_GET_INFO ||
          cmd == DELTA_TEST_CTRL_FB_GET_INFO_V2) {
        uint32_t n = Rd32(mem, p);
        uint64_t list = cmd == NV2080_CTRL_CMD_FB_GET_INFO ? Rd64(mem, p + 8) : p + 4;
        for (uint32_t i = 0; i < n && i < 128; ++i) {
          uint32_t idx = Rd32(mem, list + 8 * i), v = 7;
          switch (idx) {
            case NV2080_CTRL_FB_INFO_INDEX_TOTAL_RAM_SIZE:
              v = kTotalRamKiB;
              break;
            case NV2080_CTRL_FB_INFO_INDEX_HEAP_SIZE:
              v = kHeapKiB;
              break;
            case NV2080_CTRL_FB_INFO_INDEX_USABLE_RAM_SIZE:
              v = kUsableKiB;
              break;
            case NV2080_CTRL_FB_INFO_INDEX_HEAP_FREE:
              v = kHeapKiB - 1024;
              break;
            case NV2080_CTRL_FB_INFO_INDEX_FB_TAX_SIZE_KB:
              v = 0;
              break;
            case 0x0B:
              v = 5120;
              break;  // BUS_WIDTH
            default:
              break;
          }
          Wr32(mem, list + 8 * i + 4, v);
        }
      } else if (cmd == NV2080_CTRL_CMD_GPU_GET_PIDS) {
        Wr32(mem, p + 8, static_cast<uint32_t>(pids.size()));
        for (size_t i = 0; i < pids.size(); ++i) {
          Wr32(mem, p + 12 + 4 * i, pids[i]);
        }
      } else if (cmd == NV2080_CTRL_CMD_PERF_GET_GPUMON_PERFMON_UTIL_SAMPLES_V2) {
        // Sample i: gr and fb name pids[i % n] at 50 % busy; pOsPidInfo a kernel address.
        using Sample = NV2080_CTRL_PERF_GPUMON_PERFMON_UTIL_SAMPLE;
        using Params = NV2080_CTRL_PERF_GET_GPUMON_PERFMON_UTIL_SAMPLES_V2_PARAMS;
        for (uint32_t i = 0; i < NV2080_CTRL_PERF_GPUMON_SAMPLE_COUNT_PERFMON_UTIL; ++i) {
          const uint64_t e = p + offsetof(Params, samples) + sizeof(Sample) * i;
          Wr64(mem, e, 1000 + i);
          for (uint64_t eng : {offsetof(Sample, fb), offsetof(Sample, gr)}) {
            Wr32(mem, e + eng + offsetof(NV2080_CTRL_PERF_GPUMON_ENGINE_UTIL_SAMPLE, util), 5000);
            Wr32(mem, e + eng + offsetof(NV2080_CTRL_PERF_GPUMON_ENGINE_UTIL_SAMPLE, procId),
                 pids[i % pids.size()]);
            Wr64(mem, e + eng + offsetof(NV2080_CTRL_PERF_GPUMON_ENGINE_UTIL_SAMPLE, pOsPidInfo),
                 0xffff888012345678ull);
          }
        }
      } else if (cmd == NV2080_CTRL_CMD_GPU_GET_PID_INFO) {
        uint32_t n = Rd32(mem, p);
        for (uint32_t i = 0; i < n; ++i) {
          Wr32(mem, p + 8 + 72 * i + 8, NV_OK);
          Wr64(mem, p + 8 + 72 * i + 16, 512 * kMiB);
        }
      }
      Wr32(mem, arg + 28, NV_OK);
      return;
    }
    default:
      return;
  }
}

void CoreTest::TearDown() {
  vcore_slot_destroy(slot_);
  slot_ = nullptr;
  EXPECT_EQ(host_.live_allocs(), 0) << "the core leaked host allocations";
}

void CoreTest::MakeSlot(uint64_t quota, vcore_unknown_policy policy, const vcore_host_ops* ops,
                        const vcore_ledger* ledger) {
  vcore_slot_destroy(slot_);
  vcore_slot_config cfg{};
  cfg.id = 7;
  cfg.mem_quota_bytes = quota;
  cfg.sysmem_budget_bytes = sysmem_budget_;
  cfg.gpu_id = gpu_id_;
  cfg.unknown_policy = policy;
  snprintf(cfg.driver_version, sizeof cfg.driver_version, "%s", driver_version_.c_str());
  int err = 0;
  slot_ = vcore_slot_create(ops, &host_, &cfg, ledger, &err);
  ASSERT_NE(slot_, nullptr) << err;
  ctl_ = vcore_file_open(slot_, VCORE_FILE_CTL, nullptr);
  ASSERT_NE(ctl_, nullptr);
}

CoreTest::Outcome CoreTest::Call(uint32_t req, uint64_t arg, vcore_file* file, uint32_t pid) {
  vcore_call_ctx ctx{&mem_, pid, pid};
  vcore_call* call = nullptr;
  Outcome o{};
  o.verdict = vcore_pre(file ? file : ctl_, req, arg, &ctx, &call);
  int rc = 0;
  if (o.verdict == VCORE_FORWARD || o.verdict == VCORE_FORWARD_REWRITTEN) {
    o.forwarded = true;
    for (unsigned i = 0; i < vcore_call_fd_count(call); ++i) {
      o.fds.push_back(*vcore_call_fd(call, i));
      auto f = fd_files_.find(o.fds.back().value);
      if (f != fd_files_.end()) vcore_call_set_fd_file(call, i, f->second);
    }
    rm_.Serve(mem_, req, arg);
    rc = rm_.rc;
  }
  o.ret = vcore_post(call, rc);
  return o;
}

void CoreTest::Put(uint64_t addr, std::vector<uint8_t> bytes) {
  if (mem_.At(addr) != nullptr) {
    // Replace: rebuild the memory without that region.
    SimMemory fresh;
    for (uint64_t a : {kArg, kParams, kList}) {
      if (a != addr && mem_.At(a) != nullptr) {
        fresh.Map(a, *mem_.At(a));
      }
    }
    mem_ = fresh;
  }
  ASSERT_TRUE(mem_.Map(addr, std::move(bytes)));
}

uint32_t CoreTest::AllocClient(vcore_file* file) {
  NVOS64_PARAMETERS p{};
  p.hClass = NV01_ROOT_CLIENT;
  p.pAllocParms = kParams;
  Put(kArg, Bytes(p));
  Put(kParams, std::vector<uint8_t>(NV0000_ALLOC_PARAMETERS_SIZE));
  Outcome o = Call(Req(NV_ESC_RM_ALLOC, 48), kArg, file);
  EXPECT_EQ(o.verdict, VCORE_FORWARD);
  return Get<uint32_t>(mem_, kArg + 8);
}

CoreTest::Outcome CoreTest::Alloc(uint32_t h_client, uint32_t h_parent, uint32_t h_new,
                                  uint32_t cls, std::vector<uint8_t> params, vcore_file* file) {
  NVOS64_PARAMETERS p{};
  p.hRoot = h_client;
  p.hObjectParent = h_parent;
  p.hObjectNew = h_new;
  p.hClass = cls;
  p.pAllocParms = params.empty() ? 0 : kParams;
  Put(kArg, Bytes(p));
  if (!params.empty()) {
    Put(kParams, std::move(params));
  }
  return Call(Req(NV_ESC_RM_ALLOC, 48), kArg, file);
}

CoreTest::Outcome CoreTest::VidHeapAlloc(uint32_t h_client, uint32_t h_parent, uint32_t h_new,
                                         uint64_t size, uint32_t flags) {
  NVOS32_PARAMETERS v{};
  v.hRoot = h_client;
  v.hObjectParent = h_parent;
  v.function = NVOS32_FUNCTION_ALLOC_SIZE;
  flags |= NVOS32_ALLOC_FLAGS_MEMORY_HANDLE_PROVIDED;
  auto* raw = reinterpret_cast<uint8_t*>(&v);
  memcpy(raw + NVOS32_ALLOCSIZE_SIZE_OFF, &size, 8);
  memcpy(raw + NVOS32_ALLOCSIZE_HMEMORY_OFF, &h_new, 4);
  memcpy(raw + NVOS32_ALLOCSIZE_FLAGS_OFF, &flags, 4);
  Put(kArg, Bytes(v));
  return Call(Req(NV_ESC_RM_VID_HEAP_CONTROL, 184), kArg);
}

CoreTest::Outcome CoreTest::AllocVidmem(uint32_t h_client, uint32_t h_parent, uint32_t h_new,
                                        uint64_t size, uint32_t flags, uint32_t attr) {
  NV_MEMORY_ALLOCATION_PARAMS m{};
  m.owner = h_client;
  m.flags = flags;
  m.attr = attr;
  m.size = size;
  m.alignment = 2 * kMiB;
  return Alloc(h_client, h_parent, h_new, NV01_MEMORY_LOCAL_USER, Bytes(m));
}

CoreTest::Outcome CoreTest::Free(uint32_t h_client, uint32_t h_parent, uint32_t h_object) {
  NVOS00_PARAMETERS p{h_client, h_parent, h_object, 0};
  Put(kArg, Bytes(p));
  return Call(Req(NV_ESC_RM_FREE, 16), kArg);
}

CoreTest::Outcome CoreTest::Control(uint32_t h_client, uint32_t h_object, uint32_t cmd,
                                    std::vector<uint8_t> params, uint32_t params_size_override) {
  NVOS54_PARAMETERS p{};
  p.hClient = h_client;
  p.hObject = h_object;
  p.cmd = cmd;
  p.params = params.empty() ? 0 : kParams;
  p.paramsSize = params_size_override != UINT32_MAX ? params_size_override
                                                    : static_cast<uint32_t>(params.size());
  Put(kArg, Bytes(p));
  if (!params.empty()) {
    Put(kParams, std::move(params));
  }
  return Call(Req(NV_ESC_RM_CONTROL, 32), kArg);
}

void CoreTest::Session(uint32_t* client, uint32_t* device, uint32_t* subdevice) {
  *client = AllocClient();
  *device = 0x5c000001;
  *subdevice = 0x5c000002;
  ASSERT_EQ(Alloc(*client, *client, *device, NV01_DEVICE_0,
                  std::vector<uint8_t>(NV0080_ALLOC_PARAMETERS_SIZE))
                .verdict,
            VCORE_FORWARD);
  ASSERT_EQ(Alloc(*client, *device, *subdevice, NV20_SUBDEVICE_0, std::vector<uint8_t>(4)).verdict,
            VCORE_FORWARD);
}

vcore_stats CoreTest::Stats() {
  vcore_stats s{};
  vcore_slot_get_stats(slot_, &s);
  return s;
}

}  // namespace vgpu::core_test
