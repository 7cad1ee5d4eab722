// vgpuctl diagnose's reports (daemon/diagnose) on fixture trees: a node's module, driver
// binding, slots and refusals; a container's enforcement in force, its settings read through
// the shim's own config parser from a config the manager's writer wrote.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "shim/preload/ledger.h"
#include "vgpu/diagnose/container_report.h"
#include "vgpu/diagnose/node_report.h"
#include "vgpu/slots/slot_config_file.h"

namespace vgpu::diagnose {
namespace {

namespace fs = std::filesystem;

class DiagnoseTest : public ::testing::Test {
 protected:
  DiagnoseTest() {
    char tmpl[] = "/tmp/vgpu-diagnose-XXXXXX";
    root_ = ::mkdtemp(tmpl);
    env_.clear();
    devices_.clear();
  }
  ~DiagnoseTest() override { fs::remove_all(root_); }
  void Put(const std::string& rel, const std::string& text) {
    fs::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel) << text << "\n";
  }
  static std::string Row(const Report& r, const std::string& section, const std::string& key) {
    return r.ToJson()[section].value(key, std::string("(absent)"));
  }

  fs::path root_;
  static inline std::map<std::string, std::string> env_;
  static inline std::map<std::string, DeviceNode> devices_;
  static const char* Env(const char* k) {
    auto it = env_.find(k);
    return it == env_.end() ? nullptr : it->second.c_str();
  }
  static std::optional<DeviceNode> Stat(const fs::path& p) {
    auto it = devices_.find(p.filename().string());
    if (it == devices_.end()) return std::nullopt;
    return it->second;
  }
  Report Container() { return ContainerReport({root_, Env, Stat}); }
};

TEST_F(DiagnoseTest, NodeWithTheModuleLoaded) {
  Put("sys/module/vgpu/version", "0.1");
  Put("sys/module/vgpu/srcversion", "ABC123");
  Put("sys/module/vgpu/refcnt", "2");
  Put("sys/module/vgpu/parameters/real_ctl", "/dev/nvidiactl");
  Put("sys/module/nvidia/version", "580.159.04");
  Put("sys/module/nvidia_uvm/parameters/uvm_disable_hmm", "Y");
  for (const char* d : {"dev/nvidiactl", "dev/nvidia0", "dev/vgpu0", "dev/vgpuctl0"}) Put(d, "");
  Put("sys/class/vgpu/vgpu0/slot_id", "0");
  Put("sys/class/vgpu/vgpu0/name", "team-a");
  Put("sys/class/vgpu/vgpu0/mem_quota", "4294967296");
  Put("sys/class/vgpu/vgpu0/stats/denied_quota", "3");
  Put("sys/class/vgpu/vgpu0/stats/malformed", "0");
  Put("sys/class/vgpu/vgpu1/slot_id", "1");
  NodeInputs in;
  in.root = root_;
  in.kernel_log = {"usb 1-1: new device", "vgpu: slot 0: memory quota refused 2097152 bytes"};
  in.manager_list = nlohmann::json::parse(
      R"({"ok":true,"slots":[{"id":0,"gpu":0,"memory_bytes":4294967296,"core_percent":30,
          "pod_namespace":"ml","pod_name":"trainer"}]})");
  Report r = NodeReport(in);
  EXPECT_EQ(Row(r, "versions", "nvidia.ko"), "580.159.04");
  EXPECT_EQ(Row(r, "versions", "vgpu.ko"), "0.1 srcversion ABC123");
  EXPECT_EQ(Row(r, "versions", "vgpuctl"), ReleaseVersion());
  EXPECT_EQ(Row(r, "module", "vgpu.ko"), "loaded");
  EXPECT_EQ(Row(r, "module", "param real_ctl"), "/dev/nvidiactl");
  EXPECT_EQ(Row(r, "driver", "uvm_disable_hmm"), "Y");
  EXPECT_EQ(Row(r, "driver", "/dev vgpu"), "vgpu0 vgpuctl0");
  EXPECT_NE(Row(r, "slots", "module slot 0").find("name=team-a"), std::string::npos);
  EXPECT_NE(Row(r, "slots", "manager slot 0").find("pod=ml/trainer"), std::string::npos);
  EXPECT_EQ(Row(r, "refusals", "slot 0 denied_quota"), "3");
  EXPECT_EQ(Row(r, "refusals", "slot 0 malformed"), "(absent)") << "zero counters are not shown";
  EXPECT_EQ(Row(r, "refusals", "dmesg 1"), "vgpu: slot 0: memory quota refused 2097152 bytes");
  // Two module slots, one the manager knows: a problem an operator must look at.
  ASSERT_EQ(r.Problems().size(), 1u) << r.ToTable();
  EXPECT_NE(r.Problems()[0].find("2 in vgpu.ko, 1 in the manager"), std::string::npos);
  const std::string table = r.ToTable();
  EXPECT_NE(table.find("! mismatch"), std::string::npos) << table;
  EXPECT_NE(table.find("1 problem(s)"), std::string::npos) << table;
}

