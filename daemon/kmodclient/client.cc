// kmodclient's socket: libnl-genl requests for vgpu.ko (see include/vgpu/kmodclient.h).
#include <linux/netlink.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "kmodclient_internal.h"
#include "vgpu/kmodclient.h"

namespace vgpu::kmod {
namespace {

Status FromNl(std::string_view what, int nlerr) {
  return InternalError(std::string(what) + ": " + nl_geterror(nlerr));
}

// Per-request state shared with libnl's callbacks.
struct Exchange {
  std::vector<SlotInfo>* slots = nullptr;
  DriverInfo* driver = nullptr;
  std::deque<Event>* events = nullptr;
  bool done = false;
  bool interrupted = false;
  int error = 0;
  std::string extack;
  Status parse = OkStatus();
};

int OnValid(nl_msg* msg, void* arg) {
  auto* ex = static_cast<Exchange*>(arg);
  nlmsghdr* nlh = nlmsg_hdr(msg);
  if (nlh->nlmsg_flags & NLM_F_DUMP_INTR) ex->interrupted = true;
  nlattr* attrs[VGPU_A_MAX + 1] = {};
  if (int err = genlmsg_parse(nlh, 0, attrs, VGPU_A_MAX, internal::ReplyPolicy()); err < 0) {
    ex->parse = DataLossError(std::string("malformed reply from vgpu.ko: ") + nl_geterror(err));
    return NL_SKIP;
  }
  auto* gh = static_cast<genlmsghdr*>(nlmsg_data(nlh));
  if (gh->cmd == VGPU_CMD_EVENT && ex->events) {
    auto ev = ParseEvent(attrs);
    if (ev.ok()) ex->events->push_back(std::move(ev.value()));
  } else if (gh->cmd == VGPU_CMD_DRIVER_GET && ex->driver) {
    auto d = ParseDriver(attrs);
    if (d.ok())
      *ex->driver = std::move(d.value());
    else
      ex->parse = d.status();
  } else if (ex->slots) {
    auto s = ParseSlot(attrs);
    if (s.ok())
      ex->slots->push_back(std::move(s.value()));
    else
      ex->parse = s.status();
  }
  return NL_OK;
}

int OnFinish(nl_msg* msg, void* arg) {
  auto* ex = static_cast<Exchange*>(arg);
  if (nlmsg_hdr(msg)->nlmsg_flags & NLM_F_DUMP_INTR) ex->interrupted = true;
  ex->done = true;
  return NL_STOP;
}

// Multicast events carry no request sequence number.
int NoSeqCheck(nl_msg*, void*) { return NL_OK; }

int OnAck(nl_msg*, void* arg) {
  static_cast<Exchange*>(arg)->done = true;
  return NL_STOP;
}

// The extended ack's text (NLMSGERR_ATTR_MSG), when the kernel attached one.
std::string ExtackMessage(const nlmsgerr* e) {
  const auto* nlh =
      reinterpret_cast<const nlmsghdr*>(reinterpret_cast<const char*>(e) - NLMSG_HDRLEN);
  if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS)) return "";
  size_t off = sizeof(*e);
  if (!(nlh->nlmsg_flags & NLM_F_CAPPED)) off += e->msg.nlmsg_len - NLMSG_HDRLEN;
  const char* begin = reinterpret_cast<const char*>(e) + off;
  const char* end = reinterpret_cast<const char*>(nlh) + nlh->nlmsg_len;
  if (begin >= end) return "";
  nlattr* tb[NLMSGERR_ATTR_MAX + 1] = {};
  if (nla_parse(tb, NLMSGERR_ATTR_MAX, reinterpret_cast<nlattr*>(const_cast<char*>(begin)),
                static_cast<int>(end - begin), nullptr) < 0 ||
      !tb[NLMSGERR_ATTR_MSG]) {
    return "";
  }
  return std::string(nla_get_string(tb[NLMSGERR_ATTR_MSG]));
}

int OnError(sockaddr_nl*, nlmsgerr* e, void* arg) {
  auto* ex = static_cast<Exchange*>(arg);
  ex->error = e->error;
  ex->extack = ExtackMessage(e);
  ex->done = true;
  return NL_STOP;
}

}  // namespace

void Client::SockDeleter::operator()(nl_sock* s) const { nl_socket_free(s); }

Client::Client(std::unique_ptr<nl_sock, SockDeleter> sock, int family, int events_group)
    : sock_(std::move(sock)), family_(family), events_group_(events_group) {}

