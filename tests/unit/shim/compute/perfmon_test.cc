// The perfmon sample ring as RM 580 returns it (shim/compute/perfmon.h): which samples are new,
// whom they name, and the H200's quirks (zero tracker, epoch timestamps, no process).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "shim/compute/compute_host.h"
#include "shim/compute/perfmon.h"

extern "C" {
#include "sched/vcore_sched_ctrl.h"
}

namespace vgpu::shim::compute {
namespace {

TEST(Perfmon, ConsumesOnlyNewSamplesAndAttributesByPid) {
  std::vector<uint8_t> buf(kPerfmonParamsSize);
  auto put = [&](uint32_t idx, uint64_t ts, uint32_t util, uint32_t pid) {
    uint8_t* e = buf.data() + 16 + static_cast<size_t>(idx) * kPerfmonSampleSize;
    memcpy(e, &ts, 8);
    memcpy(e + kSampleGrOffset, &util, 4);
    memcpy(e + kSampleGrOffset + 8, &pid, 4);
  };
  PerfmonPrepare(buf.data());
  const uint64_t p = 100'000'000;  // 100 ms in ns
  for (uint32_t i = 0; i < 5; i++) {
    put(i, (i + 1) * p, 5000, i % 2 ? 42 : 7);
  }
  uint32_t count = 5, tracker = 5;
  memcpy(buf.data() + 8, &count, 4);
  memcpy(buf.data() + 12, &tracker, 4);
  uint64_t last = 0;
  PerfmonDelta d;
  ASSERT_TRUE(PerfmonConsume(buf.data(), 42, &last, &d));
  EXPECT_EQ(d.samples, 0u) << "the first read only primes";
  EXPECT_EQ(last, 5 * p);
  put(5, 6 * p, 2500, 42);
  put(6, 7 * p, 10000, 7);
  count = tracker = 7;
  memcpy(buf.data() + 8, &count, 4);
  memcpy(buf.data() + 12, &tracker, 4);
  ASSERT_TRUE(PerfmonConsume(buf.data(), 42, &last, &d));
  EXPECT_EQ(d.samples, 2u);
  EXPECT_EQ(d.own_busy_ns, p / 4);
  EXPECT_EQ(d.other_busy_ns, p);
  EXPECT_EQ(d.span_ns, 2 * p);
  EXPECT_EQ(d.period_ns, p);
  // Microsecond timestamps are recognized.
  std::vector<uint8_t> us(kPerfmonParamsSize);
  buf.swap(us);
  PerfmonPrepare(buf.data());
  put(0, 1000, 10000, 42);
  put(1, 101000, 10000, 42);
  put(2, 201000, 10000, 42);
  count = tracker = 3;
  memcpy(buf.data() + 8, &count, 4);
  memcpy(buf.data() + 12, &tracker, 4);
  last = 1000;
  ASSERT_TRUE(PerfmonConsume(buf.data(), 42, &last, &d));
  EXPECT_EQ(d.own_busy_ns, 2 * p);
  // Malformed replies are refused.
  const uint32_t bad = 1;
  memcpy(buf.data() + 4, &bad, 4);
  EXPECT_FALSE(PerfmonConsume(buf.data(), 42, &last, &d));
}

// The slot's view: a classifier says whom a pid belongs to; samples naming no process are kept
// one by one (their timestamps deduplicate them across the slot's members, ledger.h).
TEST(Perfmon, ClassifiesSlotMembersAndListsUnattributedSamples) {
  std::vector<uint8_t> buf(kPerfmonParamsSize);
  PerfmonPrepare(buf.data());
  const uint64_t p = 200'000'000;
  const uint32_t pids[] = {42, 43, 7, kGpumonPidInvalid, 42, 0};
  for (uint32_t i = 0; i < 6; i++) {
    uint8_t* e = buf.data() + 16 + static_cast<size_t>(i) * kPerfmonSampleSize;
    const uint64_t ts = (i + 1) * p;
    const uint32_t util = 5000;
    memcpy(e, &ts, 8);
    memcpy(e + kSampleGrOffset, &util, 4);
    memcpy(e + kSampleGrOffset + 8, &pids[i], 4);
  }
  int asked = 0;
  auto classify = [](void* ctx, uint32_t pid) {
    ++*static_cast<int*>(ctx);
    return pid == 42   ? PerfmonOwner::kSelf
           : pid == 43 ? PerfmonOwner::kMember
                       : PerfmonOwner::kOther;
  };
  uint64_t last = p;  // sample 1 seen
  PerfmonDelta d;
  ASSERT_TRUE(PerfmonConsume(buf.data(), classify, &asked, &last, &d));
  EXPECT_EQ(d.samples, 5u);
  EXPECT_EQ(d.own_busy_ns, p / 2);
  EXPECT_EQ(d.member_busy_ns, p / 2);
  EXPECT_EQ(d.other_busy_ns, p / 2);
  EXPECT_EQ(d.unattributed_busy_ns, p);
  ASSERT_EQ(d.n_unattributed, 2u);
  EXPECT_EQ(d.unattributed[0].ts, 4 * p);
  EXPECT_EQ(d.unattributed[1].ts, 6 * p);
  EXPECT_EQ(d.unattributed[1].busy_ns, p / 2);
  EXPECT_EQ(asked, 3) << "asked only about new samples that name a process";
}

// As measured on the H200: count and tracker read 0 although the ring is full and wrapped,
// timestamps are epoch ns 200 ms apart, and a gated-off tenant's samples name no process.
TEST(Perfmon, WrappedRingWithZeroTrackerAndUnattributedSamples) {
  std::vector<uint8_t> buf(kPerfmonParamsSize);
  PerfmonPrepare(buf.data());
  const uint64_t base = 1795940299261101216ULL, p = 200'000'000;
  // Ring slot i holds sample number (i + 30) % 72: the newest is in slot 41.
  for (uint32_t i = 0; i < kPerfmonSampleCount; i++) {
    const uint32_t seq = (i + 30) % kPerfmonSampleCount;
    uint8_t* e = buf.data() + 16 + static_cast<size_t>(i) * kPerfmonSampleSize;
    const uint64_t ts = base + seq * p;
    const uint32_t util = 1000, proc = seq % 2 ? kGpumonPidInvalid : 42;
    memcpy(e, &ts, 8);
    memcpy(e + kSampleGrOffset, &util, 4);
    memcpy(e + kSampleGrOffset + 8, &proc, 4);
  }
  uint64_t last = base + 61 * p;  // seen up to sample 61
  PerfmonDelta d;
  ASSERT_TRUE(PerfmonConsume(buf.data(), 42, &last, &d));
  EXPECT_EQ(d.samples, 10u);  // 62..71
  EXPECT_EQ(last, base + 71 * p);
  EXPECT_EQ(d.end_ts, base + 71 * p);
  EXPECT_EQ(d.span_ns, 10 * p);
  EXPECT_EQ(d.own_busy_ns, 5 * p / 10);
  EXPECT_EQ(d.unattributed_busy_ns, 5 * p / 10);
  EXPECT_EQ(d.other_busy_ns, 0u);
  EXPECT_EQ(d.period_ns, p);
}

}  // namespace
}  // namespace vgpu::shim::compute
