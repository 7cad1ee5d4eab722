// Device IDs, the shim slot config file, the shim backend and the checkpoint.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "shim/preload/ledger.h"
#include "vgpu/alloc/device_ids.h"
#include "vgpu/checkpoint/checkpoint.h"
#include "vgpu/slots/shim_backend.h"
#include "vgpu/slots/slot_config_file.h"

namespace vgpu {
namespace {

using alloc::ResourceKind;
namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/vgpu-daemon-test-XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

TEST(DeviceIdTest, RoundTrip) {
  for (auto kind : {ResourceKind::kCore, ResourceKind::kMemory}) {
    alloc::DeviceId id{kind, 3, 117};
    std::string text = alloc::FormatDeviceId(id);
    auto parsed = alloc::ParseDeviceId(text, kind);
    ASSERT_TRUE(parsed.ok()) << text;
    EXPECT_EQ(*parsed, id);
    EXPECT_LE(text.size(), 63u);  // the kubelet's limit on Device.ID
  }
  EXPECT_EQ(alloc::FormatDeviceId({ResourceKind::kMemory, 0, 17}), "vcuda-memory-gpu0-17");
  EXPECT_EQ(alloc::FormatDeviceId({ResourceKind::kWholeGpu, 5, 0}), "vcuda-gpu5");
  EXPECT_TRUE(alloc::ParseDeviceId("vcuda-gpu5", ResourceKind::kWholeGpu).ok());
}

TEST(DeviceIdTest, RejectsForeignAndMalformed) {
  for (const char* bad :
       {"vcuda-core-gpu0-1", "vcuda-memory-gpu0", "vcuda-memory-gpuX-1", "vcuda-memory-gpu0-01",
        "vcuda-memory-gpu0-1x", "tencent.com/vcuda-memory-3", ""}) {
    auto r = alloc::ParseDeviceId(bad, ResourceKind::kMemory);
    EXPECT_FALSE(r.ok()) << bad;
  }
}

TEST(DeviceIdTest, IdSetRefusesMixedGpusAndDuplicates) {
  auto mixed =
      alloc::ParseIdSet({"vcuda-memory-gpu0-3", "vcuda-memory-gpu1-0"}, ResourceKind::kMemory);
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.status().message().find("span GPUs"), std::string::npos);
  EXPECT_NE(mixed.status().message().find("vcuda-memory-gpu1-0"), std::string::npos);
  auto dup =
      alloc::ParseIdSet({"vcuda-memory-gpu0-3", "vcuda-memory-gpu0-3"}, ResourceKind::kMemory);
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("twice"), std::string::npos);
  auto ok =
      alloc::ParseIdSet({"vcuda-memory-gpu2-9", "vcuda-memory-gpu2-4"}, ResourceKind::kMemory);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->gpu, 2u);
  EXPECT_EQ(ok->units, (std::vector<uint32_t>{4, 9}));
  EXPECT_EQ(alloc::SlotKey(ok->gpu, ok->units), "g2-m4-n2");
}

slots::SlotConfig SampleConfig() {
  slots::SlotConfig c;
  c.id = 7;
  c.name = "g1-m4-n8";
  c.gpu = 1;
  c.gpu_uuid = "GPU-1234";
  c.mem_quota = 8ull << 28;
  c.compute_share = 30;
  c.managed_policy = slots::ManagedPolicy::kAllowUncounted;
  c.unknown_policy = slots::UnknownPolicy::kAllowLog;
  return c;
}

TEST(SlotConfigFileTest, RoundTripAndKeys) {
  slots::SlotConfig c = SampleConfig();
  std::string text = slots::FormatSlotConfigFile(c);
  EXPECT_NE(text.find("mem_quota=2147483648\n"), std::string::npos);
  EXPECT_NE(text.find("managed_policy=allow-uncounted\n"), std::string::npos);
  auto parsed = slots::ParseSlotConfigFile(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(*parsed, c);
}

TEST(SlotConfigFileTest, ErrorsNameTheKey) {
  std::string text = slots::FormatSlotConfigFile(SampleConfig());
  auto replace = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    t.replace(t.find(from), from.size(), to);
    return slots::ParseSlotConfigFile(t);
  };
  auto bad_num = replace("mem_quota=2147483648", "memory_quota_bytes=lots");
  ASSERT_FALSE(bad_num.ok());
  EXPECT_NE(bad_num.status().message().find("mem_quota"), std::string::npos);
  auto bad_share = replace("compute_share=30", "compute_share=0");
  ASSERT_FALSE(bad_share.ok());
  EXPECT_NE(bad_share.status().message().find("compute_share"), std::string::npos);
  auto missing = replace("unknown_policy=allow-log\n", "");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("unknown_policy"), std::string::npos);
  EXPECT_TRUE(replace("version=2\n", "version=2\nfuture_key=whatever\n").ok());
}

