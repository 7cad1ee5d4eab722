// The manager's local control API: a unix stream socket (default
// <virtual-manager-path>/vgpu-manager.sock, mode 0600), one JSON request per line, one JSON reply
// per line, any number of requests per connection. `vgpuctl` or `nc -U` can drive it.
//
//   {"op":"list"}
//     -> {"ok":true,"slots":[SLOT,...]}
//   {"op":"create","mem_quota":1073741824,"compute_share":30,"compute_mode":"weight","gpu":0,
//    "label":"debug"}
//     (standalone only; compute_mode optional, default cap; gpu optional: the placer picks;
//     label optional; the setting keys are uapi/vgpu_slot_fields.h's)
//     -> {"ok":true,"slot":SLOT}
//   {"op":"delete","id":3}                 (standalone only)
//     -> {"ok":true}
//   anything else, or a failure
//     -> {"ok":false,"error":"INVALID_ARGUMENT: compute_share: '0' is not in 1..100"}
//
//   SLOT = {"id":3,"name":"g0-m0-n4","gpu":0,"gpu_uuid":"GPU-…","mem_quota":1073741824,
//           "compute_share":30,"compute_mode":"cap","exclusive":false,"managed_policy":"refuse",
//           "unknown_policy":"refuse","memory_ids":[…],"core_ids":[…],"gpu_ids":[…],
//           "pod_namespace":"","pod_name":"debug","container":"","linked":true,"manual":true}
//
// In kubelet mode only "list" is served: slots belong to the kubelet's allocations there.
#pragma once

#include <string>
#include <string_view>

#include "vgpu/manager/slot_manager.h"
#include "vgpu/stoppable_thread.h"
#include "vgpu/unique_fd.h"

namespace vgpu::manager {

// One request line -> one reply line (no newline). Pure apart from the SlotManager calls.
std::string HandleControlRequest(SlotManager& slots, bool standalone, std::string_view line);

class ControlServer {
 public:
  ControlServer(std::string socket_path, SlotManager& slots, bool standalone);
  ~ControlServer();
  Status Start();
  void Stop();

 private:
  void Run();
  void Serve(int fd);
  std::string path_;
  SlotManager& slots_;
  bool standalone_;
  UniqueFd listen_fd_;
  StoppableThread thread_;  // Run(); Stop() wakes it, also out of Serve()
};

}  // namespace vgpu::manager
