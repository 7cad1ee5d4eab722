// Stable names of the family's enums and counters (vgpuctl's table and JSON keys).
#include "vgpu/kmodclient.h"

#include "vgpu/enum_names.h"

namespace vgpu::kmod {

namespace {

constexpr EnumName<int> kStatNames[] = {
    {VGPU_STAT_MEM_CHARGED, "mem_charged"},
    {VGPU_STAT_MEM_PEAK, "mem_peak"},
    {VGPU_STAT_MEM_DENIALS, "mem_denials"},
    {VGPU_STAT_IOCTLS, "ioctls"},
    {VGPU_STAT_IOCTL_REFUSED, "ioctl_refused"},
    {VGPU_STAT_UNKNOWN_IOCTLS, "unknown_ioctls"},
    {VGPU_STAT_MANAGED_DENIALS, "managed_denials"},
    {VGPU_STAT_FD_REFUSED, "fd_refused"},
    {VGPU_STAT_OPENS, "opens"},
    {VGPU_STAT_MMAPS, "mmaps"},
    {VGPU_STAT_ATTACHES, "attaches"},
    {VGPU_STAT_VIEWS_REWRITTEN, "views_rewritten"},
    {VGPU_STAT_OVERQUOTA, "overquota"},
    {VGPU_STAT_MALFORMED, "malformed"},
    {VGPU_STAT_OBJECTS, "objects"},
    {VGPU_STAT_CLIENTS, "clients"},
    {VGPU_STAT_TSGS, "tsgs"},
    {VGPU_STAT_GPU_BUSY_NS, "gpu_busy_ns"},
    {VGPU_STAT_THROTTLED_NS, "throttled_ns"},
    {VGPU_STAT_OVERSHOOT_NS, "overshoot_ns"},
    {VGPU_STAT_DEBT_NS, "debt_ns"},
    {VGPU_STAT_SHARE_1S_PM, "share_1s_pm"},
    {VGPU_STAT_SHARE_10S_PM, "share_10s_pm"},
    {VGPU_STAT_GATE_ACTIONS, "gate_actions"},
    {VGPU_STAT_TIMESLICE_US, "timeslice_us"},
    {VGPU_STAT_COMPUTE_ERRORS, "compute_errors"},
    {VGPU_STAT_CONTROL_LATE_NS, "control_late_ns"},
};

constexpr EnumName<uint32_t> kEventNames[] = {
    {VGPU_EVENT_QUOTA_DENIED, "quota_denied"},
    {VGPU_EVENT_ATTACH, "attach"},
    {VGPU_EVENT_EXIT, "exit"},
    {VGPU_EVENT_SLOT_GONE, "slot_gone"},
    {VGPU_EVENT_REFUSED, "refused"},
};

constexpr EnumName<uint32_t> kSlotStateNames[] = {
    {VGPU_SLOT_STATE_ACTIVE, "active"},
    {VGPU_SLOT_STATE_DYING, "dying"},
};

}  // namespace

std::string_view StatName(int stat) { return NameOf(stat, kStatNames, ""); }
std::string_view EventName(uint32_t type) { return NameOf(type, kEventNames, "unknown"); }

std::string_view ManagedPolicyName(uint32_t p) { return SettingValueName("managed_policy", p); }
std::string_view UnknownPolicyName(uint32_t p) { return SettingValueName("unknown_policy", p); }
std::string_view ComputeModeName(uint32_t m) { return SettingValueName("compute_mode", m); }

std::string_view SlotStateName(uint32_t s) { return NameOf(s, kSlotStateNames, "unknown"); }

}  // namespace vgpu::kmod