Client::~Client() = default;

Result<std::unique_ptr<Client>> Client::Open() {
  std::unique_ptr<nl_sock, SockDeleter> sock(nl_socket_alloc());
  if (!sock) return InternalError("nl_socket_alloc failed");
  if (int err = genl_connect(sock.get()); err < 0) return FromNl("generic netlink connect", err);
  int one = 1;
  // Extended acks carry the module's one-line reason for a refusal.
  setsockopt(nl_socket_get_fd(sock.get()), SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
  int family = genl_ctrl_resolve(sock.get(), VGPU_GENL_NAME);
  if (family < 0) {
    return NotFoundError("generic netlink family '" VGPU_GENL_NAME
                         "' not found: is vgpu.ko loaded?");
  }
  int group = genl_ctrl_resolve_grp(sock.get(), VGPU_GENL_NAME, VGPU_GENL_MCGRP_EVENTS);
  return std::unique_ptr<Client>(new Client(std::move(sock), family, group < 0 ? -1 : group));
}

Status Client::Transact(nl_msg* msg, std::string_view what, std::vector<SlotInfo>* slots,
                        DriverInfo* driver, bool* interrupted) {
  Exchange ex;
  ex.slots = slots;
  ex.driver = driver;
  std::unique_ptr<nl_cb, void (*)(nl_cb*)> cb(nl_cb_alloc(NL_CB_DEFAULT), nl_cb_put);
  if (!cb) {
    nlmsg_free(msg);
    return InternalError("nl_cb_alloc failed");
  }
  nl_cb_set(cb.get(), NL_CB_VALID, NL_CB_CUSTOM, OnValid, &ex);
  nl_cb_set(cb.get(), NL_CB_FINISH, NL_CB_CUSTOM, OnFinish, &ex);
  nl_cb_set(cb.get(), NL_CB_ACK, NL_CB_CUSTOM, OnAck, &ex);
  nl_cb_err(cb.get(), NL_CB_CUSTOM, OnError, &ex);
  int err = nl_send_auto(sock_.get(), msg);
  nlmsg_free(msg);
  if (err < 0) return FromNl(std::string(what) + ": send", err);
  while (!ex.done) {
    err = nl_recvmsgs(sock_.get(), cb.get());
    if (err < 0 && !ex.done) return FromNl(std::string(what) + ": receive", err);
  }
  if (interrupted) *interrupted = ex.interrupted;
  if (ex.error < 0) return KernelError(what, ex.error, ex.extack);
  return ex.parse;
}

Result<SlotInfo> Client::TransactSlot(nl_msg* msg, const std::string& what) {
  std::vector<SlotInfo> out;
  VGPU_RETURN_IF_ERROR(Transact(msg, what, &out, nullptr, nullptr));
  if (out.size() != 1) return DataLossError(what + ": no slot in the reply");
  return std::move(out[0]);
}

namespace {
nl_msg* NewRequest(int family, uint8_t cmd, int flags) {
  nl_msg* msg = nlmsg_alloc();
  if (msg &&
      !genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, family, 0, flags, cmd, VGPU_GENL_VERSION)) {
    nlmsg_free(msg);
    return nullptr;
  }
  return msg;
}
}  // namespace

Result<SlotInfo> Client::CreateSlot(const SlotSpec& spec) {
  nl_msg* msg = NewRequest(family_, VGPU_CMD_SLOT_NEW, 0);
  if (!msg) return InternalError("out of memory");
  if (nla_put_u32(msg, VGPU_A_SLOT_GPU, spec.gpu) < 0 ||
      (spec.flags && nla_put_u32(msg, VGPU_A_SLOT_FLAGS, spec.flags) < 0) ||
      !PutSlotConfig(msg, spec.config)) {
    nlmsg_free(msg);
    return InternalError("create slot: message too large");
  }
  return TransactSlot(msg, "create slot");
}

Result<SlotInfo> Client::UpdateSlot(uint32_t id, const SlotConfig& cfg) {
  nl_msg* msg = NewRequest(family_, VGPU_CMD_SLOT_SET, 0);
  if (!msg) return InternalError("out of memory");
  if (nla_put_u32(msg, VGPU_A_SLOT_ID, id) < 0 || !PutSlotConfig(msg, cfg)) {
    nlmsg_free(msg);
    return InternalError("set slot: message too large");
  }
  return TransactSlot(msg, "set slot " + std::to_string(id));
}

