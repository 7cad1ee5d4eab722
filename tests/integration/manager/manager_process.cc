#include "manager_process.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

namespace vgpu::testing {

bool ManagerProcess::Start(const std::vector<std::string>& extra,
                           const std::vector<std::string>& env) {
  std::vector<std::string> args = {
      binary_,
      "--enforcement=shim",
      "--gpu-fixture=" + fixture_,
      "--virtual-manager-path=" + dir_ + "/vm",
      "--slot-path=" + dir_ + "/run",
      "--checkpoint-path=" + dir_ + "/cp",
      "--device-plugin-path=" + dir_,
      "--kubelet-socket=" + dir_ + "/kubelet.sock",
      "--pod-resources-socket=" + dir_ + "/pod-resources.sock",
      "--query-port=0",
  };
  args.insert(args.end(), extra.begin(), extra.end());
  // Everything the child needs is built before fork: this process runs the fake kubelet's gRPC
  // threads, and a child of a threaded process may only make async-signal-safe calls. An
  // allocation there deadlocks when another thread held the allocator's lock at fork (ASan's
  // stack depot did, one start in five under CI).
  std::vector<char*> argv;
  for (auto& a : args) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);
  std::vector<std::string> environment = env;
  for (char** e = environ; *e != nullptr; ++e) {
    environment.emplace_back(*e);
  }
  std::vector<char*> envp;
  for (auto& e : environment) {
    envp.push_back(e.data());
  }
  envp.push_back(nullptr);
  const std::string log_file = LogFile();
  pid_ = ::fork();
  if (pid_ == 0) {
    int log = ::open(log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    ::dup2(log, 2);
    ::dup2(log, 1);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    if (Control({{"op", "list"}}).contains("ok")) {
      return true;
    }
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

int ManagerProcess::Kill(int sig) {
  if (pid_ <= 0) {
    return -1;
  }
  ::kill(pid_, sig);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  return status;
}

bool ManagerProcess::WaitExit(int timeout_ms, int* status) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (pid_ > 0 && std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(pid_, status, WNOHANG) == pid_) {
      pid_ = -1;
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return pid_ <= 0;
}

nlohmann::json ManagerProcess::Control(const nlohmann::json& request) const {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::string path = ControlSocket();
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return nlohmann::json::object();
  }
  std::string line = request.dump() + "\n";
  (void)!::write(fd, line.data(), line.size());
  std::string reply;
  char buf[65536];
  while (reply.find('\n') == std::string::npos) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 5000) <= 0) {
      break;
    }
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) {
      break;
    }
    reply.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  auto j = nlohmann::json::parse(reply, nullptr, false);
  return j.is_discarded() ? nlohmann::json::object() : j;
}

}  // namespace vgpu::testing