TEST(ShimBackendTest, CreateListUpdateDestroy) {
  TempDir dir;
  slots::ShimSlotBackend backend(
      {.root = dir.path() / "slots", .shim_library_host = "/opt/vgpu/libvgpu-shim.so"});
  auto a = backend.Create(SampleConfig());
  auto b = backend.Create(SampleConfig());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, 0u);
  EXPECT_EQ(*b, 1u);
  ASSERT_TRUE(backend.Destroy(0).ok());
  auto c = backend.Create(SampleConfig());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, 0u);  // lowest free id is reused
  slots::SlotConfig cfg = SampleConfig();
  cfg.id = 1;
  cfg.compute_share = 55;
  ASSERT_TRUE(backend.Update(cfg).ok());
  auto list = backend.List();
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[1], cfg);
  EXPECT_FALSE(backend.Destroy(9).ok());
  cfg.id = 9;
  EXPECT_EQ(backend.Update(cfg).code(), StatusCode::kNotFound);

  auto edits = backend.Edits(cfg);
  EXPECT_EQ(edits.envs.at("VGPU_CONFIG"), "/etc/vgpu/config");
  EXPECT_EQ(edits.envs.at("LD_PRELOAD"), "/usr/local/vgpu/libvgpu-shim.so");
  ASSERT_FALSE(edits.mounts.empty());
  EXPECT_EQ(edits.mounts[0].host_path, (dir.path() / "slots" / "9").string());
  EXPECT_TRUE(edits.mounts[0].read_only);  // the shim's ledger has its own directory
}

TEST(ShimBackendTest, ListReportsACorruptConfigAsDamaged) {
  TempDir dir;
  slots::ShimSlotBackend backend({.root = dir.path()});
  ASSERT_TRUE(backend.Create(SampleConfig()).ok());
  std::ofstream(dir.path() / "0" / "config") << "version=1\nslot_id=zero\n";
  auto list = backend.List();
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_TRUE(list->empty());
  EXPECT_EQ(backend.DamagedSlots(), std::vector<uint32_t>{0});
}

// The manager reads the ledger the shim writes (shim/preload/ledger.h), with the shim's own
// SharedLedger as the writer, so a layout change on either side breaks this test.
TEST(ShimBackendTest, UsageReadsTheShimsLedger) {
  TempDir dir;
  slots::ShimSlotBackend backend({.root = dir.path()});
  slots::SlotConfig c;
  c.name = "g0-m1-n4";
  c.mem_quota = 1ull << 30;
  auto id = backend.Create(c);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  auto none = backend.Usage(*id);  // no process has run yet: no ledger, zero usage
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_EQ(*none, slots::SlotUsage{});

  std::string err;
  auto ledger = shim::SharedLedger::Open(backend.LedgerPath(*id).string(), &err);
  ASSERT_NE(ledger, nullptr) << err;
  ASSERT_TRUE(ledger->Attach());
  ASSERT_EQ(ledger->TryCharge(3ull << 20, c.mem_quota), 0);
  ASSERT_EQ(ledger->TryCharge(5ull << 20, c.mem_quota), 0);
  ledger->Uncharge(5ull << 20);
  auto u = backend.Usage(*id);
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->memory_charged_bytes, 3ull << 20);
  EXPECT_EQ(u->memory_peak_bytes, 8ull << 20);
  EXPECT_EQ(u->memory_denials, 0u);  // the ledger does not count refusals

  ledger->Detach();  // clean exit: the charge leaves the slot, the peak stays
  u = backend.Usage(*id);
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->memory_charged_bytes, 0u);
  EXPECT_EQ(u->memory_peak_bytes, 8ull << 20);
}

// Shim mode's compute counters (docs/results/compute-h200.md): each process's controller publishes
// into its ledger entry; Usage() carries the slot's busy and throttled time and its achieved share,
// and a member's exit does not take its counters out of the totals (they are Prometheus counters).
TEST(ShimBackendTest, UsageCarriesTheShimsComputeCounters) {
  TempDir dir;
  slots::ShimSlotBackend backend({.root = dir.path()});
  auto id = backend.Create(slots::SlotConfig{});
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  std::string err;
  auto ledger = shim::SharedLedger::Open(backend.LedgerPath(*id).string(), &err);
  ASSERT_NE(ledger, nullptr) << err;
  ASSERT_TRUE(ledger->Attach());
  const shim::LedgerBusySample unattributed[] = {{1000, 40'000'000}};
  ledger->PublishCompute(300'000'000, 700'000'000, 297, 301, unattributed, 1);
  auto u = backend.Usage(*id);
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->gpu_busy_ns, 340'000'000u);
  EXPECT_EQ(u->throttled_ns, 700'000'000u);
  EXPECT_EQ(u->achieved_share_1s_pm, 297u);
  EXPECT_EQ(u->achieved_share_10s_pm, 301u);

  ledger->Detach();  // the process exits
  u = backend.Usage(*id);
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->gpu_busy_ns, 340'000'000u) << "counters never go down";
  EXPECT_EQ(u->throttled_ns, 700'000'000u);
  EXPECT_EQ(u->achieved_share_1s_pm, 0u) << "no process measures the slot any more";
  EXPECT_EQ(u->achieved_share_10s_pm, 0u);
}

