// vgpu-e2e-kubelet: the fake kubelet (fake_kubelet.h) as a small program, so that
// tests/gpu/e2e.sh can admit pods to a real vgpu-manager on a GPU machine that has no gRPC.
// It serves kubelet.sock and pod-resources.sock in DIR, then takes one command per stdin line and
// answers each with one JSON line on stdout:
//   wait RESOURCE...          waits (30 s) until each resource registered and listed its devices
//   admit POD CTR RES=N...    the kubelet's admission of one container (GetPreferredAllocation,
//                             Allocate, PreStartContainer per resource, in the order given); the
//                             answer merges the resources' envs, mounts and devices
//   remove POD                forgets the pod's assignments (pod-resources no longer lists it)
//   quit
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "command_loop.h"
#include "fake_kubelet.h"

namespace {

using nlohmann::json;
using vgpu::testing::Admission;
using vgpu::testing::FakeKubelet;

json Answer(const Admission& a) {
  json envs = json::object(), mounts = json::array(), devices = json::array(), ids = json::object();
  for (const auto& [resource, r] : a.responses) {
    for (const auto& [k, v] : r.envs()) {
      envs[k] = v;
    }
    for (const auto& m : r.mounts()) {
      mounts.push_back(
          {{"host", m.host_path()}, {"container", m.container_path()}, {"ro", m.read_only()}});
    }
    for (const auto& d : r.devices()) {
      devices.push_back({{"host", d.host_path()},
                         {"container", d.container_path()},
                         {"permissions", d.permissions()}});
    }
  }
  for (const auto& [resource, list] : a.ids) {
    ids[resource] = list;
  }
  return {{"ok", a.ok},   {"error", a.error}, {"ids", ids},
          {"envs", envs}, {"mounts", mounts}, {"devices", devices}};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: vgpu-e2e-kubelet DIR (commands on stdin: wait, admit, remove, quit)\n";
    return 2;
  }
  FakeKubelet kubelet(argv[1]);
  kubelet.Start();
  vgpu::testing::ServeCommands([&](const std::string& cmd, std::istringstream& in) -> json {
    if (cmd == "wait") {
      bool ok = true;
      std::string resource;
      while (in >> resource) {
        ok = ok && kubelet.WaitForRegistration(resource, {}, std::chrono::seconds(30)) &&
             kubelet.WaitForDevices(resource, std::chrono::seconds(30));
      }
      return {{"ok", ok}};
    }
    if (cmd == "admit") {
      std::string pod, ctr, req;
      in >> pod >> ctr;
      std::vector<std::pair<std::string, int>> order;
      bool bad = pod.empty() || ctr.empty();
      while (in >> req) {
        const auto eq = req.find('=');
        if (eq == std::string::npos) {
          bad = true;
          break;
        }
        order.emplace_back(req.substr(0, eq), std::stoi(req.substr(eq + 1)));
      }
      return bad || order.empty() ? json{{"ok", false}, {"error", "usage: admit POD CTR RES=N..."}}
                                  : Answer(kubelet.Admit(pod, ctr, order));
    }
    if (cmd == "remove") {
      std::string pod;
      in >> pod;
      kubelet.RemovePod(pod);
      return {{"ok", true}};
    }
    return {{"ok", false}, {"error", "unknown command '" + cmd + "' (wait, admit, remove, quit)"}};
  });
  kubelet.Stop();
  return 0;
}
