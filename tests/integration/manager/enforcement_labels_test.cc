// Honest labels (security review F11.6) against the real vgpu-manager binary: the node labels it
// PATCHes (to a stand-in API server, through --kubeconfig) and /metrics say which enforcement
// started and whether it is hard; --enforcement=auto without vgpu.ko fails loudly unless
// --allow-shim-fallback is given, and then says "shim" and "fallback", never "module".
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "manager_process.h"
#include "scrape.h"

namespace vgpu {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using metrics::testing::ParsedExposition;
using namespace std::chrono_literals;

// Records the labels PATCHed onto the node, as a strategic merge does (null removes).
class LabelRecorder {
 public:
  LabelRecorder() {
    svr_.Patch(R"(/api/v1/nodes/([^/]+))",
               [this](const httplib::Request& req, httplib::Response& res) {
                 json patch = json::parse(req.body, nullptr, false);
                 std::lock_guard<std::mutex> l(mu_);
                 node_ = req.matches[1];
                 for (auto& [k, v] : patch["metadata"]["labels"].items()) {
                   if (v.is_null()) {
                     labels_.erase(k);
                   } else {
                     labels_[k] = v.get<std::string>();
                   }
                 }
                 ++patches_;
                 res.set_content(R"({"kind":"Node"})", "application/json");
               });
    port_ = svr_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { svr_.listen_after_bind(); });
    while (!svr_.is_running()) std::this_thread::sleep_for(1ms);
  }
  ~LabelRecorder() {
    svr_.stop();
    thread_.join();
  }
  void Seed(const std::string& k, const std::string& v) { labels_[k] = v; }
  // The labels once a PATCH arrived (waits up to 10 s); empty if none did.
  std::map<std::string, std::string> WaitForPatch() {
    for (int i = 0; i < 200; ++i) {
      {
        std::lock_guard<std::mutex> l(mu_);
        if (patches_ > 0) return labels_;
      }
      std::this_thread::sleep_for(50ms);
    }
    return {};
  }
  int patches() {
    std::lock_guard<std::mutex> l(mu_);
    return patches_;
  }
  std::string node() {
    std::lock_guard<std::mutex> l(mu_);
    return node_;
  }
  int port() const { return port_; }

 private:
  httplib::Server svr_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::map<std::string, std::string> labels_;
  std::string node_;
  int patches_ = 0;
};

// Scrapes until the enforcement families are there (the sampler runs every --sample-period).
std::optional<ParsedExposition> ScrapeWithEnforcement(int port) {
  for (int i = 0; i < 100; ++i) {
    auto p = testing::Scrape(port);
    if (p && p->types.count("vgpu_node_enforcement_hard")) return p;
    std::this_thread::sleep_for(100ms);
  }
  return std::nullopt;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class EnforcementLabelsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/vgpu-enforcement-it-XXXXXX";
    dir_ = mkdtemp(tmpl);
    fs::create_directories(dir_ / "sys-module");  // no vgpu in it: the module is not loaded
    std::ofstream(dir_ / "kubeconfig")
        << "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        << "clusters:\n- name: k\n  cluster:\n    server: http://127.0.0.1:" << api_.port()
        << "\ncontexts:\n- name: c\n  context:\n    cluster: k\n    user: u\n"
        << "users:\n- name: u\n  user:\n    token: t\n";
    port_ = testing::FreePort();
    manager_ = std::make_unique<testing::ManagerProcess>(VGPU_MANAGER_BIN, dir_.string());
  }
  void TearDown() override {
    manager_.reset();
    fs::remove_all(dir_);
  }
  std::vector<std::string> Flags(std::vector<std::string> more) {
    std::vector<std::string> f = {"--standalone",
                                  "--query-port=" + std::to_string(port_),
                                  "--sample-period=1",
                                  "--hostname-override=it-node",
                                  "--kubeconfig=" + (dir_ / "kubeconfig").string(),
                                  "--sys-module-dir=" + (dir_ / "sys-module").string()};
    f.insert(f.end(), more.begin(), more.end());
    return f;
  }

  LabelRecorder api_;
  fs::path dir_;
  int port_ = 0;
  std::unique_ptr<testing::ManagerProcess> manager_;
};