// A ledger another shim release wrote (here version 2, smaller) is named as such, not as a
// short or corrupt file.
TEST(ShimBackendTest, UsageNamesALedgerOfAnotherVersion) {
  TempDir dir;
  slots::ShimSlotBackend backend({.root = dir.path()});
  auto id = backend.Create(slots::SlotConfig{});
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  std::string v2(4096, '\0');
  const uint64_t magic = shim::LedgerFile::kMagic;
  const uint32_t version = 2;
  memcpy(v2.data(), &magic, sizeof magic);
  memcpy(v2.data() + 8, &version, sizeof version);
  std::ofstream(backend.LedgerPath(*id), std::ios::binary) << v2;
  auto u = backend.Usage(*id);
  ASSERT_FALSE(u.ok());
  const std::string expected =
      "has version 2, this reader reads version " + std::to_string(shim::LedgerFile::kVersion);
  EXPECT_NE(u.status().ToString().find(expected), std::string::npos) << u.status().ToString();
}

TEST(ShimBackendTest, UsageNamesACorruptLedger) {
  TempDir dir;
  slots::ShimSlotBackend backend({.root = dir.path()});
  auto id = backend.Create(slots::SlotConfig{});
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  const std::string path = backend.LedgerPath(*id).string();
  for (size_t size : {size_t{64}, sizeof(shim::LedgerFile)}) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << std::string(size, 'x');
    auto u = backend.Usage(*id);
    ASSERT_FALSE(u.ok()) << size;
    EXPECT_NE(u.status().ToString().find(path), std::string::npos) << u.status().ToString();
  }
}

TEST(CheckpointTest, SaveLoadRoundTrip) {
  TempDir dir;
  checkpoint::CheckpointStore store(dir.path() / "cp");
  auto empty = store.Load();
  ASSERT_TRUE(empty.ok());
  EXPECT_FALSE(empty->found);
  slots::SlotRecord r;
  r.config = SampleConfig();
  r.memory_ids = {"vcuda-memory-gpu1-4", "vcuda-memory-gpu1-5"};
  r.core_ids = {"vcuda-core-gpu1-0"};
  r.pod_namespace = "ns";
  r.pod_name = "p";
  r.container = "c";
  r.linked = true;
  ASSERT_TRUE(store.Save({r, r}).ok());
  auto loaded = store.Load();
  ASSERT_TRUE(loaded.ok());
  EXPECT_TRUE(loaded->found);
  EXPECT_TRUE(loaded->corrupt_reason.empty());
  ASSERT_EQ(loaded->records.size(), 2u);
  EXPECT_EQ(loaded->records[0], r);
  EXPECT_FALSE(fs::exists(dir.path() / "cp.tmp"));
}

TEST(CheckpointTest, CorruptionIsDetectedAndKeptAside) {
  TempDir dir;
  checkpoint::CheckpointStore store(dir.path() / "cp");
  slots::SlotRecord r;
  r.config = SampleConfig();
  ASSERT_TRUE(store.Save({r}).ok());
  std::string text;
  {
    std::ifstream in(dir.path() / "cp");
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  // An edit that keeps the JSON valid but changes a value: only the CRC can notice.
  size_t at = text.find("2147483648");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 10, "9147483648");
  std::ofstream(dir.path() / "cp") << text;
  auto loaded = store.Load();
  ASSERT_TRUE(loaded.ok());
  EXPECT_TRUE(loaded->found);
  EXPECT_NE(loaded->corrupt_reason.find("crc32"), std::string::npos);
  EXPECT_TRUE(loaded->records.empty());
  EXPECT_FALSE(fs::exists(dir.path() / "cp"));
  EXPECT_TRUE(fs::exists(loaded->kept_aside));
  EXPECT_NE(loaded->kept_aside.string().find("cp.corrupt-"), std::string::npos);

  std::ofstream(dir.path() / "cp") << "{\"format\": \"vgpu-manager-chec";  // torn write
  auto torn = store.Load();
  ASSERT_TRUE(torn.ok());
  EXPECT_FALSE(torn->corrupt_reason.empty());
}

}  // namespace
}  // namespace vgpu
