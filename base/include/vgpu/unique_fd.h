// A file descriptor with one owner, closed when the owner lets go: the daemon's listening
// sockets and inotify descriptors, which a failed start and a stop both close.
#pragma once

#include <unistd.h>

namespace vgpu {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Closes the descriptor held (if any) and holds `fd` instead; safe to call twice.
  void reset(int fd = -1) {
    if (fd_ >= 0 && fd_ != fd) {
      ::close(fd_);
    }
    fd_ = fd;
  }
  // Gives up the descriptor without closing it.
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_ = -1;
};

}  // namespace vgpu