TEST_F(EnforcementLabelsTest, ShimModeIsLabelledSoft) {
  api_.Seed("vgpu.io/deployment", "module");  // what an earlier overlay's static flag left
  ASSERT_TRUE(manager_->Start(Flags({"--enforcement=shim"}))) << ReadAll(manager_->LogFile());
  auto labels = api_.WaitForPatch();
  EXPECT_EQ(api_.node(), "it-node");
  EXPECT_EQ(labels["vgpu.io/enforcement"], "shim") << ReadAll(manager_->LogFile());
  EXPECT_EQ(labels["vgpu.io/enforcement-hard"], "false");
  EXPECT_EQ(labels.count("vgpu.io/deployment"), 0u) << "the static label could lie: removed";
  EXPECT_EQ(labels.count("vgpu.io/module-install"), 0u) << "no installer on this node";
  auto p = ScrapeWithEnforcement(port_);
  ASSERT_TRUE(p) << ReadAll(manager_->LogFile());
  EXPECT_EQ(p->Value("vgpu_node_enforcement_info",
                     {{"node", "it-node"}, {"mode", "shim"}, {"hard", "false"}}),
            1);
  EXPECT_EQ(p->Value("vgpu_node_enforcement_hard", {{"node", "it-node"}}), 0);
  EXPECT_EQ(p->Value("vgpu_node_shim_fallback", {{"node", "it-node"}}), 0);
}

// The module overlay's configuration on a node where vgpu.ko did not load: the manager refuses
// to start (nothing is labelled, no slot is served) and says which flag would allow the shim.
TEST_F(EnforcementLabelsTest, AutoWithoutTheModuleRefusesToFallBack) {
  std::ofstream(dir_ / "module.state") << "shim dkms build/install failed for 6.1.0-test\n";
  EXPECT_FALSE(manager_->Start(
      Flags({"--enforcement=auto", "--module-state-file=" + (dir_ / "module.state").string()})));
  const std::string log = ReadAll(manager_->LogFile());
  EXPECT_NE(log.find("event=startup_failed step=enforcement"), std::string::npos) << log;
  EXPECT_NE(log.find("--allow-shim-fallback"), std::string::npos) << log;
  EXPECT_NE(log.find("event=module_install_failed"), std::string::npos) << log;
  EXPECT_NE(log.find("dkms build/install failed for 6.1.0-test"), std::string::npos) << log;
  EXPECT_EQ(api_.patches(), 0) << "no label may be published for a node that serves nothing";
}

TEST_F(EnforcementLabelsTest, AllowedFallbackIsLabelledShimAndFallback) {
  std::ofstream(dir_ / "module.state") << "shim modprobe vgpu refused: Key was rejected\n";
  ASSERT_TRUE(manager_->Start(Flags({"--enforcement=auto", "--allow-shim-fallback",
                                     "--module-state-file=" + (dir_ / "module.state").string()})))
      << ReadAll(manager_->LogFile());
  auto labels = api_.WaitForPatch();
  EXPECT_EQ(labels["vgpu.io/enforcement"], "shim");
  EXPECT_EQ(labels["vgpu.io/enforcement-hard"], "false");
  EXPECT_EQ(labels["vgpu.io/module-install"], "failed");
  auto p = ScrapeWithEnforcement(port_);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->Value("vgpu_node_enforcement_hard", {{"node", "it-node"}}), 0);
  EXPECT_EQ(p->Value("vgpu_node_shim_fallback", {{"node", "it-node"}}), 1);
  EXPECT_EQ(p->Value("vgpu_node_module_install_ok", {{"node", "it-node"}}), 0);
  const std::string log = ReadAll(manager_->LogFile());
  EXPECT_NE(log.find("event=enforcement_fallback mode=shim hard=false"), std::string::npos) << log;
}

}  // namespace
}  // namespace vgpu
