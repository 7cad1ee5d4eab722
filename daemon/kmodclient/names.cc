// Stable names of the family's enums and counters (vgpuctl's table and JSON keys).
#include "vgpu/kmodclient.h"

namespace vgpu::kmod {

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

std::string_view ManagedPolicyName(uint32_t p) { return SettingValueName("managed_policy", p); }
std::string_view UnknownPolicyName(uint32_t p) { return SettingValueName("unknown_policy", p); }
std::string_view ComputeModeName(uint32_t m) { return SettingValueName("compute_mode", m); }

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

}  // namespace vgpu::kmod
