// kmodclient: libnl-genl requests for vgpu.ko (see include/vgpu/kmodclient.h).
#include "vgpu/kmodclient.h"

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

namespace vgpu::kmod {
namespace {

// Client-side check of what the kernel sends (types and lengths), so a parser never reads
// past an attribute even against a newer module.
nla_policy* SlotPolicy() {
  static nla_policy p[VGPU_A_MAX + 1];
  static const bool filled = [] {
    for (int a : {VGPU_A_SLOT_ID, VGPU_A_SLOT_GPU, VGPU_A_SLOT_COMPUTE_SHARE,
                  VGPU_A_SLOT_COMPUTE_MODE, VGPU_A_SLOT_MANAGED_POLICY, VGPU_A_SLOT_UNKNOWN_POLICY,
                  VGPU_A_SLOT_FLAGS, VGPU_A_SLOT_STATE, VGPU_A_SLOT_OPEN_FILES, VGPU_A_DEL_FLAGS,
                  VGPU_A_GENERATION, VGPU_A_DRIVER_SLOTS, VGPU_A_EVENT_TYPE, VGPU_A_EVENT_PID}) {
      p[a].type = NLA_U32;
    }
    for (int a : {VGPU_A_SLOT_MEM_QUOTA, VGPU_A_EVENT_SIZE, VGPU_A_EVENT_CHARGED}) {
      p[a].type = NLA_U64;
    }
    for (int a :
         {VGPU_A_SLOT_NAME, VGPU_A_SLOT_NODE_CTL, VGPU_A_SLOT_NODE_DEV, VGPU_A_SLOT_NODE_UVM,
          VGPU_A_DRIVER_CTL_PATH, VGPU_A_DRIVER_DEV_FMT, VGPU_A_EVENT_COMM, VGPU_A_EVENT_DETAIL}) {
      p[a].type = NLA_STRING;
    }
    p[VGPU_A_DRIVER_BOUND].type = NLA_U8;
    p[VGPU_A_SLOT_PROCS].type = NLA_NESTED;
    p[VGPU_A_SLOT_STATS].type = NLA_NESTED;
    return true;
  }();
  (void)filled;
  return p;
}

uint32_t U32(nlattr* const* a, int i) { return a[i] ? nla_get_u32(a[i]) : 0; }
uint64_t U64(nlattr* const* a, int i) { return a[i] ? nla_get_u64(a[i]) : 0; }
std::string Str(nlattr* const* a, int i) { return a[i] ? std::string(nla_get_string(a[i])) : ""; }

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
  if (int err = genlmsg_parse(nlh, 0, attrs, VGPU_A_MAX, SlotPolicy()); err < 0) {
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

std::string_view StatName(int stat) {
  switch (stat) {
    case VGPU_STAT_MEM_CHARGED:
      return "mem_charged";
    case VGPU_STAT_MEM_PEAK:
      return "mem_peak";
    case VGPU_STAT_MEM_DENIALS:
      return "mem_denials";
    case VGPU_STAT_IOCTLS:
      return "ioctls";
    case VGPU_STAT_IOCTL_REFUSED:
      return "ioctl_refused";
    case VGPU_STAT_UNKNOWN_IOCTLS:
      return "unknown_ioctls";
    case VGPU_STAT_MANAGED_DENIALS:
      return "managed_denials";
    case VGPU_STAT_FD_REFUSED:
      return "fd_refused";
    case VGPU_STAT_OPENS:
      return "opens";
    case VGPU_STAT_MMAPS:
      return "mmaps";
    case VGPU_STAT_ATTACHES:
      return "attaches";
    case VGPU_STAT_VIEWS_REWRITTEN:
      return "views_rewritten";
    case VGPU_STAT_OVERQUOTA:
      return "overquota";
    case VGPU_STAT_MALFORMED:
      return "malformed";
    case VGPU_STAT_OBJECTS:
      return "objects";
    case VGPU_STAT_CLIENTS:
      return "clients";
    case VGPU_STAT_TSGS:
      return "tsgs";
    case VGPU_STAT_GPU_BUSY_NS:
      return "gpu_busy_ns";
    case VGPU_STAT_THROTTLED_NS:
      return "throttled_ns";
    case VGPU_STAT_OVERSHOOT_NS:
      return "overshoot_ns";
    case VGPU_STAT_DEBT_NS:
      return "debt_ns";
    case VGPU_STAT_SHARE_1S_PM:
      return "share_1s_pm";
    case VGPU_STAT_SHARE_10S_PM:
      return "share_10s_pm";
    case VGPU_STAT_GATE_ACTIONS:
      return "gate_actions";
    case VGPU_STAT_TIMESLICE_US:
      return "timeslice_us";
    case VGPU_STAT_COMPUTE_ERRORS:
      return "compute_errors";
    case VGPU_STAT_CONTROL_LATE_NS:
      return "control_late_ns";
    default:
      return "";
  }
}

std::string_view EventName(uint32_t type) {
  switch (type) {
    case VGPU_EVENT_QUOTA_DENIED:
      return "quota_denied";
    case VGPU_EVENT_ATTACH:
      return "attach";
    case VGPU_EVENT_EXIT:
      return "exit";
    case VGPU_EVENT_SLOT_GONE:
      return "slot_gone";
    case VGPU_EVENT_REFUSED:
      return "refused";
    default:
      return "unknown";
  }
}

std::string_view ManagedPolicyName(uint32_t p) {
  switch (p) {
    case VGPU_MANAGED_REFUSE:
      return "refuse";
    case VGPU_MANAGED_ALLOW_UNCOUNTED:
      return "allow-uncounted";
    default:
      return "unset";
  }
}

std::string_view UnknownPolicyName(uint32_t p) {
  switch (p) {
    case VGPU_UNKNOWN_REFUSE:
      return "refuse";
    case VGPU_UNKNOWN_ALLOW_LOG:
      return "allow-log";
    default:
      return "unset";
  }
}

std::string_view ComputeModeName(uint32_t m) {
  switch (m) {
    case VGPU_COMPUTE_CAP:
      return "cap";
    case VGPU_COMPUTE_WEIGHT:
      return "weight";
    default:
      return "unset";
  }
}

std::string_view SlotStateName(uint32_t s) {
  switch (s) {
    case VGPU_SLOT_STATE_ACTIVE:
      return "active";
    case VGPU_SLOT_STATE_DYING:
      return "dying";
    default:
      return "unknown";
  }
}

bool PutSlotConfig(nl_msg* msg, const SlotConfig& cfg) {
  if (cfg.name && nla_put_string(msg, VGPU_A_SLOT_NAME, cfg.name->c_str()) < 0) return false;
  if (cfg.mem_quota && nla_put_u64(msg, VGPU_A_SLOT_MEM_QUOTA, *cfg.mem_quota) < 0) return false;
  if (cfg.compute_share && nla_put_u32(msg, VGPU_A_SLOT_COMPUTE_SHARE, *cfg.compute_share) < 0) {
    return false;
  }
  if (cfg.compute_mode &&
      nla_put_u32(msg, VGPU_A_SLOT_COMPUTE_MODE, static_cast<uint32_t>(*cfg.compute_mode)) < 0) {
    return false;
  }
  if (cfg.managed &&
      nla_put_u32(msg, VGPU_A_SLOT_MANAGED_POLICY, static_cast<uint32_t>(*cfg.managed)) < 0) {
    return false;
  }
  if (cfg.unknown &&
      nla_put_u32(msg, VGPU_A_SLOT_UNKNOWN_POLICY, static_cast<uint32_t>(*cfg.unknown)) < 0) {
    return false;
  }
  return true;
}

Result<SlotInfo> ParseSlot(nlattr* const* a) {
  if (!a[VGPU_A_SLOT_ID]) return DataLossError("slot message without VGPU_A_SLOT_ID");
  SlotInfo s;
  s.id = U32(a, VGPU_A_SLOT_ID);
  s.gpu = U32(a, VGPU_A_SLOT_GPU);
  s.name = Str(a, VGPU_A_SLOT_NAME);
  s.mem_quota = U64(a, VGPU_A_SLOT_MEM_QUOTA);
  s.compute_share = U32(a, VGPU_A_SLOT_COMPUTE_SHARE);
  s.compute_mode = U32(a, VGPU_A_SLOT_COMPUTE_MODE);
  s.managed_policy = U32(a, VGPU_A_SLOT_MANAGED_POLICY);
  s.unknown_policy = U32(a, VGPU_A_SLOT_UNKNOWN_POLICY);
  s.flags = U32(a, VGPU_A_SLOT_FLAGS);
  s.state = U32(a, VGPU_A_SLOT_STATE);
  s.open_files = U32(a, VGPU_A_SLOT_OPEN_FILES);
  s.node_ctl = Str(a, VGPU_A_SLOT_NODE_CTL);
  s.node_dev = Str(a, VGPU_A_SLOT_NODE_DEV);
  s.node_uvm = Str(a, VGPU_A_SLOT_NODE_UVM);
  s.generation = U32(a, VGPU_A_GENERATION);
  if (a[VGPU_A_SLOT_PROCS]) {
    nlattr* p;
    int rem;
    nla_for_each_nested(p, a[VGPU_A_SLOT_PROCS], rem) {
      if (nla_type(p) == VGPU_A_PROC_PID && nla_len(p) == 4) s.pids.push_back(nla_get_u32(p));
    }
  }
  if (a[VGPU_A_SLOT_STATS]) {
    nlattr* st;
    int rem;
    nla_for_each_nested(st, a[VGPU_A_SLOT_STATS], rem) {
      int t = nla_type(st);
      // Unknown (newer) counters are skipped; a known one must be a u64.
      if (t <= 0 || t >= __VGPU_STAT_MAX) continue;
      if (nla_len(st) != 8) return DataLossError("stat " + std::to_string(t) + " is not a u64");
      s.stats[t] = nla_get_u64(st);
    }
  }
  return s;
}

Result<DriverInfo> ParseDriver(nlattr* const* a) {
  if (!a[VGPU_A_DRIVER_BOUND]) return DataLossError("driver message without VGPU_A_DRIVER_BOUND");
  DriverInfo d;
  d.bound = nla_get_u8(a[VGPU_A_DRIVER_BOUND]) != 0;
  d.ctl_path = Str(a, VGPU_A_DRIVER_CTL_PATH);
  d.dev_fmt = Str(a, VGPU_A_DRIVER_DEV_FMT);
  d.slots = U32(a, VGPU_A_DRIVER_SLOTS);
  d.generation = U32(a, VGPU_A_GENERATION);
  return d;
}

Result<Event> ParseEvent(nlattr* const* a) {
  if (!a[VGPU_A_EVENT_TYPE]) return DataLossError("event without VGPU_A_EVENT_TYPE");
  Event e;
  e.type = U32(a, VGPU_A_EVENT_TYPE);
  e.slot = U32(a, VGPU_A_SLOT_ID);
  e.pid = U32(a, VGPU_A_EVENT_PID);
  e.comm = Str(a, VGPU_A_EVENT_COMM);
  e.size = U64(a, VGPU_A_EVENT_SIZE);
  e.charged = U64(a, VGPU_A_EVENT_CHARGED);
  e.quota = U64(a, VGPU_A_SLOT_MEM_QUOTA);
  e.detail = Str(a, VGPU_A_EVENT_DETAIL);
  return e;
}

Result<SlotInfo> ParseSlotMessage(nl_msg* msg) {
  nlattr* attrs[VGPU_A_MAX + 1] = {};
  if (int err = genlmsg_parse(nlmsg_hdr(msg), 0, attrs, VGPU_A_MAX, SlotPolicy()); err < 0) {
    return DataLossError(std::string("malformed slot message: ") + nl_geterror(err));
  }
  return ParseSlot(attrs);
}

Status KernelError(std::string_view what, int neg_errno, std::string_view extack) {
  std::string msg(what);
  msg += ": ";
  msg += extack.empty() ? std::string(strerror(-neg_errno)) : std::string(extack);
  switch (-neg_errno) {
    case EPERM:
    case EACCES:
      return PermissionDeniedError(msg + " (needs CAP_SYS_ADMIN)");
    case ENOENT:
      return NotFoundError(msg);
    case EBUSY:
      return FailedPreconditionError(msg);
    case ENOSPC:
      return ResourceExhaustedError(msg);
    case ENODEV:
      return UnavailableError(msg);
    case EOPNOTSUPP:
      return UnimplementedError(msg);
    case EINVAL:
    case ERANGE:
      return InvalidArgumentError(msg);
    default:
      return ErrnoError(what, -neg_errno);
  }
}

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
  std::vector<SlotInfo> out;
  VGPU_RETURN_IF_ERROR(Transact(msg, "create slot", &out, nullptr, nullptr));
  if (out.size() != 1) return DataLossError("create slot: no slot in the reply");
  return std::move(out[0]);
}

Result<SlotInfo> Client::UpdateSlot(uint32_t id, const SlotConfig& cfg) {
  nl_msg* msg = NewRequest(family_, VGPU_CMD_SLOT_SET, 0);
  if (!msg) return InternalError("out of memory");
  if (nla_put_u32(msg, VGPU_A_SLOT_ID, id) < 0 || !PutSlotConfig(msg, cfg)) {
    nlmsg_free(msg);
    return InternalError("set slot: message too large");
  }
  std::vector<SlotInfo> out;
  VGPU_RETURN_IF_ERROR(Transact(msg, "set slot " + std::to_string(id), &out, nullptr, nullptr));
  if (out.size() != 1) return DataLossError("set slot: no slot in the reply");
  return std::move(out[0]);
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
  std::vector<SlotInfo> out;
  VGPU_RETURN_IF_ERROR(Transact(msg, "get slot " + std::to_string(id), &out, nullptr, nullptr));
  if (out.size() != 1) return DataLossError("get slot: no slot in the reply");
  return std::move(out[0]);
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
