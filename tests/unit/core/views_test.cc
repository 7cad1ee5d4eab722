// Views: memory totals as the slot's quota, free = quota - charged, and only the slot's
// processes (nvidia-rm-abi.md §5; memory-quota-h200.md).
#include <memory>

#include "tests/unit/core/core_fixture.h"

namespace vgpu::core_test {
namespace {

uint32_t EntryData(const SimMemory& mem, uint64_t list, uint32_t i) {
  return Get<uint32_t>(mem, list + 8 * i + 4);
}

TEST_F(CoreTest, FbGetInfoV2ShowsTheQuota) {
  MakeSlot(4 * kGiB);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  AllocVidmem(c, d, 0x5c000010, 518 * kMiB);  // a CUDA context's worth
  // cuMemGetInfo's query: HEAP_FREE, HEAP_SIZE, FB_TAX.
  Outcome o = Control(c, s, NV2080_CTRL_CMD_FB_GET_INFO_V2, FbV2({0x16, 0x09, 0x10}));
  EXPECT_EQ(o.verdict, VCORE_FORWARD);
  uint64_t free_b = uint64_t{EntryData(mem_, kParams + 4, 0)} * 1024;
  uint64_t total_b =
      (uint64_t{EntryData(mem_, kParams + 4, 1)} + EntryData(mem_, kParams + 4, 2)) * 1024;
  EXPECT_EQ(total_b, 4 * kGiB) << "cuMemGetInfo total = (HEAP_SIZE + FB_TAX) KiB";
  EXPECT_EQ(free_b, 4 * kGiB - 518 * kMiB);
  // nvidia-smi / NVML: TOTAL_RAM_SIZE, HEAP_SIZE, HEAP_FREE, USABLE_RAM_SIZE; untouched others.
  Control(c, s, NV2080_CTRL_CMD_FB_GET_INFO_V2, FbV2({0x08, 0x09, 0x16, 0x20, 0x0B}));
  uint32_t total = EntryData(mem_, kParams + 4, 0), heap = EntryData(mem_, kParams + 4, 1),
           hfree = EntryData(mem_, kParams + 4, 2);
  EXPECT_EQ(uint64_t{total} * 1024, 4 * kGiB) << "nvidia-smi total";
  EXPECT_EQ(uint64_t{heap - hfree} * 1024, 518 * kMiB) << "used = HEAP_SIZE - HEAP_FREE";
  EXPECT_EQ(total - heap, 0u) << "reserved = TOTAL - HEAP_SIZE";
  EXPECT_EQ(uint64_t{EntryData(mem_, kParams + 4, 3)} * 1024, 4 * kGiB);
  EXPECT_EQ(EntryData(mem_, kParams + 4, 4), 5120u) << "BUS_WIDTH is not a memory figure";
  EXPECT_EQ(Stats().views_rewritten, 2u);
}

TEST_F(CoreTest, FbGetInfoV2IsUntouchedWithoutAQuota) {
  MakeSlot(0);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  Control(c, s, NV2080_CTRL_CMD_FB_GET_INFO_V2, FbV2({0x08}));
  EXPECT_EQ(EntryData(mem_, kParams + 4, 0), kTotalRamKiB);
  EXPECT_EQ(Stats().views_rewritten, 0u);
}

TEST_F(CoreTest, FbGetInfoV1RewritesTheNestedList) {
  MakeSlot(2 * kGiB);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  std::vector<uint8_t> list(8 * 3);
  uint32_t idx[3] = {0x09, 0x16, 0x08};
  for (int i = 0; i < 3; ++i) memcpy(list.data() + 8 * i, &idx[i], 4);
  Put(kList, list);
  NV2080_CTRL_FB_GET_INFO_PARAMS p{3, 0, kList};
  Control(c, s, NV2080_CTRL_CMD_FB_GET_INFO, Bytes(p));
  EXPECT_EQ(uint64_t{EntryData(mem_, kList, 0)} * 1024, 2 * kGiB);
  EXPECT_EQ(uint64_t{EntryData(mem_, kList, 1)} * 1024, 2 * kGiB);
  EXPECT_EQ(uint64_t{EntryData(mem_, kList, 2)} * 1024, 2 * kGiB);
  // A list over 128 entries, or a list that is not mapped.
  p.fbInfoListSize = 129;
  EXPECT_EQ(Control(c, s, NV2080_CTRL_CMD_FB_GET_INFO, Bytes(p)).verdict, VCORE_REFUSE_STATUS);
  p = {3, 0, 0xbad00000};
  Outcome o = Control(c, s, NV2080_CTRL_CMD_FB_GET_INFO, Bytes(p));
  EXPECT_EQ(o.ret, -VCORE_EFAULT) << "the reply could not be rewritten";
}

TEST_F(CoreTest, VidHeapInfoAndLegacyHeapQueryShowTheQuota) {
  MakeSlot(1 * kGiB);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  AllocVidmem(c, d, 0x5c000010, 256 * kMiB);
  NVOS32_PARAMETERS v{};
  v.hRoot = c;
  v.hObjectParent = d;
  v.function = NVOS32_FUNCTION_INFO;
  Put(kArg, Bytes(v));
  Call(Req(NV_ESC_RM_VID_HEAP_CONTROL, 184), kArg);
  EXPECT_EQ(Get<uint64_t>(mem_, kArg + 24), 1 * kGiB);
  EXPECT_EQ(Get<uint64_t>(mem_, kArg + 32), 768 * kMiB);

  nv_ioctl_nvos02_parameters_with_fd q{};
  q.params.hRoot = c;
  q.params.hObjectParent = d;
  q.params.hObjectNew = 0x5c000090;
  q.params.hClass = NV01_MEMORY_LOCAL_USER;
  q.fd = -1;
  Put(kArg, Bytes(q));
  vcore_file* dev = vcore_file_open(slot_, VCORE_FILE_DEV, nullptr);
  EXPECT_EQ(Call(Req(NV_ESC_RM_ALLOC_MEMORY, 56), kArg, dev).verdict, VCORE_FORWARD);
  EXPECT_EQ(Get<uint64_t>(mem_, kArg + 32), 1 * kGiB - 1) << "limit = heap - 1";
  EXPECT_EQ(Charged(), 256 * kMiB) << "the heap query allocates nothing";
}

TEST_F(CoreTest, GetPidsShowsOnlyTheSlotsProcesses) {
  host_.SetSlotPids({100, 300});
  MakeSlot(0, VCORE_UNKNOWN_STRICT, &trace::kSimOpsWithPids);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  NV2080_CTRL_GPU_GET_PIDS_PARAMS p{};
  p.id = HOPPER_COMPUTE_A;
  Control(c, s, NV2080_CTRL_CMD_GPU_GET_PIDS, Bytes(p));
  auto r = Get<NV2080_CTRL_GPU_GET_PIDS_PARAMS>(mem_, kParams);
  ASSERT_EQ(r.pidTblCount, 2u);
  EXPECT_EQ(r.pidTbl[0], 100u);
  EXPECT_EQ(r.pidTbl[1], 300u);
  EXPECT_EQ(r.pidTbl[2], 0u);

  NV2080_CTRL_GPU_GET_PID_INFO_PARAMS* pi = new NV2080_CTRL_GPU_GET_PID_INFO_PARAMS{};
  pi->pidInfoListCount = 2;
  pi->pidInfoList[0].pid = 100;
  pi->pidInfoList[1].pid = 200;  // another tenant
  Control(c, s, NV2080_CTRL_CMD_GPU_GET_PID_INFO, Bytes(*pi));
  delete pi;
  auto* ri = new NV2080_CTRL_GPU_GET_PID_INFO_PARAMS(
      Get<NV2080_CTRL_GPU_GET_PID_INFO_PARAMS>(mem_, kParams));
  EXPECT_EQ(ri->pidInfoList[0].result, NV_OK);
  EXPECT_EQ(ri->pidInfoList[0].data[0], 512 * kMiB);
  EXPECT_EQ(ri->pidInfoList[1].result, NV_ERR_OBJECT_NOT_FOUND);
  EXPECT_EQ(ri->pidInfoList[1].data[0], 0u);
  delete ri;
}

// F11.4: the perfmon samples name the process on each engine; another slot's reads as the
// driver's "no process", with the engine's busy fraction kept; the driver's struct pid pointer
// never reaches the tenant.
TEST_F(CoreTest, PerfmonSamplesNameOnlyTheSlotsProcesses) {
  host_.SetSlotPids({100, 300});
  MakeSlot(0, VCORE_UNKNOWN_STRICT, &trace::kSimOpsWithPids);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  using Params = NV2080_CTRL_PERF_GET_GPUMON_PERFMON_UTIL_SAMPLES_V2_PARAMS;
  auto p = std::make_unique<Params>();
  p->type = NV2080_CTRL_GPUMON_SAMPLE_TYPE_PERFMON_UTIL;
  p->bufSize = sizeof(p->samples);
  EXPECT_EQ(
      Control(c, s, NV2080_CTRL_CMD_PERF_GET_GPUMON_PERFMON_UTIL_SAMPLES_V2, Bytes(*p)).verdict,
      VCORE_FORWARD);
  *p = Get<Params>(mem_, kParams);
  unsigned own = 0, hidden = 0;
  for (uint32_t i = 0; i < NV2080_CTRL_PERF_GPUMON_SAMPLE_COUNT_PERFMON_UTIL; ++i) {
    for (const auto* e : {&p->samples[i].gr, &p->samples[i].fb}) {
      const uint32_t named = i % 3 == 0 ? 100 : i % 3 == 1 ? 200 : 300;  // the fake driver's
      EXPECT_EQ(e->util, 5000u);
      EXPECT_EQ(e->pOsPidInfo, 0u);
      if (named == 200) {
        EXPECT_EQ(e->procId, NV2080_GPUMON_PID_INVALID) << "sample " << i;
        EXPECT_EQ(e->subProcessID, NV2080_GPUMON_PID_INVALID);
        ++hidden;
      } else {
        EXPECT_EQ(e->procId, named) << "sample " << i;
        ++own;
      }
    }
  }
  EXPECT_EQ(hidden, 48u);
  EXPECT_EQ(own, 96u);
}

TEST_F(CoreTest, GetPidsDefaultsToThePidsThatUsedTheSlot) {
  MakeSlot(0);
  uint32_t c, d, s;
  Session(&c, &d, &s);  // pid 100 only
  NV2080_CTRL_GPU_GET_PIDS_PARAMS p{};
  Control(c, s, NV2080_CTRL_CMD_GPU_GET_PIDS, Bytes(p));
  auto r = Get<NV2080_CTRL_GPU_GET_PIDS_PARAMS>(mem_, kParams);
  ASSERT_EQ(r.pidTblCount, 1u);
  EXPECT_EQ(r.pidTbl[0], 100u);
}

struct TsgSeen {
  int tsgs = 0;
  uint32_t engine = 0, channels = 0;
};

TEST_F(CoreTest, TsgRegistryTracksTsgsAndTheirChannels) {
  MakeSlot(0);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  uint64_t gen0 = vcore_slot_tsg_generation(slot_);
  NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS t{};
  t.engineType = NV2080_ENGINE_TYPE_GRAPHICS;
  ASSERT_EQ(Alloc(c, d, 0x5c000100, KEPLER_CHANNEL_GROUP_A, Bytes(t)).verdict, VCORE_FORWARD);
  for (uint32_t i = 0; i < 3; ++i) {
    Alloc(c, 0x5c000100, 0x5c000110 + i, HOPPER_CHANNEL_GPFIFO_A,
          std::vector<uint8_t>(NV_CHANNEL_ALLOC_PARAMS_SIZE));
    Alloc(c, 0x5c000110 + i, 0x5c000120 + i, HOPPER_COMPUTE_A, std::vector<uint8_t>(16));
  }
  EXPECT_GT(vcore_slot_tsg_generation(slot_), gen0);
  TsgSeen seen;
  vcore_slot_for_each_tsg(
      slot_,
      [](void* arg, const vcore_tsg_info* t) {
        auto* s = static_cast<TsgSeen*>(arg);
        ++s->tsgs;
        s->engine = t->engine_type;
        s->channels = t->n_channels;
        return 0;
      },
      &seen);
  EXPECT_EQ(seen.tsgs, 1);
  EXPECT_EQ(seen.engine, 1u);
  EXPECT_EQ(seen.channels, 3u);
  int chans = 0;
  vcore_slot_for_each_channel(
      slot_,
      [](void* arg, const vcore_channel_info* ch) {
        EXPECT_EQ(ch->h_tsg, 0x5c000100u);
        ++*static_cast<int*>(arg);
        return 0;
      },
      &chans);
  EXPECT_EQ(chans, 3);
  // libcuda's own SET_TIMESLICE passes and is remembered.
  uint64_t us = 2048;
  EXPECT_EQ(Control(c, 0x5c000100, NVA06C_CTRL_CMD_SET_TIMESLICE, Bytes(us)).verdict,
            VCORE_FORWARD);
  Free(c, 0x5c000100, 0x5c000110);
  seen = {};
  vcore_slot_for_each_tsg(
      slot_,
      [](void* arg, const vcore_tsg_info* t) {
        static_cast<TsgSeen*>(arg)->channels = t->n_channels;
        return 0;
      },
      &seen);
  EXPECT_EQ(seen.channels, 2u);
  Free(c, d, 0x5c000100);
  EXPECT_EQ(Stats().tsgs, 0u);
}

TEST_F(CoreTest, EventAllocDoesNotLeakTheKernelPointerRmWritesBack) {
  MakeSlot(0);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  NV0005_ALLOC_PARAMETERS e{c, s, NV01_EVENT_OS_EVENT, 0, 17};
  NVOS64_PARAMETERS p{};
  p.hRoot = c;
  p.hObjectParent = s;
  p.hObjectNew = 0x5c000200;
  p.hClass = NV01_EVENT_OS_EVENT;
  p.pAllocParms = kParams;
  Put(kArg, Bytes(p));
  Put(kParams, Bytes(e));
  vcore_call_ctx ctx{&mem_, kPid, kPid};
  vcore_call* call = nullptr;
  ASSERT_EQ(vcore_pre(ctl_, Req(NV_ESC_RM_ALLOC, 48), kArg, &ctx, &call), VCORE_FORWARD);
  rm_.Serve(mem_, Req(NV_ESC_RM_ALLOC, 48), kArg);
  uint64_t kptr = 0xffff888812345678ull;  // what RM writes there (event.c:174-183)
  mem_.Write(kParams + 16, &kptr, 8);
  EXPECT_EQ(vcore_post(call, 0), 0);
  EXPECT_EQ(Get<uint64_t>(mem_, kParams + 16), 17u) << "the caller's OS-event key is back";
}

}  // namespace
}  // namespace vgpu::core_test
