// kmodclient: typed requests to vgpu.ko's generic-netlink family (uapi/vgpu_genl.h is the
// manual). Used by vgpuctl and by vgpu-manager. One Client owns one netlink socket (RAII);
// it is not thread-safe: use one per thread.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "uapi/vgpu_genl.h"
#include "vgpu/slot_settings.h"
#include "vgpu/status.h"

struct nl_msg;
struct nl_sock;
struct nlattr;

namespace vgpu::kmod {

// The slot schema's enums (uapi/vgpu_slot_fields.h; daemon/common slot_settings.h).
using vgpu::ComputeMode;
using vgpu::ManagedPolicy;
using vgpu::UnknownPolicy;

// What SLOT_NEW/SLOT_SET may change: the name and one optional member per slot setting
// (uapi/vgpu_slot_fields.h). Unset fields are not sent (SET leaves them alone, NEW takes the
// schema's defaults).
struct SlotConfig {
  std::optional<std::string> name;
#define VGPU_SETTING_MEMBER(field, wire, unit, def, min, max, attr, env) \
  std::optional<slot_schema::wire> field;
  VGPU_SLOT_NUMBERS(VGPU_SETTING_MEMBER)
#undef VGPU_SETTING_MEMBER
#define VGPU_SETTING_MEMBER(field, type, values, def, max, attr, env) std::optional<type> field;
  VGPU_SLOT_ENUMS(VGPU_SETTING_MEMBER)
#undef VGPU_SETTING_MEMBER
};

struct SlotSpec {
  uint32_t gpu = 0;
  uint32_t flags = 0;  // enum vgpu_slot_flag
  SlotConfig config;
};

using StatArray = std::array<uint64_t, __VGPU_STAT_MAX>;

// A slot as the module reports it. The settings are the wire values (an enum setting is its
// uapi number: 0 from a module that predates it).
struct SlotInfo {
  uint32_t id = 0;
  uint32_t gpu = 0;
  std::string name;
#define VGPU_SETTING_MEMBER(field, wire, unit, def, min, max, attr, env) \
  slot_schema::wire field = 0;
  VGPU_SLOT_NUMBERS(VGPU_SETTING_MEMBER)
#undef VGPU_SETTING_MEMBER
#define VGPU_SETTING_MEMBER(field, type, values, def, max, attr, env) uint32_t field = 0;
  VGPU_SLOT_ENUMS(VGPU_SETTING_MEMBER)
#undef VGPU_SETTING_MEMBER
  uint32_t flags = 0;
  uint32_t state = 0;
  uint32_t open_files = 0;
  std::string node_ctl, node_dev, node_uvm;
  std::vector<uint32_t> pids;
  StatArray stats{};
  uint32_t generation = 0;
};

// The slot's settings as the schema's struct (an enum value 0 stays 0: its name is "unset").
SlotSettings SettingsOf(const SlotInfo& info);

struct DriverInfo {
  bool bound = false;
  std::string ctl_path;
  std::string dev_fmt;
  uint32_t slots = 0;
  uint32_t generation = 0;
};

struct Event {
  uint32_t type = 0;  // enum vgpu_event
  uint32_t slot = 0;
  uint32_t pid = 0;
  std::string comm;
  uint64_t size = 0;
  uint64_t charged = 0;
  uint64_t quota = 0;
  std::string detail;
};

// Names for enums and counters (stable; used by vgpuctl's table and JSON keys).
std::string_view StatName(int stat);        // "mem_charged", ...; "" for unused numbers
std::string_view EventName(uint32_t type);  // "quota_denied", ...
// Value names of the enum settings (uapi/vgpu_slot_fields.h), "unset" for 0 or an unlisted value.
std::string_view ManagedPolicyName(uint32_t p);  // "refuse", "allow-uncounted"
std::string_view UnknownPolicyName(uint32_t p);  // "refuse", "allow-log"
std::string_view ComputeModeName(uint32_t m);    // "cap", "weight"
std::string_view SlotStateName(uint32_t s);      // "active", "dying"

// Message encoding and decoding, separate from the socket so they are testable alone.
// Appends the config attributes to @msg; false if the message is full.
bool PutSlotConfig(nl_msg* msg, const SlotConfig& cfg);
// Parses the attributes of a slot message (attrs indexed by enum vgpu_attr).
Result<SlotInfo> ParseSlot(nlattr* const* attrs);
Result<DriverInfo> ParseDriver(nlattr* const* attrs);
Result<Event> ParseEvent(nlattr* const* attrs);
// Parses a whole generic-netlink message of the family (header + attributes).
Result<SlotInfo> ParseSlotMessage(nl_msg* msg);
// Maps a negative errno from the kernel (plus its extended-ack text) to a Status.
Status KernelError(std::string_view what, int neg_errno, std::string_view extack);

class Client {
 public:
  // Connects and resolves the family; NotFound when vgpu.ko is not loaded.
  static Result<std::unique_ptr<Client>> Open();
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  Result<SlotInfo> CreateSlot(const SlotSpec& spec);
  Result<SlotInfo> UpdateSlot(uint32_t id, const SlotConfig& cfg);
  Status DestroySlot(uint32_t id, uint32_t del_flags);
  Result<SlotInfo> GetSlot(uint32_t id);
  // A consistent list: a dump interrupted by a change (NLM_F_DUMP_INTR) is retried.
  Result<std::vector<SlotInfo>> ListSlots();
  Result<DriverInfo> GetDriver();
  Status Bind();

  // Joins the event group; then NextEvent waits up to @timeout_ms (-1: forever).
  Status SubscribeEvents();
  Result<std::optional<Event>> NextEvent(int timeout_ms);

 private:
  struct SockDeleter {
    void operator()(nl_sock* s) const;
  };
  Client(std::unique_ptr<nl_sock, SockDeleter> sock, int family, int events_group);
  // Sends @msg (owned) and collects the replies; returns the kernel's errno as a Status.
  Status Transact(nl_msg* msg, std::string_view what, std::vector<SlotInfo>* slots,
                  DriverInfo* driver, bool* interrupted);
  // Transact for a request whose reply is exactly one slot (create, set, get).
  Result<SlotInfo> TransactSlot(nl_msg* msg, const std::string& what);

  std::unique_ptr<nl_sock, SockDeleter> sock_;
  std::unique_ptr<nl_sock, SockDeleter> events_;
  int family_;
  int events_group_;
  std::deque<Event> pending_;  // events received but not yet returned
};

}  // namespace vgpu::kmod
