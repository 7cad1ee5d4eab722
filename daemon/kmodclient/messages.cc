// Message encoding and decoding of the family, apart from the socket (testable alone). The slot
// settings' attributes come from the schema (uapi/vgpu_slot_fields.h), one row each.
#include <netlink/genl/genl.h>
#include <netlink/msg.h>

#include <cerrno>
#include <cstring>
#include <type_traits>

#include "kmodclient_internal.h"
#include "vgpu/kmodclient.h"

namespace vgpu::kmod {
namespace {

// Each setting's netlink attribute, by the setting's name.
struct SettingAttr {
#define VGPU_SETTING_ATTR(field, wire, unit, def, min, max, attr, env) \
  static constexpr int field = attr;
  VGPU_SLOT_NUMBERS(VGPU_SETTING_ATTR)
#undef VGPU_SETTING_ATTR
#define VGPU_SETTING_ATTR(field, type, values, def, max, attr, env) \
  static constexpr int field = attr;
  VGPU_SLOT_ENUMS(VGPU_SETTING_ATTR)
#undef VGPU_SETTING_ATTR
};

uint32_t U32(nlattr* const* a, int i) { return a[i] ? nla_get_u32(a[i]) : 0; }
uint64_t U64(nlattr* const* a, int i) { return a[i] ? nla_get_u64(a[i]) : 0; }
std::string Str(nlattr* const* a, int i) { return a[i] ? std::string(nla_get_string(a[i])) : ""; }

}  // namespace

namespace internal {

nla_policy* ReplyPolicy() {
  static nla_policy p[VGPU_A_MAX + 1];
  static const bool filled = [] {
#define VGPU_SETTING_POLICY(field, wire, unit, def, min, max, attr, env) \
  p[attr].type = sizeof(slot_schema::wire) == 8 ? NLA_U64 : NLA_U32;
    VGPU_SLOT_NUMBERS(VGPU_SETTING_POLICY)
#undef VGPU_SETTING_POLICY
#define VGPU_SETTING_POLICY(field, cxx_type, values, def, max, attr, env) p[attr].type = NLA_U32;
    VGPU_SLOT_ENUMS(VGPU_SETTING_POLICY)
#undef VGPU_SETTING_POLICY
    for (int a : {VGPU_A_SLOT_ID, VGPU_A_SLOT_GPU, VGPU_A_SLOT_FLAGS, VGPU_A_SLOT_STATE,
                  VGPU_A_SLOT_OPEN_FILES, VGPU_A_DEL_FLAGS, VGPU_A_GENERATION, VGPU_A_DRIVER_SLOTS,
                  VGPU_A_EVENT_TYPE, VGPU_A_EVENT_PID}) {
      p[a].type = NLA_U32;
    }
    for (int a : {VGPU_A_EVENT_SIZE, VGPU_A_EVENT_CHARGED}) {
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

}  // namespace internal

namespace {

bool PutSetting(nl_msg* msg, int attr, uint32_t v) { return nla_put_u32(msg, attr, v) >= 0; }
bool PutSetting(nl_msg* msg, int attr, uint64_t v) { return nla_put_u64(msg, attr, v) >= 0; }
template <typename E>
requires std::is_enum_v<E>
bool PutSetting(nl_msg* msg, int attr, E v) {
  // 0 (_UNSPEC) is never on the wire: an absent attribute is the schema's default.
  return static_cast<uint32_t>(v) == 0 || PutSetting(msg, attr, static_cast<uint32_t>(v));
}

uint32_t GetSetting(nlattr* const* a, int i, uint32_t) { return U32(a, i); }
uint64_t GetSetting(nlattr* const* a, int i, uint64_t) { return U64(a, i); }

}  // namespace

bool PutSlotConfig(nl_msg* msg, const SlotConfig& cfg) {
  if (cfg.name && nla_put_string(msg, VGPU_A_SLOT_NAME, cfg.name->c_str()) < 0) return false;
#define VGPU_PUT_SETTING(field, ...) \
  if (cfg.field && !PutSetting(msg, SettingAttr::field, *cfg.field)) return false;
  VGPU_SLOT_NUMBERS(VGPU_PUT_SETTING)
  VGPU_SLOT_ENUMS(VGPU_PUT_SETTING)
#undef VGPU_PUT_SETTING
  return true;
}

Result<SlotInfo> ParseSlot(nlattr* const* a) {
  if (!a[VGPU_A_SLOT_ID]) return DataLossError("slot message without VGPU_A_SLOT_ID");
  SlotInfo s;
  s.id = U32(a, VGPU_A_SLOT_ID);
  s.gpu = U32(a, VGPU_A_SLOT_GPU);
  s.name = Str(a, VGPU_A_SLOT_NAME);
#define VGPU_GET_SETTING(field, ...) s.field = GetSetting(a, SettingAttr::field, s.field);
  VGPU_SLOT_NUMBERS(VGPU_GET_SETTING)
  VGPU_SLOT_ENUMS(VGPU_GET_SETTING)
#undef VGPU_GET_SETTING
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

SlotSettings SettingsOf(const SlotInfo& info) {
  SlotSettings s;
#define VGPU_COPY_SETTING(field, ...) s.field = static_cast<decltype(s.field)>(info.field);
  VGPU_SLOT_NUMBERS(VGPU_COPY_SETTING)
  VGPU_SLOT_ENUMS(VGPU_COPY_SETTING)
#undef VGPU_COPY_SETTING
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
  if (int err = genlmsg_parse(nlmsg_hdr(msg), 0, attrs, VGPU_A_MAX, internal::ReplyPolicy());
      err < 0) {
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

}  // namespace vgpu::kmod
