// vgpu-dra-e2e-cluster: the DRA plugin's two counterparts as one small program, so that
// tests/gpu/dra.sh can drive a real vgpu-manager --kubelet-api=dra on a GPU machine that has no
// gRPC: the fake API server (fake_api_server.h, on 127.0.0.1, an ephemeral port) and the fake
// kubelet (fake_dra_kubelet.h, on the real unix sockets under KUBELET_DIR). At start it writes
// KUBECONFIG (pointing at the API server) for the manager's --kubeconfig. Then one command per
// stdin line, one JSON line per answer on stdout:
//   register DRIVER                         waits (30 s) for the plugin's registration
//   share NS NAME UID NODE GPU MEMORY CORES a claim allocated by the scheduler: one share of
//                                           gpu-<GPU>-share in pool NODE, consumedCapacity
//                                           memory MEMORY ("4Gi") and cores CORES ("30")
//   prepare NS NAME UID                     NodePrepareResources (v1): {"ok", "error", "cdi_ids"}
//   unprepare NS NAME UID                   NodeUnprepareResources (v1): {"ok", "error"}
//   slices                                  the slices the plugin published: {"ok", "slices"}
//   quit
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "command_loop.h"
#include "fake_api_server.h"
#include "fake_dra_kubelet.h"

namespace {

using nlohmann::json;
using vgpu::testing::ClaimId;
namespace drav1 = vgpu::testing::drav1;

json Prepare(vgpu::testing::FakeDraKubelet& kubelet, const ClaimId& claim) {
  drav1::NodePrepareResourcesResponse resp;
  grpc::Status s = kubelet.Prepare({claim}, &resp);
  if (!s.ok()) {
    return {{"ok", false}, {"error", "gRPC: " + s.error_message()}};
  }
  auto it = resp.claims().find(claim.uid);
  if (it == resp.claims().end()) {
    return {{"ok", false}, {"error", "no answer for claim " + claim.uid}};
  }
  json ids = json::array();
  for (const auto& d : it->second.devices()) {
    for (const auto& id : d.cdi_device_ids()) {
      ids.push_back(id);
    }
  }
  return {{"ok", it->second.error().empty()}, {"error", it->second.error()}, {"cdi_ids", ids}};
}

json Unprepare(vgpu::testing::FakeDraKubelet& kubelet, const ClaimId& claim) {
  drav1::NodeUnprepareResourcesResponse resp;
  grpc::Status s = kubelet.Unprepare({claim}, &resp);
  if (!s.ok()) {
    return {{"ok", false}, {"error", "gRPC: " + s.error_message()}};
  }
  auto it = resp.claims().find(claim.uid);
  std::string error = it == resp.claims().end() ? "no answer" : it->second.error();
  return {{"ok", error.empty()}, {"error", error}};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: vgpu-dra-e2e-cluster KUBELET_DIR KUBECONFIG (commands on stdin: "
                 "register, share, prepare, unprepare, slices, quit)\n";
    return 2;
  }
  vgpu::testing::FakeApiServer api;
  api.WriteKubeconfig(argv[2]);
  vgpu::testing::FakeDraKubelet kubelet(argv[1]);
  vgpu::testing::ServeCommands([&](const std::string& cmd, std::istringstream& in) -> json {
    ClaimId claim;
    if (cmd == "register") {
      std::string driver;
      in >> driver;
      return {{"ok", kubelet.Register(driver, std::chrono::seconds(30))}};
    }
    if (cmd == "share") {
      std::string node, memory, cores;
      int gpu = -1;
      in >> claim.ns >> claim.name >> claim.uid >> node >> gpu >> memory >> cores;
      if (!in || gpu < 0) {
        return {{"ok", false}, {"error", "usage: share NS NAME UID NODE GPU MEMORY CORES"}};
      }
      json results = json::array({{{"device", "gpu-" + std::to_string(gpu) + "-share"},
                                   {"shareID", "share-" + claim.uid},
                                   {"consumedCapacity", {{"memory", memory}, {"cores", cores}}}}});
      api.PutClaim(
          vgpu::testing::MakeClaim(claim.ns, claim.name, claim.uid, "gpu.vgpu.io", node, results));
      return {{"ok", true}};
    }
    if (cmd == "prepare" || cmd == "unprepare") {
      in >> claim.ns >> claim.name >> claim.uid;
      if (!in) {
        return {{"ok", false}, {"error", "usage: " + cmd + " NS NAME UID"}};
      }
      return cmd == "prepare" ? Prepare(kubelet, claim) : Unprepare(kubelet, claim);
    }
    if (cmd == "slices") {
      json slices = json::array();
      for (const auto& [name, s] : api.Slices()) {
        slices.push_back(s);
      }
      return {{"ok", true}, {"slices", slices}};
    }
    return {{"ok", false},
            {"error",
             "unknown command '" + cmd + "' (register, share, prepare, unprepare, slices, quit)"}};
  });
  return 0;
}
