// vgpu-manager as a DRA kubelet plugin, end to end over real sockets: registration, the
// ResourceSlices it writes (checked field by field against resource.k8s.io/v1), prepare and
// unprepare of shared and whole-GPU claims, per-claim errors, crash consistency, slice
// republication after a wipe, and the device-health stream.
#include <signal.h>
#include <sys/wait.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "dra_fixture.h"

namespace vgpu::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

const std::string kSlicePrefix = std::string(kNode) + "-" + kDriver + "-";
constexpr uint64_t kGpuMemory = 17179869184;  // two-gpu-16g.json
constexpr uint64_t kUnit = 256ull << 20;      // --memory-unit default

json ReadJson(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str(), nullptr, false);
}

std::string CdiSpecPath(const std::string& dir, const std::string& uid) {
  return dir + "/gpu.vgpu.io-claim_" + uid + ".json";
}

class DraTest : public DraFixture {};

TEST_F(DraTest, RegistersAsDraPluginWithBothServiceVersionsAndHealth) {
  StartManager();
  const auto& info = kubelet_->info();
  EXPECT_EQ(info.type(), "DRAPlugin");
  EXPECT_EQ(info.name(), kDriver);
  EXPECT_EQ(info.endpoint(), KubeletDir() + "/plugins/gpu.vgpu.io/dra.sock");
  std::vector<std::string> versions(info.supported_versions().begin(),
                                    info.supported_versions().end());
  EXPECT_EQ(versions, (std::vector<std::string>{"v1.DRAPlugin", "v1beta1.DRAPlugin",
                                                "v1.DRAResourceHealth"}));
  // NotifyRegistrationStatus reached the plugin.
  bool logged = false;
  for (int i = 0; i < 100 && !logged; ++i) {
    std::ifstream log(manager_->LogFile());
    std::stringstream ss;
    ss << log.rdbuf();
    logged = ss.str().find("event=dra_registered driver=gpu.vgpu.io") != std::string::npos;
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(logged);
}

TEST_F(DraTest, PublishesCountersAndDevicesSlicesFieldByField) {
  StartManager();
  ASSERT_TRUE(WaitForSlices(2, 10s));
  auto slices = api_->Slices();
  ASSERT_EQ(slices.count(kSlicePrefix + "counters-0"), 1u);
  ASSERT_EQ(slices.count(kSlicePrefix + "devices-0"), 1u);
  for (const auto& [name, s] : slices) {
    SCOPED_TRACE(name);
    EXPECT_EQ(s["apiVersion"], "resource.k8s.io/v1");
    EXPECT_EQ(s["kind"], "ResourceSlice");
    EXPECT_EQ(s["metadata"]["labels"]["gpu.vgpu.io/node"], kNode);
    EXPECT_EQ(s["metadata"]["ownerReferences"][0]["kind"], "Node");
    EXPECT_EQ(s["metadata"]["ownerReferences"][0]["uid"], "node-uid-1");
    EXPECT_EQ(s["spec"]["driver"], kDriver);
    EXPECT_EQ(s["spec"]["nodeName"], kNode);
    EXPECT_EQ(s["spec"]["pool"]["name"], kNode);
    EXPECT_EQ(s["spec"]["pool"]["generation"], 1);
    EXPECT_EQ(s["spec"]["pool"]["resourceSliceCount"], 2);
    // A slice holds devices or shared counters, never both.
    EXPECT_NE(s["spec"].contains("devices"), s["spec"].contains("sharedCounters"));
  }
  const json& counters = slices[kSlicePrefix + "counters-0"]["spec"]["sharedCounters"];
  ASSERT_EQ(counters.size(), 2u);
  for (int g = 0; g < 2; ++g) {
    EXPECT_EQ(counters[g]["name"], "gpu-" + std::to_string(g));
    EXPECT_EQ(counters[g]["counters"]["memory"]["value"], std::to_string(kGpuMemory));
  }
  const json& devices = slices[kSlicePrefix + "devices-0"]["spec"]["devices"];
  ASSERT_EQ(devices.size(), 4u);
  for (int g = 0; g < 2; ++g) {
    const json& share = devices[2 * g];
    const json& whole = devices[2 * g + 1];
    std::string base = "gpu-" + std::to_string(g);
    EXPECT_EQ(share["name"], base + "-share");
    EXPECT_EQ(whole["name"], base);
    EXPECT_EQ(share["allowMultipleAllocations"], true);
    EXPECT_FALSE(whole.contains("allowMultipleAllocations"));
    const json& mem = share["capacity"]["memory"];
    EXPECT_EQ(mem["value"], std::to_string(kGpuMemory));
    EXPECT_EQ(mem["requestPolicy"]["default"], std::to_string(kGpuMemory));
    EXPECT_EQ(mem["requestPolicy"]["validRange"]["min"], std::to_string(kUnit));
    EXPECT_EQ(mem["requestPolicy"]["validRange"]["max"], std::to_string(kGpuMemory));
    EXPECT_EQ(mem["requestPolicy"]["validRange"]["step"], std::to_string(kUnit));
    const json& cores = share["capacity"]["cores"];
    EXPECT_EQ(cores["value"], "100");
    EXPECT_EQ(cores["requestPolicy"]["default"], "100");
    EXPECT_EQ(cores["requestPolicy"]["validRange"],
              (json{{"min", "1"}, {"max", "100"}, {"step", "1"}}));
    EXPECT_EQ(whole["capacity"], (json{{"memory", {{"value", std::to_string(kGpuMemory)}}}}));
    for (const json* d : {&share, &whole}) {
      // Both consume the GPU's whole counter: whole and shares exclude each other.
      EXPECT_EQ(
          (*d)["consumesCounters"],
          (json::array({{{"counterSet", base},
                         {"counters", {{"memory", {{"value", std::to_string(kGpuMemory)}}}}}}})));
      const json& a = (*d)["attributes"];
      EXPECT_EQ(a["uuid"]["string"], "GPU-00000000-1111-2222-3333-00000000000" + std::to_string(g));
      EXPECT_EQ(a["productName"]["string"], "Test GPU");
      EXPECT_EQ(a["index"]["int"], g);
      EXPECT_EQ(a["pciBusID"]["string"], g == 0 ? "0000:17:00.0" : "0000:18:00.0");
      EXPECT_EQ(a["resource.kubernetes.io/numaNode"]["int"], 0);
      EXPECT_EQ(a["nvlinkPeers"]["string"], "");
      EXPECT_EQ(a["type"]["string"], d == &share ? "share" : "whole");
      // DeviceAttribute versions are semantic versions: "9.0" and "535.104.05" as written.
      EXPECT_EQ(a["cudaComputeCapability"], (json{{"version", "9.0.0"}}));
      EXPECT_EQ(a["driverVersion"], (json{{"version", "535.104.5"}}));
      // Nothing else, and each value is exactly one of DeviceAttribute's four members.
      std::set<std::string> keys;
      for (const auto& [key, value] : a.items()) {
        keys.insert(key);
        ASSERT_EQ(value.size(), 1u) << key;
        EXPECT_TRUE(value.contains("int") || value.contains("bool") || value.contains("string") ||
                    value.contains("version"))
            << key;
      }
      EXPECT_EQ(keys, (std::set<std::string>{"uuid", "productName", "index", "pciBusID",
                                             "resource.kubernetes.io/numaNode", "nvlinkPeers",
                                             "type", "cudaComputeCapability", "driverVersion"}));
    }
  }
}

TEST_F(DraTest, TwoClaimsShareOneGpuWithDistinctCdiIdsAndTheirQuotas) {
  StartManager();
  api_->PutClaim(ShareClaim("a", "uid-a", 0, "8Gi", "30"));
  api_->PutClaim(ShareClaim("b", "uid-b", 0, "4Gi", "50"));
  drav1::NodePrepareResourcesResponse resp;
  ASSERT_TRUE(
      kubelet_->Prepare({{"default", "a", "uid-a"}, {"default", "b", "uid-b"}}, &resp).ok());
  ASSERT_EQ(resp.claims().size(), 2u);
  std::set<std::string> ids;
  for (const char* uid : {"uid-a", "uid-b"}) {
    SCOPED_TRACE(uid);
    const auto& c = resp.claims().at(uid);
    EXPECT_EQ(c.error(), "");
    ASSERT_EQ(c.devices_size(), 1);
    EXPECT_EQ(c.devices(0).pool_name(), kNode);
    EXPECT_EQ(c.devices(0).device_name(), "gpu-0-share");
    EXPECT_EQ(c.devices(0).request_names(0), "gpu");
    EXPECT_EQ(c.devices(0).share_id(), std::string("share-") + uid);
    ASSERT_EQ(c.devices(0).cdi_device_ids_size(), 1);
    ids.insert(c.devices(0).cdi_device_ids(0));
    EXPECT_EQ(c.devices(0).cdi_device_ids(0), std::string("gpu.vgpu.io/claim=") + uid + "-0");
  }
  EXPECT_EQ(ids.size(), 2u);
  auto a = ClaimSlots("uid-a");
  auto b = ClaimSlots("uid-b");
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(a[0]["gpu"], 0);
  EXPECT_EQ(a[0]["mem_quota"], 8 * kGiB);
  EXPECT_EQ(a[0]["compute_share"], 30);
  EXPECT_EQ(a[0]["pod_name"], "a");
  EXPECT_EQ(b[0]["mem_quota"], 4 * kGiB);
  EXPECT_EQ(b[0]["compute_share"], 50);
  // The CDI spec carries the device plugin's grant for that slot.
  json spec = ReadJson(CdiSpecPath(CdiDir(), "uid-a"));
  ASSERT_FALSE(spec.is_discarded());
  EXPECT_EQ(spec["kind"], "gpu.vgpu.io/claim");
  EXPECT_EQ(spec["devices"][0]["name"], "uid-a-0");
  std::set<std::string> env(spec["devices"][0]["containerEdits"]["env"].begin(),
                            spec["devices"][0]["containerEdits"]["env"].end());
  EXPECT_EQ(env.count("VGPU_MEMORY_QUOTA_BYTES=" + std::to_string(8 * kGiB)), 1u);
  EXPECT_EQ(env.count("VGPU_SLOT_NAME=dra-uid-a-0"), 1u);
  EXPECT_EQ(env.count("VGPU_GPU_UUID=GPU-00000000-1111-2222-3333-000000000000"), 1u);
}

TEST_F(DraTest, PrepareAndUnprepareAreIdempotentOnBothApiVersions) {
  StartManager();
  api_->PutClaim(ShareClaim("a", "uid-a", 1, "2Gi", "25"));
  drav1::NodePrepareResourcesResponse first, again;
  ASSERT_TRUE(kubelet_->Prepare({{"default", "a", "uid-a"}}, &first).ok());
  ASSERT_TRUE(kubelet_->Prepare({{"default", "a", "uid-a"}}, &again).ok());
  drav1beta1::NodePrepareResourcesResponse beta;
  ASSERT_TRUE(kubelet_->PrepareV1beta1({{"default", "a", "uid-a"}}, &beta).ok());
  ASSERT_EQ(first.claims().at("uid-a").error(), "");
  EXPECT_EQ(first.claims().at("uid-a").devices(0).cdi_device_ids(0),
            again.claims().at("uid-a").devices(0).cdi_device_ids(0));
  EXPECT_EQ(first.claims().at("uid-a").devices(0).cdi_device_ids(0),
            beta.claims().at("uid-a").devices(0).cdi_device_ids(0));
  auto slots = ClaimSlots("uid-a");
  ASSERT_EQ(slots.size(), 1u);
  EXPECT_EQ(manager_->Slots().size(), 1u);
  for (int i = 0; i < 2; ++i) {
    drav1::NodeUnprepareResourcesResponse un;
    ASSERT_TRUE(kubelet_->Unprepare({{"default", "a", "uid-a"}}, &un).ok());
    ASSERT_EQ(un.claims().size(), 1u);
    EXPECT_EQ(un.claims().at("uid-a").error(), "") << "round " << i;
  }
  EXPECT_TRUE(ClaimSlots("uid-a").empty());
  EXPECT_FALSE(std::filesystem::exists(CdiSpecPath(CdiDir(), "uid-a")));
  // A claim this node never prepared unprepares fine (the kubelet may retry after a restart).
  drav1::NodeUnprepareResourcesResponse never;
  ASSERT_TRUE(kubelet_->Unprepare({{"default", "zzz", "uid-never"}}, &never).ok());
  EXPECT_EQ(never.claims().at("uid-never").error(), "");
}

TEST_F(DraTest, PerClaimErrorsForOverCapacityUidMismatchAndUnknownDevice) {
  StartManager();
  api_->PutClaim(ShareClaim("big", "uid-big", 0, "8Gi", "80"));
  api_->PutClaim(ShareClaim("over", "uid-over", 0, "4Gi", "30"));     // 80 + 30 > 100 %
  api_->PutClaim(ShareClaim("toomuch", "uid-mem", 0, "12Gi", "10"));  // 8 + 12 > 16 GiB
  api_->PutClaim(WholeClaim("whole", "uid-whole", 0));                // gpu0 has a share
  api_->PutClaim(ShareClaim("stale", "uid-new", 1, "1Gi", "10"));     // kubelet asks uid-old
  api_->PutClaim(WholeClaim("ghost", "uid-ghost", 7));                // no gpu7
  api_->PutClaim(
      ShareClaim("weight", "uid-weight", 1, "1Gi", "10", GpuConfig({{"compute_mode", "turbo"}})));
  drav1::NodePrepareResourcesResponse resp;
  ASSERT_TRUE(kubelet_
                  ->Prepare({{"default", "big", "uid-big"},
                             {"default", "over", "uid-over"},
                             {"default", "toomuch", "uid-mem"},
                             {"default", "whole", "uid-whole"},
                             {"default", "stale", "uid-old"},
                             {"default", "ghost", "uid-ghost"},
                             {"default", "weight", "uid-weight"},
                             {"default", "missing", "uid-missing"}},
                            &resp)
                  .ok());
  ASSERT_EQ(resp.claims().size(), 8u);  // one answer per claim
  EXPECT_EQ(resp.claims().at("uid-big").error(), "");
  auto err = [&](const char* uid) { return resp.claims().at(uid).error(); };
  EXPECT_NE(err("uid-over").find("RESOURCE_EXHAUSTED"), std::string::npos) << err("uid-over");
  EXPECT_NE(err("uid-over").find("20 % of its cores unbooked"), std::string::npos);
  EXPECT_NE(err("uid-mem").find("8192 MiB unbooked"), std::string::npos) << err("uid-mem");
  EXPECT_NE(err("uid-whole").find("is shared by slot"), std::string::npos) << err("uid-whole");
  EXPECT_NE(err("uid-old").find("FAILED_PRECONDITION"), std::string::npos) << err("uid-old");
  EXPECT_NE(err("uid-old").find("uid-new"), std::string::npos);
  EXPECT_NE(err("uid-ghost").find("no such device"), std::string::npos) << err("uid-ghost");
  EXPECT_NE(err("uid-weight").find("compute_mode: 'turbo'"), std::string::npos)
      << err("uid-weight");
  EXPECT_NE(err("uid-missing").find("not in the API server"), std::string::npos);
  for (const char* uid :
       {"uid-over", "uid-mem", "uid-whole", "uid-old", "uid-ghost", "uid-weight", "uid-missing"}) {
    EXPECT_EQ(resp.claims().at(uid).devices_size(), 0) << uid;
    EXPECT_TRUE(ClaimSlots(uid).empty()) << uid;
  }
  EXPECT_EQ(manager_->Slots().size(), 1u);
}

TEST_F(DraTest, OpaqueConfigChoosesWeightModeAndManagedPolicyOfTheSlot) {
  StartManager();
  api_->PutClaim(
      ShareClaim("tuned", "uid-tuned", 0, "2Gi", "30",
                 GpuConfig({{"compute_mode", "weight"}, {"managed_policy", "allow-uncounted"}})));
  api_->PutClaim(ShareClaim("plain", "uid-plain", 1, "2Gi", "30"));
  api_->PutClaim(ShareClaim("typo", "uid-typo", 1, "1Gi", "10", GpuConfig({{"computemode", "x"}})));
  drav1::NodePrepareResourcesResponse resp;
  ASSERT_TRUE(kubelet_
                  ->Prepare({{"default", "tuned", "uid-tuned"},
                             {"default", "plain", "uid-plain"},
                             {"default", "typo", "uid-typo"}},
                            &resp)
                  .ok());
  ASSERT_EQ(resp.claims().at("uid-tuned").error(), "");
  ASSERT_EQ(resp.claims().at("uid-plain").error(), "");
  EXPECT_NE(resp.claims().at("uid-typo").error().find("opaque parameter 'computemode' is unknown"),
            std::string::npos)
      << resp.claims().at("uid-typo").error();
  EXPECT_TRUE(ClaimSlots("uid-typo").empty());
  auto tuned = ClaimSlots("uid-tuned"), plain = ClaimSlots("uid-plain");
  ASSERT_EQ(tuned.size(), 1u);
  ASSERT_EQ(plain.size(), 1u);
  EXPECT_EQ(tuned[0]["compute_mode"], "weight");
  EXPECT_EQ(tuned[0]["managed_policy"], "allow-uncounted");
  EXPECT_EQ(tuned[0]["compute_share"], 30);
  EXPECT_EQ(plain[0]["compute_mode"], "cap");
  EXPECT_EQ(plain[0]["managed_policy"], "refuse");
  // What the shim enforces: the slot's config file carries the schema's keys.
  std::ifstream config(manager_->SlotRoot() + "/" + tuned[0]["id"].dump() + "/config");
  std::string text((std::istreambuf_iterator<char>(config)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("compute_mode=weight\n"), std::string::npos) << text;
  EXPECT_NE(text.find("managed_policy=allow-uncounted\n"), std::string::npos) << text;
  // Idempotent with the same config; the setting survives a restart (it is in the checkpoint).
  manager_->Kill(SIGKILL);
  StartManager();
  auto again = ClaimSlots("uid-tuned");
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0]["compute_mode"], "weight");
  drav1::NodePrepareResourcesResponse retry;
  ASSERT_TRUE(kubelet_->Prepare({{"default", "tuned", "uid-tuned"}}, &retry).ok());
  EXPECT_EQ(retry.claims().at("uid-tuned").error(), "");
  EXPECT_EQ(ClaimSlots("uid-tuned").size(), 1u);
}

