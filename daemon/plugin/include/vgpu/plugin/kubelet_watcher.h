// Watches the device-plugin directory with inotify. The kubelet deletes every plugin socket and
// re-creates kubelet.sock when it restarts (device-plugin-api.md §2.2): a Create of kubelet.sock
// means "serve again and re-register" (NVIDIA and the kubelet's own stub use the same trigger).
// The deletion of our own sockets is not watched: we delete them ourselves when restarting.
#pragma once

#include <functional>
#include <string>

#include "vgpu/status.h"
#include "vgpu/stoppable_thread.h"
#include "vgpu/unique_fd.h"

namespace vgpu::plugin {

class KubeletWatcher {
 public:
  // `on_restart` runs on the watcher's thread; it should only post work to the main loop.
  KubeletWatcher(std::string dir, std::string kubelet_socket_name,
                 std::function<void(std::string)> on_restart);
  ~KubeletWatcher();
  Status Start();
  void Stop();

 private:
  void Run();
  std::string dir_;
  std::string kubelet_socket_name_;
  std::function<void(std::string)> on_restart_;
  UniqueFd inotify_fd_;
  StoppableThread thread_;  // Run(); Stop() wakes its poll
};

}  // namespace vgpu::plugin
