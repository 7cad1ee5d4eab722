// libvgpu-shim.so's compute share: wires ComputeHost to the shim's hooks (vshim_hooks.h).
//
// Configuration. The slot's settings (uapi/vgpu_slot_fields.h: compute_share, compute_mode,
// compute_ref_clock_mhz) are read by their schema names from what shim/preload/config.cc parsed
// (the slot config, or without one the rows' environment variables); VGPU_SETTING_KEY makes a
// name that is not a schema row fail to compile, so they cannot be spelled a second way here.
//   compute_ref_clock_mhz: the GPU's saturated SM clock, written by the manager from what it
//     measured on that GPU (daemon/reference_clock); 0: the start-up probe learns it
//     (ref_clock_probe.h)
// The host's own tuning (slot config file keys, overridden by the environment without a config):
//   compute_foreign_share  / VGPU_COMPUTE_FOREIGN_SHARE  weight: the other weight slots' total
//                                                        share on the GPU (default: unknown, no
//                                                        feedback, the calibrated map alone)
//   compute_settle_ms      / VGPU_COMPUTE_SETTLE_MS      how long a newly scheduled TSG runs
//                                                        before it is gated (default 250;
//                                                        compute_objects.cc "Scheduled TSGs only")
//   compute_log            / VGPU_COMPUTE_LOG            file for one counters line per second
//   compute_clock          / VGPU_COMPUTE_CLOCK          on | off (default on): cap work, not
//                                                        time, by weighting GPU time with the
//                                                        SM clock (NVML, sm_clock.h)
//   compute_clock_scaling_pm / VGPU_COMPUTE_CLOCK_SCALING_PM  permille of the work's time that
//                                                        scales with the SM clock. Not for
//                                                        operators: by default each tenant learns
//                                                        it from its own perfmon samples
//                                                        (clock_scaling.h); setting it fixes it
//                                                        (tests that want it fixed)
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "shim/compute/compute_host.h"
#include "shim/include/vshim_hooks.h"
#include "uapi/vgpu_slot_fields.h"