TEST_F(DraTest, WholeGpuClaimGetsAnExclusiveSlot) {
  StartManager();
  api_->PutClaim(WholeClaim("w", "uid-w", 1));
  drav1::NodePrepareResourcesResponse resp;
  ASSERT_TRUE(kubelet_->Prepare({{"default", "w", "uid-w"}}, &resp).ok());
  ASSERT_EQ(resp.claims().at("uid-w").error(), "");
  EXPECT_FALSE(resp.claims().at("uid-w").devices(0).has_share_id());
  auto slots = ClaimSlots("uid-w");
  ASSERT_EQ(slots.size(), 1u);
  EXPECT_EQ(slots[0]["exclusive"], true);
  EXPECT_EQ(slots[0]["gpu"], 1);
  EXPECT_EQ(slots[0]["mem_quota"], 0);
}

TEST_F(DraTest, PreparedClaimSurvivesRestartAndSigkill) {
  StartManager();
  api_->PutClaim(ShareClaim("a", "uid-a", 0, "3Gi", "20"));
  drav1::NodePrepareResourcesResponse before;
  ASSERT_TRUE(kubelet_->Prepare({{"default", "a", "uid-a"}}, &before).ok());
  ASSERT_EQ(before.claims().at("uid-a").error(), "");
  auto slot = ClaimSlots("uid-a");
  ASSERT_EQ(slot.size(), 1u);
  manager_->Kill(SIGKILL);
  StartManager();
  auto after_slot = ClaimSlots("uid-a");
  ASSERT_EQ(after_slot.size(), 1u);
  EXPECT_EQ(after_slot[0]["id"], slot[0]["id"]);
  EXPECT_EQ(after_slot[0]["mem_quota"], 3 * kGiB);
  drav1::NodePrepareResourcesResponse after;
  ASSERT_TRUE(kubelet_->Prepare({{"default", "a", "uid-a"}}, &after).ok());
  EXPECT_EQ(after.claims().at("uid-a").devices(0).cdi_device_ids(0),
            before.claims().at("uid-a").devices(0).cdi_device_ids(0));
  EXPECT_EQ(manager_->Slots().size(), 1u);
  manager_->Kill(SIGTERM);
  StartManager();
  drav1::NodeUnprepareResourcesResponse un;
  ASSERT_TRUE(kubelet_->Unprepare({{"default", "a", "uid-a"}}, &un).ok());
  EXPECT_EQ(un.claims().at("uid-a").error(), "");
  EXPECT_TRUE(manager_->Slots().empty());
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A reboot empties the tmpfs of the slot dirs (--slot-path) and of the CDI specs: the manager
// rebuilds both from the checkpoint at start, each slot at its recorded id (a hole in the ids
// stays a hole), with the same config file, a ledger dir, and each claim's spec as it was.
TEST_F(DraTest, AWipedSlotPathAndCdiDirAreRebuiltFromTheCheckpoint) {
  StartManager();
  for (const char* c : {"a", "b", "c"}) {
    api_->PutClaim(ShareClaim(c, std::string("uid-") + c, 0, "1Gi", "10"));
    drav1::NodePrepareResourcesResponse r;
    ASSERT_TRUE(kubelet_->Prepare({{"default", c, std::string("uid-") + c}}, &r).ok());
    ASSERT_EQ(r.claims().at(std::string("uid-") + c).error(), "");
  }
  drav1::NodeUnprepareResourcesResponse un;
  ASSERT_TRUE(kubelet_->Unprepare({{"default", "b", "uid-b"}}, &un).ok());
  std::map<std::string, std::string> config, spec;
  std::map<std::string, int> id;
  for (const char* uid : {"uid-a", "uid-c"}) {
    auto slots = ClaimSlots(uid);
    ASSERT_EQ(slots.size(), 1u);
    id[uid] = slots[0]["id"].get<int>();
    config[uid] = Slurp(manager_->SlotRoot() + "/" + std::to_string(id[uid]) + "/config");
    spec[uid] = Slurp(CdiSpecPath(CdiDir(), uid));
    ASSERT_NE(config[uid].find("slot_name=dra-" + std::string(uid) + "-0"), std::string::npos);
    ASSERT_FALSE(spec[uid].empty());
  }
  ASSERT_EQ(id["uid-a"], 0);
  ASSERT_EQ(id["uid-c"], 2);  // id 1 was uid-b's
  manager_->Kill(SIGTERM);
  const std::string slot_path = std::filesystem::path(manager_->SlotRoot()).parent_path();
  std::filesystem::remove_all(slot_path);
  std::filesystem::remove_all(CdiDir());
  StartManager();
  for (const char* uid : {"uid-a", "uid-c"}) {
    auto slots = ClaimSlots(uid);
    ASSERT_EQ(slots.size(), 1u) << uid;
    EXPECT_EQ(slots[0]["id"], id[uid]) << uid;
    const std::string n = std::to_string(id[uid]);
    EXPECT_EQ(Slurp(manager_->SlotRoot() + "/" + n + "/config"), config[uid]) << uid;
    EXPECT_TRUE(std::filesystem::is_directory(slot_path + "/ledgers/" + n)) << uid;
    EXPECT_EQ(Slurp(CdiSpecPath(CdiDir(), uid)), spec[uid]) << uid;
  }
  EXPECT_FALSE(std::filesystem::exists(manager_->SlotRoot() + "/1"));
  EXPECT_FALSE(std::filesystem::exists(CdiSpecPath(CdiDir(), "uid-b")));
  // The kubelet's retry finds the claim prepared; a new claim takes the free id 1.
  drav1::NodePrepareResourcesResponse again;
  ASSERT_TRUE(kubelet_->Prepare({{"default", "c", "uid-c"}}, &again).ok());
  EXPECT_EQ(again.claims().at("uid-c").devices(0).cdi_device_ids(0), "gpu.vgpu.io/claim=uid-c-0");
  api_->PutClaim(ShareClaim("d", "uid-d", 0, "1Gi", "10"));
  drav1::NodePrepareResourcesResponse d;
  ASSERT_TRUE(kubelet_->Prepare({{"default", "d", "uid-d"}}, &d).ok());
  ASSERT_EQ(d.claims().at("uid-d").error(), "");
  EXPECT_EQ(ClaimSlots("uid-d").at(0)["id"], 1);
  EXPECT_EQ(manager_->Slots().size(), 3u);
}

class DraCrashTest : public DraFixture, public ::testing::WithParamInterface<const char*> {};

// SIGKILL in the middle of NodePrepareResources: the kubelet sees the call fail and retries;
// the retry after the restart must give exactly one slot with the claim's settings.
TEST_P(DraCrashTest, SigkillMidPrepareThenRetryGivesOneSlot) {
  StartManager({std::string("VGPU_MANAGER_CRASH_AT=") + GetParam()});
  api_->PutClaim(ShareClaim("a", "uid-a", 0, "5Gi", "40"));
  drav1::NodePrepareResourcesResponse lost;
  EXPECT_FALSE(kubelet_->Prepare({{"default", "a", "uid-a"}}, &lost).ok());
  int status = 0;
  ASSERT_TRUE(manager_->WaitExit(5000, &status));
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  StartManager();
  drav1::NodePrepareResourcesResponse retry;
  ASSERT_TRUE(kubelet_->Prepare({{"default", "a", "uid-a"}}, &retry).ok());
  ASSERT_EQ(retry.claims().at("uid-a").error(), "");
  auto slots = ClaimSlots("uid-a");
  ASSERT_EQ(slots.size(), 1u);
  EXPECT_EQ(slots[0]["mem_quota"], 5 * kGiB);
  EXPECT_EQ(slots[0]["compute_share"], 40);
  EXPECT_EQ(manager_->Slots().size(), 1u);
  EXPECT_TRUE(std::filesystem::exists(CdiSpecPath(CdiDir(), "uid-a")));
}

INSTANTIATE_TEST_SUITE_P(CrashPoints, DraCrashTest,
                         ::testing::Values("after-slot-create", "after-checkpoint"));

TEST_F(DraTest, SlicesComeBackAfterTheKubeletWipesThem) {
  StartManager();
  ASSERT_TRUE(WaitForSlices(2, 10s));
  auto before = api_->Slices();
  api_->Wipe();
  ASSERT_TRUE(WaitForSlices(2, 10s)) << "not republished";
  auto after = api_->Slices();
  for (auto& [name, s] : after) {
    EXPECT_EQ(s["spec"], before[name]["spec"]) << name;
  }
  EXPECT_GE(api_->Requests("POST resourceslices"), 4);
}

TEST_F(DraTest, HealthStreamListsEveryDeviceAndRepeats) {
  StartManager();
  kubelet_->WatchHealth();
  v1::NodeWatchResourcesResponse msg;
  ASSERT_TRUE(kubelet_->WaitForHealth(1, 10s, &msg));
  ASSERT_EQ(msg.devices_size(), 4);
  std::set<std::string> names;
  for (const auto& d : msg.devices()) {
    EXPECT_EQ(d.device().pool_name(), kNode);
    EXPECT_EQ(d.health(), v1::HEALTHY);
    EXPECT_EQ(d.health_check_timeout_seconds(), 30);
    EXPECT_GT(d.last_updated_time(), 1700000000);
    names.insert(d.device().device_name());
  }
  EXPECT_EQ(names, (std::set<std::string>{"gpu-0", "gpu-0-share", "gpu-1", "gpu-1-share"}));
  // A change on the node (a GPU gets its first slot) sends the list again at once.
  api_->PutClaim(ShareClaim("a", "uid-a", 0, "1Gi", "10"));
  drav1::NodePrepareResourcesResponse resp;
  ASSERT_TRUE(kubelet_->Prepare({{"default", "a", "uid-a"}}, &resp).ok());
  EXPECT_TRUE(kubelet_->WaitForHealth(2, 5s, &msg));
}

}  // namespace
}  // namespace vgpu::testing
