// The compute semantics of a pod spec, through the real vgpu-manager, the fake kubelet and a fake
// Kubernetes API server: tencent.com/vcuda-core: N is a hard cap of N % unless the pod's
// vgpu.io/compute-mode annotation says weight. What the container's shim reads (its slot config,
// parsed by the shim's own reader) carries the share and the mode before the container starts.
#include <httplib.h>

#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include "manager_fixture.h"
#include "shim/preload/config.h"

namespace vgpu::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// GET /api/v1/namespaces/{ns}/pods/{name}, from a table of annotations.
class FakePodApi {
 public:
  FakePodApi() {
    svr_.Get(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+))", [this](const httplib::Request& req,
                                                                  httplib::Response& res) {
      std::lock_guard lock(mu_);
      if (req.get_header_value("Authorization") != "Bearer pod-reader-token") {
        res.status = 401;
        return;
      }
      auto it = pods_.find(req.matches[1].str() + "/" + req.matches[2].str());
      if (it == pods_.end()) {
        res.status = 404;
        res.set_content(R"({"kind":"Status","message":"pod not found"})", "application/json");
        return;
      }
      json pod = {{"kind", "Pod"},
                  {"metadata", {{"name", req.matches[2].str()}, {"annotations", it->second}}}};
      res.set_content(pod.dump(), "application/json");
    });
    port_ = svr_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { svr_.listen_after_bind(); });
    while (!svr_.is_running()) std::this_thread::sleep_for(1ms);
  }
  ~FakePodApi() {
    svr_.stop();
    thread_.join();
  }
  void SetPod(const std::string& name, std::map<std::string, std::string> annotations) {
    std::lock_guard lock(mu_);
    pods_["default/" + name] = std::move(annotations);
  }
  std::string WriteKubeconfig(const std::string& dir) const {
    std::string path = dir + "/kubeconfig";
    std::ofstream(path) << "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                        << "clusters:\n- name: k\n  cluster:\n    server: http://127.0.0.1:"
                        << port_ << "\n"
                        << "contexts:\n- name: c\n  context:\n    cluster: k\n    user: u\n"
                        << "users:\n- name: u\n  user:\n    token: pod-reader-token\n";
    return path;
  }

 private:
  httplib::Server svr_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::map<std::string, std::map<std::string, std::string>> pods_;
};

class ComputeModeTest : public ManagerFixture {
 protected:
  ComputeModeTest() : ManagerFixture("/tmp/vgpu-mode-XXXXXX") {}
};

TEST_F(ComputeModeTest, VcudaCoreIsACapUnlessThePodAsksForWeight) {
  FakePodApi api;
  api.SetPod("capped", {});
  api.SetPod("weighted", {{"vgpu.io/compute-mode", "weight"}});
  api.SetPod("typo", {{"vgpu.io/compute-mode", "wieght"}});
  ASSERT_NO_FATAL_FAILURE(StartBoth({"--kubeconfig=" + api.WriteKubeconfig(dir_)}));
  struct Want {
    std::string pod;
    int cores;
    uint32_t mode;
  };
  for (const Want& w :
       {Want{"capped", 30, VGPU_COMPUTE_CAP}, Want{"weighted", 70, VGPU_COMPUTE_WEIGHT}}) {
    Admission a = kubelet_->Admit(w.pod, "main", {{kMem, 4}, {kCore, w.cores}});
    ASSERT_TRUE(a.ok) << w.pod << ": " << a.error;
    std::string slot_id;
    for (const auto& [k, v] : a.responses.at(kMem).envs()) {
      if (k == "VGPU_SLOT_ID") slot_id = v;
    }
    ASSERT_FALSE(slot_id.empty());
    // The config the container's shim reads, through the shim's own parser.
    std::ifstream in(manager_->SlotRoot() + "/" + slot_id + "/config");
    std::string text((std::istreambuf_iterator<char>(in)), {});
    shim::SlotConfig cfg;
    ASSERT_EQ(shim::ParseConfigText(cfg, text), "") << text;
    EXPECT_EQ(cfg.compute_share, uint32_t(w.cores)) << w.pod;
    EXPECT_EQ(cfg.compute_mode, w.mode) << w.pod << "\n" << text;
  }
  json slots = manager_->Slots();
  std::map<std::string, std::string> modes;
  for (const auto& s : slots) modes[s["pod_name"]] = s["compute_mode"];
  EXPECT_EQ(modes["capped"], "cap");
  EXPECT_EQ(modes["weighted"], "weight");
  // A value that names no mode is refused at PreStart, where `kubectl describe pod` shows it.
  Admission bad = kubelet_->Admit("typo", "main", {{kMem, 4}, {kCore, 10}});
  EXPECT_FALSE(bad.ok);
  EXPECT_NE(bad.error.find("vgpu.io/compute-mode"), std::string::npos) << bad.error;
}

}  // namespace
}  // namespace vgpu::testing
