// The kubelet-facing side: one v1beta1 DevicePlugin gRPC server per resource (vcuda-core,
// vcuda-memory, vcuda-gpu), each on its own unix socket in the device-plugin directory, and the
// Registration client. Lifecycle as NVIDIA's plugin (STYLE.md §3): Serve (remove a stale
// socket, listen, prove the socket answers with a self-dial), then Register; Stop is idempotent
// and removes the socket. docs/reference/device-plugin-api.md §1, §2.1 hold the protocol.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "vgpu/manager/slot_manager.h"
#include "vgpu/status.h"

namespace grpc {
class Server;
}

namespace vgpu::plugin {

class DevicePluginService;

struct PluginOptions {
  std::string socket_dir;  // kubelet's device-plugin directory
  std::string endpoint;    // socket file name, e.g. "vgpu-vcuda-memory.sock"
  std::string resource;    // e.g. "tencent.com/vcuda-memory"
  manager::ResourceKind kind;
};

class PluginServer {
 public:
  PluginServer(PluginOptions options, manager::SlotManager& slots);
  ~PluginServer();
  PluginServer(const PluginServer&) = delete;
  PluginServer& operator=(const PluginServer&) = delete;

  // Removes a stale socket, listens, and returns only once a self-dial got an answer.
  Status Serve();
  // Registers with the kubelet on `kubelet_socket` (RegisterRequest.options equal to what
  // GetDevicePluginOptions returns: the kubelet reads the latter, §2.1 step 3).
  Status Register(const std::string& kubelet_socket, std::chrono::milliseconds timeout) const;
  // Stops serving (open ListAndWatch streams end) and removes the socket. Safe to repeat.
  void Stop();

  std::string SocketPath() const;
  const PluginOptions& options() const { return options_; }

 private:
  PluginOptions options_;
  manager::SlotManager& slots_;
  std::unique_ptr<DevicePluginService> service_;
  std::unique_ptr<grpc::Server> server_;
};

// grpc::StatusCode has the same numbering as vgpu::StatusCode.
int ToGrpcCode(StatusCode code);

}  // namespace vgpu::plugin
