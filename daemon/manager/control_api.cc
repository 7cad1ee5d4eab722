#include "vgpu/manager/control_api.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>

#include "vgpu/manager/log.h"
#include "vgpu/slots/slot_record_json.h"

namespace vgpu::manager {
namespace {

using nlohmann::json;

std::string Error(const Status& s) { return json{{"ok", false}, {"error", s.ToString()}}.dump(); }

}  // namespace

std::string HandleControlRequest(SlotManager& slots, bool standalone, std::string_view line) {
  json req = json::parse(line, nullptr, false);
  if (req.is_discarded() || !req.is_object() || !req.contains("op") || !req["op"].is_string()) {
    return Error(InvalidArgumentError("request must be a JSON object with a string \"op\""));
  }
  std::string op = req["op"].get<std::string>();
  if (op == "list") {
    json list = json::array();
    for (const auto& r : slots.Snapshot()) {
      list.push_back(slots::SlotRecordToJson(r));
    }
    return json{{"ok", true}, {"slots", list}}.dump();
  }
  if (op != "create" && op != "delete") {
    return Error(InvalidArgumentError("op: unknown '" + op + "' (list, create, delete)"));
  }
  if (!standalone) {
    return Error(FailedPreconditionError(
        "op " + op + ": only in --standalone mode; with a kubelet, slots follow its allocations"));
  }
  if (op == "delete") {
    if (!req.contains("id") || !req["id"].is_number_unsigned()) {
      return Error(InvalidArgumentError("id: required unsigned integer"));
    }
    Status s = slots.DeleteSlot(req["id"].get<uint32_t>());
    return s.ok() ? json{{"ok", true}}.dump() : Error(s);
  }
  for (const char* renamed : {"memory_bytes", "core_percent"}) {
    if (req.contains(renamed)) {
      return Error(InvalidArgumentError(
          std::string(renamed) + ": now mem_quota and compute_share (uapi/vgpu_slot_fields.h)"));
    }
  }
  for (const char* required : {"mem_quota", "compute_share"}) {
    if (!req.contains(required)) {
      return Error(InvalidArgumentError(std::string(required) + ": required"));
    }
  }
  SlotSettings wanted;
  if (Status s = SettingsFromJson(req, wanted, /*require_all=*/false); !s.ok()) {
    return Error(s);
  }
  std::optional<uint32_t> gpu;
  if (req.contains("gpu")) {
    if (!req["gpu"].is_number_unsigned()) {
      return Error(InvalidArgumentError("gpu: must be an unsigned integer"));
    }
    gpu = req["gpu"].get<uint32_t>();
  }
  std::string label = req.value("label", "manual");
  auto r =
      slots.CreateManual(gpu, wanted.mem_quota, wanted.compute_share, wanted.compute_mode, label);
  if (!r.ok()) {
    return Error(r.status());
  }
  return json{{"ok", true}, {"slot", slots::SlotRecordToJson(*r)}}.dump();
}

ControlServer::ControlServer(std::string socket_path, SlotManager& slots, bool standalone)
    : path_(std::move(socket_path)), slots_(slots), standalone_(standalone) {}

ControlServer::~ControlServer() { Stop(); }

Status ControlServer::Start() {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path_.size() >= sizeof addr.sun_path) {
    return InvalidArgumentError("--control-socket: path longer than " +
                                std::to_string(sizeof addr.sun_path - 1) + " bytes: " + path_);
  }
  std::memcpy(addr.sun_path, path_.c_str(), path_.size() + 1);
  ::unlink(path_.c_str());
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) {
    return ErrnoError("control socket", errno);
  }
  // On an error return `fd` closes after ErrnoError has read errno.
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::chmod(path_.c_str(), 0600) != 0 || ::listen(fd.get(), 16) != 0) {
    return ErrnoError("control socket " + path_, errno);
  }
  listen_fd_ = std::move(fd);
  return thread_.Start([this] { Run(); });
}

void ControlServer::Stop() {
  thread_.Stop();
  listen_fd_.reset();
  ::unlink(path_.c_str());
}

void ControlServer::Run() {
  for (;;) {
    if (!thread_.WaitReadable(listen_fd_.get())) {
      return;
    }
    int fd = ::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) {
      Serve(fd);  // one client at a time: a debugging API, not a data path
      ::close(fd);
    }
  }
}

void ControlServer::Serve(int fd) {
  std::string buf;
  char chunk[4096];
  for (;;) {
    if (!thread_.WaitReadableFor(fd, 5000)) {
      return;  // idle clients are dropped after 5 s so others get served
    }
    ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n <= 0) {
      return;
    }
    buf.append(chunk, static_cast<size_t>(n));
    if (buf.size() > (1 << 20)) {
      return;
    }
    size_t nl;
    while ((nl = buf.find('\n')) != std::string::npos) {
      std::string reply = HandleControlRequest(slots_, standalone_, buf.substr(0, nl)) + "\n";
      buf.erase(0, nl + 1);
      size_t off = 0;
      while (off < reply.size()) {
        ssize_t w = ::send(fd, reply.data() + off, reply.size() - off, MSG_NOSIGNAL);
        if (w <= 0) {
          return;
        }
        off += static_cast<size_t>(w);
      }
    }
  }
}

}  // namespace vgpu::manager
