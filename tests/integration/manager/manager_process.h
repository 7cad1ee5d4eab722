// Runs the real vgpu-manager binary in a per-test directory and talks to its control API.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace vgpu::testing {

class ManagerProcess {
 public:
  ManagerProcess(std::string binary, std::string dir)
      : binary_(std::move(binary)), dir_(std::move(dir)) {}
  ~ManagerProcess() { Kill(SIGKILL); }

  // Starts the manager with the test directory's paths plus `extra` flags and `env`
  // (NAME=VALUE). Waits until its control socket answers.
  bool Start(const std::vector<std::string>& extra = {}, const std::vector<std::string>& env = {});
  // Sends `sig` and reaps the process; returns its wait status.
  int Kill(int sig);
  // Waits for the process to exit by itself (e.g. a crash point).
  bool WaitExit(int timeout_ms, int* status);
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  // The recorded machine the manager discovers (--gpu-fixture); two 16 GiB GPUs by default.
  void set_fixture(std::string path) { fixture_ = std::move(path); }

  std::string ControlSocket() const { return dir_ + "/vm/vgpu-manager.sock"; }
  std::string CheckpointFile() const { return dir_ + "/cp/vgpu-manager.checkpoint"; }
  std::string SlotRoot() const { return dir_ + "/run/slots"; }
  std::string LogFile() const { return dir_ + "/manager.log"; }

  // One control request; an empty object when the socket does not answer.
  nlohmann::json Control(const nlohmann::json& request) const;
  nlohmann::json Slots() const { return Control({{"op", "list"}})["slots"]; }

 private:
  std::string binary_;
  std::string dir_;
  std::string fixture_ = VGPU_TEST_DATA "/two-gpu-16g.json";
  pid_t pid_ = -1;
};

}  // namespace vgpu::testing