namespace vgpu::shim::compute {
namespace {

std::mutex mu;  // guards host, host_pid
ComputeHost* host = nullptr;
NvmlClock* clock = nullptr;
pid_t host_pid = 0;

// One member per slot setting: VGPU_SETTING_KEY(field) is "field", and compiles only for a row.
struct SchemaRows {
#define VGPU_ROW_MEMBER(field, ...) int field;
  VGPU_SLOT_NUMBERS(VGPU_ROW_MEMBER)
  VGPU_SLOT_ENUMS(VGPU_ROW_MEMBER)
#undef VGPU_ROW_MEMBER
};
#define VGPU_SETTING_KEY(field) ((void)sizeof(SchemaRows::field), #field)

// A slot setting as shim/preload/config.cc resolved it (config file, else the row's variable).
const char* SlotSetting(const char* key) { return vshim_config_get(key); }

// One of the host's own keys: the environment only without a slot config.
const char* Setting(const char* key, const char* env) {
  // Under a slot config the tenant's environment changes nothing (shim/preload/config.h).
  const char* config = getenv("VGPU_CONFIG");
  if (config != nullptr && *config != '\0') {
    return vshim_config_get(key);
  }
  const char* v = getenv(env);
  return v != nullptr ? v : vshim_config_get(key);
}

int RmControl(void*, uint32_t h_client, uint32_t h_object, uint32_t cmd, void* params,
              uint32_t size, uint32_t* status) {
  return vshim_rm_control(h_client, h_object, cmd, params, size, status);
}

// The slot's processes, from the slot's ledger ("Multi-process slots", compute_measure.cc).
// Without a ledger the slot is this process alone: ComputeHost already counts our own pid.
bool SlotMember(void*, uint32_t pid) { return vshim_slot_member(pid) == 1; }

// This process's counters into its ledger entry, for the manager (shim_backend.cc).
void Publish(void*, const ComputePublication& p) {
  std::vector<vshim_busy_sample> unattributed;
  for (uint32_t i = 0; i < p.n_unattributed; i++) {
    unattributed.push_back({p.unattributed[i].ts, p.unattributed[i].busy_ns});
  }
  vshim_compute_counters c{p.busy_ns,
                           p.throttled_ns,
                           p.achieved_share_1s_pm,
                           p.achieved_share_10s_pm,
                           static_cast<uint32_t>(unattributed.size()),
                           unattributed.data()};
  vshim_publish_compute(&c);
}

void OnObject(void* arg, const vshim_obj_info* i) {
  auto* h = static_cast<ComputeHost*>(arg);
  switch (i->event) {
    case VSHIM_TSG_CREATED:
      h->OnTsg(i->h_client, i->h_parent, i->h_object, i->engine_type);
      break;
    case VSHIM_TSG_FREED:
      h->OnTsgFreed(i->h_client, i->h_object);
      break;
    case VSHIM_CHANNEL_CREATED:
      h->OnChannel(i->h_client, i->h_parent, i->h_object);
      break;
    case VSHIM_CHANNEL_FREED:
      h->OnChannelFreed(i->h_client, i->h_object);
      break;
    case VSHIM_SUBDEVICE_CREATED:
      h->OnSubdevice(i->h_client, i->h_parent, i->h_object);
      break;
    case VSHIM_TSG_SCHEDULED:
    case VSHIM_TSG_UNSCHEDULED:
      h->OnTsgScheduled(i->h_client, i->h_object, i->event == VSHIM_TSG_SCHEDULED);
      break;
    case VSHIM_CLIENT_GONE:
      h->OnClientGone(i->h_client);
      break;
  }
}

// Parses compute settings; false when no controller is needed (no share, or an uncapped cap).
bool ParseConfig(ComputeConfig* cfg) {
  const char* share = SlotSetting(VGPU_SETTING_KEY(compute_share));
  if (share == nullptr) {
    return false;
  }
  char* end = nullptr;
  const long s = strtol(share, &end, 10);
  if (end == share || *end != '\0' || s < 1 || s > 100) {
    return false;
  }
  cfg->share = static_cast<uint32_t>(s);
  const char* mode = SlotSetting(VGPU_SETTING_KEY(compute_mode));
  cfg->mode = mode != nullptr && strcmp(mode, "weight") == 0 ? VCORE_SCHED_MODE_WEIGHT
                                                             : VCORE_SCHED_MODE_CAP;
  if (const char* f = Setting("compute_foreign_share", "VGPU_COMPUTE_FOREIGN_SHARE")) {
    const long v = strtol(f, nullptr, 10);
    cfg->foreign_share = v >= 1 && v <= 100 ? static_cast<uint32_t>(v) : 0;
  }
  if (const char* ref = SlotSetting(VGPU_SETTING_KEY(compute_ref_clock_mhz))) {
    // In the row's range already (config.cc refused anything else); 0 = unknown.
    cfg->ref_clock_mhz = static_cast<uint32_t>(strtoul(ref, nullptr, 10));
  }
  if (const char* c = Setting("compute_clock_scaling_pm", "VGPU_COMPUTE_CLOCK_SCALING_PM")) {
    const long v = strtol(c, nullptr, 10);
    if (v >= 0 && v <= 1000) {
      cfg->clock_scaling_pm = static_cast<uint32_t>(v);
    }
  }
  if (const char* settle = Setting("compute_settle_ms", "VGPU_COMPUTE_SETTLE_MS")) {
    const long v = strtol(settle, nullptr, 10);
    cfg->settle_ns = v >= 0 && v <= 60000 ? static_cast<uint64_t>(v) * 1'000'000 : 0;
  }
  if (const char* log = Setting("compute_log", "VGPU_COMPUTE_LOG")) {
    cfg->log_fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  }
  // A cap of 100 % is no cap, and a lone weight of 100 has nothing to weigh: no thread, no
  // control, no measurement (the uncapped-overhead target is met by doing nothing).
  return cfg->share < 100;
}

}  // namespace
}  // namespace vgpu::shim::compute

namespace vc = vgpu::shim::compute;

extern "C" __attribute__((visibility("default"))) void vshim_compute_start(void) {
  std::lock_guard<std::mutex> lock(vc::mu);
  if (vc::host != nullptr) {
    return;
  }
  vc::ComputeConfig cfg;
  if (!vc::ParseConfig(&cfg)) {
    return;
  }
  const char* clk = vc::Setting("compute_clock", "VGPU_COMPUTE_CLOCK");
  if (clk == nullptr || strcmp(clk, "off") != 0) {
    vc::clock = new vc::NvmlClock();
    cfg.clock = vc::clock;
  }
  cfg.slot_member = vc::SlotMember;
  cfg.publish = vc::Publish;
  vc::host = new vc::ComputeHost(cfg, vc::RmControl, nullptr);
  vc::host_pid = getpid();
  vshim_set_obj_hook(vc::OnObject, vc::host);
  if (!vc::host->Start()) {
    vshim_set_obj_hook(nullptr, nullptr);
  }
}

extern "C" __attribute__((visibility("default"))) void vshim_compute_stop(void) {
  std::lock_guard<std::mutex> lock(vc::mu);
  if (vc::host == nullptr) {
    return;
  }
  vshim_set_obj_hook(nullptr, nullptr);
  if (vc::host_pid != getpid()) {
    // Fork child: the threads stayed in the parent, which still drives the TSGs (they belong to
    // the parent's clients). Forget the copy without joining threads that do not exist here.
    vc::host = nullptr;
    vc::clock = nullptr;
    return;
  }
  if (vc::host->Stop()) {
    delete vc::host;
    delete vc::clock;
  }  // else a worker is still blocked in RM or NVML: leak the host (and its clock), exit anyway
  vc::host = nullptr;
  vc::clock = nullptr;
}