Status Client::DestroySlot(uint32_t id, uint32_t del_flags) {
  nl_msg* msg = NewRequest(family_, VGPU_CMD_SLOT_DEL, 0);
  if (!msg) return InternalError("out of memory");
  if (nla_put_u32(msg, VGPU_A_SLOT_ID, id) < 0 ||
      (del_flags && nla_put_u32(msg, VGPU_A_DEL_FLAGS, del_flags) < 0)) {
    nlmsg_free(msg);
    return InternalError("destroy slot: message too large");
  }
  return Transact(msg, "destroy slot " + std::to_string(id), nullptr, nullptr, nullptr);
}

Result<SlotInfo> Client::GetSlot(uint32_t id) {
  nl_msg* msg = NewRequest(family_, VGPU_CMD_SLOT_GET, 0);
  if (!msg) return InternalError("out of memory");
  if (nla_put_u32(msg, VGPU_A_SLOT_ID, id) < 0) {
    nlmsg_free(msg);
    return InternalError("get slot: message too large");
  }
  return TransactSlot(msg, "get slot " + std::to_string(id));
}

Result<std::vector<SlotInfo>> Client::ListSlots() {
  for (int attempt = 0; attempt < 8; ++attempt) {
    nl_msg* msg = NewRequest(family_, VGPU_CMD_SLOT_GET, NLM_F_DUMP);
    if (!msg) return InternalError("out of memory");
    std::vector<SlotInfo> out;
    bool interrupted = false;
    VGPU_RETURN_IF_ERROR(Transact(msg, "list slots", &out, nullptr, &interrupted));
    if (!interrupted) return out;
  }
  return Status(StatusCode::kAborted, "list slots: slots kept changing during the dump (8 tries)");
}

Result<DriverInfo> Client::GetDriver() {
  nl_msg* msg = NewRequest(family_, VGPU_CMD_DRIVER_GET, 0);
  if (!msg) return InternalError("out of memory");
  DriverInfo d;
  VGPU_RETURN_IF_ERROR(Transact(msg, "driver status", nullptr, &d, nullptr));
  return d;
}

Status Client::Bind() {
  nl_msg* msg = NewRequest(family_, VGPU_CMD_DRIVER_BIND, 0);
  if (!msg) return InternalError("out of memory");
  return Transact(msg, "bind driver", nullptr, nullptr, nullptr);
}

Status Client::SubscribeEvents() {
  if (events_group_ < 0) return NotFoundError("vgpu.ko has no event group");
  std::unique_ptr<nl_sock, SockDeleter> ev(nl_socket_alloc());
  if (!ev) return InternalError("nl_socket_alloc failed");
  nl_socket_disable_seq_check(ev.get());
  if (int err = genl_connect(ev.get()); err < 0) return FromNl("events connect", err);
  if (int err = nl_socket_add_membership(ev.get(), events_group_); err < 0) {
    return FromNl("join event group", err);
  }
  events_ = std::move(ev);
  return OkStatus();
}

Result<std::optional<Event>> Client::NextEvent(int timeout_ms) {
  if (!events_) return FailedPreconditionError("SubscribeEvents first");
  if (pending_.empty()) {
    pollfd pfd{nl_socket_get_fd(events_.get()), POLLIN, 0};
    int r = poll(&pfd, 1, timeout_ms);
    if (r < 0) return ErrnoError("poll events", errno);
    if (r == 0) return std::optional<Event>();
    Exchange ex;
    ex.events = &pending_;
    std::unique_ptr<nl_cb, void (*)(nl_cb*)> cb(nl_cb_alloc(NL_CB_DEFAULT), nl_cb_put);
    if (!cb) return InternalError("nl_cb_alloc failed");
    nl_cb_set(cb.get(), NL_CB_VALID, NL_CB_CUSTOM, OnValid, &ex);
    nl_cb_set(cb.get(), NL_CB_SEQ_CHECK, NL_CB_CUSTOM, NoSeqCheck, nullptr);
    if (int err = nl_recvmsgs(events_.get(), cb.get()); err < 0)
      return FromNl("receive event", err);
  }
  if (pending_.empty()) return std::optional<Event>();
  Event e = std::move(pending_.front());
  pending_.pop_front();
  return std::optional<Event>(std::move(e));
}

}  // namespace vgpu::kmod
