#include "vgpu/stoppable_thread.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace vgpu {

StoppableThread::~StoppableThread() { Stop(); }

Status StoppableThread::Start(std::function<void()> body) {
  wake_fd_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake_fd_.valid()) {
    return ErrnoError("eventfd", errno);
  }
  thread_ = std::thread(std::move(body));
  return OkStatus();
}

void StoppableThread::Stop() {
  if (thread_.joinable()) {
    uint64_t one = 1;
    (void)!::write(wake_fd_.get(), &one, sizeof one);
    thread_.join();
  }
  wake_fd_.reset();
}

bool StoppableThread::WaitReadable(int fd) const {
  for (;;) {
    pollfd fds[2] = {{fd, POLLIN, 0}, {wake_fd_.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) >= 0) {
      return fds[1].revents == 0;
    }
    if (errno != EINTR) {
      return false;
    }
  }
}

bool StoppableThread::WaitReadableFor(int fd, int timeout_ms) const {
  pollfd fds[2] = {{fd, POLLIN, 0}, {wake_fd_.get(), POLLIN, 0}};
  return ::poll(fds, 2, timeout_ms) > 0 && fds[1].revents == 0;
}

}  // namespace vgpu