TEST_F(DiagnoseTest, NodeWithoutTheModuleAndWithHmmSaysSo) {
  Put("sys/module/nvidia/version", "580.159.04");
  Put("sys/module/nvidia_uvm/parameters/uvm_disable_hmm", "N");
  Put("dev/nvidiactl", "");
  NodeInputs in;
  in.root = root_;
  in.manager_error = "/x.sock: Connection refused";
  in.kernel_log_error = "/dev/kmsg: Permission denied";
  Report r = NodeReport(in);
  const auto problems = r.Problems();
  auto has = [&](const std::string& s) {
    for (const auto& p : problems)
      if (p.find(s) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(has("module: vgpu.ko: not loaded")) << r.ToTable();
  EXPECT_TRUE(has("uvm_disable_hmm: N (HMM on")) << r.ToTable();
  EXPECT_TRUE(has("manager: no answer: /x.sock: Connection refused")) << r.ToTable();
  EXPECT_EQ(Row(r, "refusals", "dmesg"), "unreadable: /dev/kmsg: Permission denied");
  EXPECT_EQ(r.ToJson()["problems"].size(), problems.size());
}

TEST_F(DiagnoseTest, ContainerUnderTheModule) {
  Put("proc/devices", "Character devices:\n195 nvidia\n240 vgpu\n241 vgpuctl\n\nBlock devices:\n");
  devices_["nvidiactl"] = {true, 241, 3};
  Put("sys/class/vgpu/vgpuctl3/dev", "241:3");
  Put("sys/class/vgpu/vgpuctl3/slot_id", "3");
  Put("sys/class/vgpu/vgpuctl3/name", "trainer");
  Put("sys/class/vgpu/vgpuctl3/mem_quota", "4294967296");
  Put("sys/class/vgpu/vgpuctl3/compute_share", "30");
  Put("sys/class/vgpu/vgpuctl3/compute_mode", "cap");
  Report r = Container();
  EXPECT_NE(Row(r, "enforcement", "host").find("module (vgpu.ko)"), std::string::npos);
  EXPECT_EQ(Row(r, "enforcement", "hard").rfind("true", 0), 0u);
  EXPECT_EQ(Row(r, "enforcement", "memory quota"), "4.0 GiB (4294967296 bytes)");
  EXPECT_EQ(Row(r, "enforcement", "compute share"), "30 %");
  EXPECT_EQ(Row(r, "enforcement", "compute controller"), "runs in vgpu.ko (kernel host)");
  EXPECT_TRUE(r.Problems().empty()) << r.ToTable();
}

// The shim's settings as the shim reads them, from the file the manager's writer wrote.
TEST_F(DiagnoseTest, ContainerUnderTheShimReadsTheManagersConfigWithTheShimsParser) {
  devices_["nvidiactl"] = {true, 195, 255};
  slots::SlotConfig c;
  c.id = 4;
  c.mem_quota = 3ull << 30;
  Put("etc/vgpu/config", slots::FormatSlotConfigFile(c));
  env_["LD_PRELOAD"] = "/usr/local/vgpu/libvgpu-shim.so";
  env_["VGPU_CONFIG"] = (root_ / "etc/vgpu/config").string();
  Report r = Container();
  EXPECT_EQ(Row(r, "enforcement", "host"), "shim (libvgpu-shim.so via LD_PRELOAD)");
  EXPECT_EQ(Row(r, "enforcement", "hard").rfind("false", 0), 0u);
  EXPECT_EQ(Row(r, "enforcement", "memory quota"), "3.0 GiB (3221225472 bytes)") << r.ToTable();
  EXPECT_EQ(Row(r, "enforcement", "ledger"), "/run/vgpu/ledger") << "the manager's rw mount";
  {  // A process of the slot charged through the shim's own ledger writer.
    const std::string ledger_path = (root_ / "ledger").string();
    Put("etc/vgpu/config", "ledger = " + ledger_path + "\n");
    r = Container();
    EXPECT_EQ(Row(r, "enforcement", "memory charged"), "0 (no process of the slot has run yet)");
    std::string err;
    auto ledger = shim::SharedLedger::Open(ledger_path, &err);
    ASSERT_NE(ledger, nullptr) << err;
    ASSERT_TRUE(ledger->Attach());
    ASSERT_EQ(ledger->TryCharge(64ull << 20, 0), 0);
    r = Container();
    EXPECT_EQ(Row(r, "enforcement", "memory charged"),
              "67108864 bytes by 1 process(es), peak 67108864");
  }

  // A capped share: the controller runs; share 100: nothing to control (not a problem).
  Put("etc/vgpu/config", "compute_share = 30\ncompute_mode = weight\n");
  r = Container();
  EXPECT_EQ(Row(r, "enforcement", "compute share"), "30 %");
  EXPECT_EQ(Row(r, "enforcement", "compute mode"), "weight");
  EXPECT_EQ(Row(r, "enforcement", "compute controller").rfind("runs in each process", 0), 0u);
  Put("etc/vgpu/config", "compute_share = 100\n");
  r = Container();
  EXPECT_EQ(Row(r, "enforcement", "compute controller"),
            "not running: share 100 (nothing to control)");
  EXPECT_TRUE(r.Problems().empty()) << r.ToTable();

  // A config the shim refuses is reported as the shim's own error.
  Put("etc/vgpu/config", "memory_quota = lots\n");
  r = Container();
  const std::string refused = Row(r, "enforcement", "slot config");
  EXPECT_EQ(refused.rfind("refused by the shim: ", 0), 0u) << r.ToTable();
  EXPECT_NE(refused.find("line 1"), std::string::npos) << r.ToTable();
  EXPECT_FALSE(r.Problems().empty());
}

TEST_F(DiagnoseTest, ContainerWithoutEnforcementIsAProblem) {
  Put("proc/devices", "Character devices:\n195 nvidia\n240 vgpu\n");
  devices_["nvidiactl"] = {true, 195, 255};
  Report r = Container();
  EXPECT_EQ(Row(r, "enforcement", "host").rfind("none: /dev/nvidiactl is the real driver's", 0),
            0u);
  EXPECT_EQ(r.Problems().size(), 2u) << r.ToTable();
  devices_.clear();
  r = Container();
  EXPECT_EQ(Row(r, "enforcement", "host").rfind("none: no /dev/nvidiactl", 0), 0u);
}

}  // namespace
}  // namespace vgpu::diagnose
