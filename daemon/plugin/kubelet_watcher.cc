#include "vgpu/plugin/kubelet_watcher.h"

#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>

namespace vgpu::plugin {

KubeletWatcher::KubeletWatcher(std::string dir, std::string kubelet_socket_name,
                               std::function<void(std::string)> on_restart)
    : dir_(std::move(dir)),
      kubelet_socket_name_(std::move(kubelet_socket_name)),
      on_restart_(std::move(on_restart)) {}

KubeletWatcher::~KubeletWatcher() { Stop(); }

Status KubeletWatcher::Start() {
  UniqueFd fd(inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  if (!fd.valid()) {
    return ErrnoError("inotify_init1", errno);
  }
  if (inotify_add_watch(fd.get(), dir_.c_str(), IN_CREATE | IN_MOVED_TO) < 0) {
    return ErrnoError("inotify watch " + dir_, errno);  // `fd` closes after errno is read
  }
  inotify_fd_ = std::move(fd);
  return thread_.Start([this] { Run(); });
}

void KubeletWatcher::Stop() {
  thread_.Stop();
  inotify_fd_.reset();
}

void KubeletWatcher::Run() {
  alignas(inotify_event) char buf[4096];
  for (;;) {
    if (!thread_.WaitReadable(inotify_fd_.get())) {
      return;
    }
    ssize_t n = ::read(inotify_fd_.get(), buf, sizeof buf);
    for (ssize_t off = 0; n > 0 && off < n;) {
      auto* ev = reinterpret_cast<inotify_event*>(buf + off);
      if (ev->len > 0 && kubelet_socket_name_ == ev->name) {
        on_restart_(std::string("created ") + ev->name);
      }
      off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
    }
  }
}

}  // namespace vgpu::plugin
