// A thread whose body waits in poll() and that Stop() can wake: the daemon's socket and inotify
// loops (the control API, the kubelet.sock watcher) each wait on one fd beside an eventfd that
// Stop() writes. This class owns that eventfd and the thread, so each loop keeps only its own fd.
#pragma once

#include <functional>
#include <thread>

#include "vgpu/status.h"
#include "vgpu/unique_fd.h"

namespace vgpu {

class StoppableThread {
 public:
  StoppableThread() = default;
  ~StoppableThread();
  StoppableThread(const StoppableThread&) = delete;
  StoppableThread& operator=(const StoppableThread&) = delete;

  // Creates the stop eventfd, then runs `body` on a new thread. The body should loop on
  // WaitReadable() and return once it answers kStopped.
  Status Start(std::function<void()> body);
  // Wakes the body, joins it, closes the eventfd. Safe before Start() and when called twice.
  void Stop();

  // For the body. True once `fd` is readable (input, or a hang-up that read() reports); false
  // once Stop() was called (checked before `fd`) or poll() failed. EINTR waits again.
  bool WaitReadable(int fd) const;
  // One poll() of at most `timeout_ms`: false also when it times out or is interrupted.
  bool WaitReadableFor(int fd, int timeout_ms) const;

 private:
  UniqueFd wake_fd_;  // eventfd, nonblocking; written once by Stop()
  std::thread thread_;
};

}  // namespace vgpu
