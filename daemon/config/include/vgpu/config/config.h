// vgpu-manager's settings: every flag declared once (name, default, usage) in config.cc's flag
// table; the same keys may come from a JSON config file (--config), flags win over the file.
// Validate() checks everything and its error names the flag ("--share-mode: ...").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vgpu/status.h"

namespace vgpu::config {

enum class Enforcement { kKmod, kShim, kAuto };

struct Config {
  // Settings inherited from gpu-manager's command line.
  std::string driver = "nvidia";
  std::string extra_config;   // JSON: {"devices": ["/dev/x", ...], "envs": {"K": "V"}}
  std::string volume_config;  // driver-library volume description (daemon/volumes)
  int query_port = 5678;      // metrics/query HTTP port; 0 disables it
  std::string kubeconfig;
  bool standalone = false;  // no kubelet: only the local control API creates slots
  int sample_period_s = 1;  // metrics/health sampling
  std::string node_labels;  // "key=value,key=value" published for this node
  std::string hostname_override;
  std::string virtual_manager_path = "/etc/vgpu-manager/vm";  // control socket, vdriver tree
  // Shim slot dirs (slots/<id>) and ledgers (ledgers/<id>): a tmpfs, since they need to outlive
  // the manager's process but not a reboot; start-up rebuilds them from the checkpoint.
  std::string slot_path = "/run/vgpu-manager";
  std::string device_plugin_path = "/var/lib/kubelet/device-plugins";
  std::string checkpoint_path = "/etc/vgpu-manager/checkpoint";  // directory
  bool share_mode = true;  // advertise fractional vcuda-core/vcuda-memory (else whole GPUs only)
  int allocation_check_period_s = 30;  // orphaned slots are reclaimed after this long
  bool incluster_mode = false;
  Enforcement enforcement = Enforcement::kAuto;

  // vgpu additions.
  std::string config_file;     // --config
  std::string kubelet_socket;  // default <device-plugin-path>/kubelet.sock
  std::string pod_resources_socket = "/var/lib/kubelet/pod-resources/kubelet.sock";
  std::string control_socket;  // default <virtual-manager-path>/vgpu-manager.sock
  // Where the host's driver files are seen: "/" on a bare host, the host root's mount point in
  // a pod (the DaemonSet mounts it at /host). The volume mirror reads the ld cache and resolves
  // symlinks inside it (volumes::MirrorOptions::driver_root).
  std::string driver_root = "/";
  uint64_t memory_unit_bytes = 256ull << 20;
  std::string core_resource = "tencent.com/vcuda-core";
  std::string memory_resource = "tencent.com/vcuda-memory";
  std::string gpu_resource = "tencent.com/vcuda-gpu";
  std::string gpu_fixture;  // JSON GPU description instead of discovery
  std::string placement = "firstfit";
  std::string cdi_spec_dir = "/var/run/cdi";  // where per-slot CDI specs are written
  std::string cdi_kind;                       // e.g. "vgpu.io/slot"; empty: no CDI device names
  std::string shim_library;                   // host path of libvgpu-shim.so (shim enforcement)
  std::string driver_library_dir;             // default <virtual-manager-path>/vdriver/nvidia
  std::string managed_policy = "refuse";
  std::string unknown_policy = "refuse";
  std::string sys_module_dir = "/sys/module";  // where --enforcement=auto looks for vgpu
  // --enforcement=auto without vgpu.ko: fail (default), or run the shim when this is set. Shim
  // limits are soft (a static binary or a cleared LD_PRELOAD escapes them), so a node never
  // drops to them unless the operator said so; the labels and /metrics then say "shim".
  bool allow_shim_fallback = false;
  // The module installer's outcome ("kmod <version>" or "shim <reason>",
  // deploy/images/module-installer): published as a label and metric; empty: none.
  std::string module_state_file;
  // Which kubelet API hands out the slots: "device-plugin" (extended resources) or "dra" (a
  // DRA kubelet plugin, daemon/dra). One at a time: both would book the same GPU twice.
  std::string kubelet_api = "device-plugin";
  std::string dra_driver_name = "gpu.vgpu.io";  // DRA driver name (a DNS subdomain)
  // Holds plugins_registry/ (registration socket) and plugins/<driver>/ (service socket).
  std::string kubelet_dir = "/var/lib/kubelet";
  bool dra() const { return kubelet_api == "dra"; }

  std::string KubeletSocket() const;
  std::string ControlSocket() const;
  std::string DriverLibraryDir() const;
  std::string CheckpointFile() const;  // <checkpoint-path>/vgpu-manager.checkpoint
  // One line, "key=value key=value ...", every setting, for the start-up log.
  std::string EffectiveConfigLine() const;
};

std::string_view EnforcementName(Enforcement e);

// Parses argv (--name=value, --name value, --flag for booleans); --config=FILE is read first,
// whatever the order. `help` is set for --help/-h.
Result<Config> ParseArgs(const std::vector<std::string>& args, bool* help = nullptr);
// Applies a JSON object with the same keys as the flags (without "--") onto `config`.
Status ApplyJson(std::string_view json_text, Config& config);
Status Validate(const Config& config);
std::string Usage();

// Resolves kAuto: kmod when <sys_module_dir>/vgpu exists; else shim only with
// --allow-shim-fallback, and FAILED_PRECONDITION naming the fix otherwise.
Result<Enforcement> ResolveEnforcement(const Config& config);

}  // namespace vgpu::config
