#include "vgpu/diagnose/node_inputs.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace vgpu::diagnose {

bool ReadKernelLog(const std::string& kmsg_path, std::vector<std::string>* lines,
                   std::string* err) {
  const int fd = ::open(kmsg_path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    *err = kmsg_path + ": " + strerror(errno);
    return false;
  }
  char rec[8192];
  for (;;) {
    const ssize_t n = ::read(fd, rec, sizeof rec - 1);
    if (n < 0 && errno == EPIPE) continue;  // overwritten records: skip to the next
    if (n <= 0) break;                      // EAGAIN: all read
    std::string r(rec, static_cast<size_t>(n));
    const size_t semi = r.find(';');  // "prio,seq,usec,flags;message\n continuation..."
    std::string msg = semi == std::string::npos ? r : r.substr(semi + 1);
    msg = msg.substr(0, msg.find('\n'));
    lines->push_back(std::move(msg));
  }
  ::close(fd);
  return true;
}

std::optional<nlohmann::json> AskManager(const std::string& socket_path,
                                         const nlohmann::json& request, std::string* err) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (fd < 0 || socket_path.size() >= sizeof addr.sun_path) {
    *err = "bad control socket path " + socket_path;
    if (fd >= 0) ::close(fd);
    return std::nullopt;
  }
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    *err = socket_path + ": " + strerror(errno);
    ::close(fd);
    return std::nullopt;
  }
  const std::string line = request.dump() + "\n";
  std::string reply;
  if (::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size())) {
    char buf[65536];
    while (reply.find('\n') == std::string::npos) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 3000) <= 0) break;
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n <= 0) break;
      reply.append(buf, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  auto j = nlohmann::json::parse(reply, nullptr, false);
  if (j.is_discarded() || !j.value("ok", false)) {
    *err = "unexpected answer from " + socket_path + ": " + reply.substr(0, 200);
    return std::nullopt;
  }
  return j;
}

NodeInputs GatherNodeInputs(const std::filesystem::path& root, const std::string& control_socket) {
  NodeInputs in;
  in.root = root;
  ReadKernelLog((root / "dev/kmsg").string(), &in.kernel_log, &in.kernel_log_error);
  in.manager_list = AskManager(control_socket, {{"op", "list"}}, &in.manager_error);
  return in;
}

}  // namespace vgpu::diagnose
