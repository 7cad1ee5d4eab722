// vgpu-manager: the node daemon. Start-up is a list of named steps run in order (volumes ->
// pod-resources -> node labels -> slots -> topology -> allocator -> services -> register, as
// docs/design.md "The manager"); each logs what it found, and a failing step says why and what to
// fix. After start-up one loop owns signals, kubelet restarts (re-serve + re-register) and the
// periodic orphan check.
#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <thread>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "vgpu/alloc/inventory.h"
#include "vgpu/alloc/placement.h"
#include "vgpu/checkpoint/checkpoint.h"
#include "vgpu/config/config.h"
#include "vgpu/dra/dra_node.h"
#include "vgpu/health/health_monitor.h"
#include "vgpu/health/nvml_xid_source.h"
#include "vgpu/health/slot_manager_sink.h"
#include "vgpu/labels/kube_endpoint.h"
#include "vgpu/labels/node_labeler.h"
#include "vgpu/labels/pod_reader.h"
#include "vgpu/manager/control_api.h"
#include "vgpu/manager/enforcement.h"
#include "vgpu/manager/log.h"
#include "vgpu/manager/reference_clock_startup.h"
#include "vgpu/manager/slot_manager.h"
#include "vgpu/manager/stats_source.h"
#include "vgpu/metrics/exporter.h"
#include "vgpu/plugin/device_plugin.h"
#include "vgpu/plugin/kubelet_watcher.h"
#include "vgpu/podresources/pod_resources.h"
#include "vgpu/slots/shim_backend.h"
#include "vgpu/text.h"
#include "vgpu/volumes/mirror.h"
#include "vgpu/volumes/volume_config.h"
#ifdef VGPU_HAVE_KMOD_BACKEND
#include "vgpu/slots/kmod_backend.h"
#endif

namespace vgpu::manager {
namespace {

namespace fs = std::filesystem;
using config::Config;

struct Step {
  std::string name;
  std::string fix;  // what an operator should check when the step fails
  std::function<Status()> run;
};

Result<slots::ContainerEdits> LoadExtraConfig(const std::string& path) {
  slots::ContainerEdits extra;
  if (path.empty()) {
    return extra;
  }
  Result<std::string> text = ReadFileToString(path);
  if (!text.ok()) {
    return text.status().Annotate("--extra-config");
  }
  nlohmann::json doc = nlohmann::json::parse(*text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    return InvalidArgumentError("--extra-config " + path + ": not a JSON object");
  }
  if (doc.contains("devices")) {
    if (!doc["devices"].is_array()) {
      return InvalidArgumentError("--extra-config " + path + ": devices must be an array");
    }
    for (const auto& d : doc["devices"]) {
      if (!d.is_string()) {
        return InvalidArgumentError("--extra-config " + path + ": devices[] must be paths");
      }
      extra.devices.push_back({d.get<std::string>(), d.get<std::string>(), "rw"});
    }
  }
  if (doc.contains("envs")) {
    if (!doc["envs"].is_object()) {
      return InvalidArgumentError("--extra-config " + path + ": envs must be an object");
    }
    for (const auto& [k, v] : doc["envs"].items()) {
      if (!v.is_string()) {
        return InvalidArgumentError("--extra-config " + path + ": envs." + k + " must be a string");
      }
      extra.envs[k] = v.get<std::string>();
    }
  }
  return extra;
}

class Daemon {
 public:
  explicit Daemon(Config cfg) : cfg_(std::move(cfg)) {}

  int Run() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    // Block before any thread starts so only the main loop sees these.
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    for (const Step& step : Steps()) {
      Status s = step.run();
      if (!s.ok()) {
        LogError("event=startup_failed step=" + step.name + " error=\"" + s.ToString() +
                 "\" fix=\"" + step.fix + "\"");
        Shutdown();
        return 1;
      }
    }
    LogInfo("event=ready mode=" + std::string(cfg_.standalone ? "standalone" : "kubelet"));
    int rc = Loop(set);
    Shutdown();
    return rc;
  }

 private:
  std::vector<Step> Steps() {
    return {
        {"enforcement",
         "load vgpu.ko (see the module installer's log), or accept soft limits with "
         "--allow-shim-fallback or --enforcement=shim",
         [this] { return StartEnforcement(); }},
        {"volumes", "check --volume-config and --driver-library-dir", [this] { return Volumes(); }},
        {"pod-resources", "mount /var/lib/kubelet/pod-resources into the manager",
         [this] { return PodResources(); }},
        {"node-labels", "fix --node-labels", [this] { return NodeLabels(); }},
        {"slots", "check --virtual-manager-path and the enforcement backend's log",
         [this] { return Slots(); }},
        {"topology", "check the NVIDIA driver/NVML on the node or --gpu-fixture",
         [this] { return Topology(); }},
        {"allocator", "check --checkpoint-path is writable; a corrupt checkpoint is kept aside",
         [this] { return Allocator(); }},
        {"services", "check --device-plugin-path and --control-socket are writable",
         [this] { return Services(); }},
        {"register", "check the kubelet is running and --kubelet-socket",
         [this] { return RegisterAll(); }},
    };
  }

  Status Volumes() {
    if (!cfg_.volume_config.empty()) {
      auto vc = volumes::LoadVolumeConfig(cfg_.volume_config);
      if (!vc.ok()) {
        return vc.status();
      }
      volumes::MirrorOptions mo;
      mo.driver_root = cfg_.driver_root;
      mo.shim_mode = enforcement_.mode == "shim" && !cfg_.shim_library.empty();
      mo.shim_library = cfg_.shim_library;
      auto reports = volumes::MirrorVolumes(*vc, mo);
      if (!reports.ok()) {
        // Not fatal: slots still work; containers lack the mirrored driver files until fixed.
        LogWarn("event=startup step=volumes volume_config=" + cfg_.volume_config + " error=\"" +
                reports.status().ToString() + "\"");
      } else {
        for (size_t i = 0; i < reports->size() && i < vc->volumes.size(); ++i) {
          const auto& r = (*reports)[i];
          LogInfo("event=startup step=volumes volume=" + vc->volumes[i].name +
                  " dir=" + vc->volumes[i].base + "/" + vc->volumes[i].name +
                  " files_written=" + std::to_string(r.files_written) +
                  " unchanged=" + std::to_string(r.files_unchanged) +
                  " links=" + std::to_string(r.links_written + r.links_unchanged) +
                  " missing=" + std::to_string(r.missing.size()) +
                  " shim_mode=" + (mo.shim_mode ? "true" : "false"));
        }
      }
      if (cfg_.driver_library_dir.empty() && !vc->volumes.empty()) {
        cfg_.driver_library_dir = vc->volumes[0].base + "/" + vc->volumes[0].name;
      }
    }
    std::error_code ec;
    bool libs = fs::is_directory(cfg_.DriverLibraryDir(), ec);
    LogInfo("event=startup step=volumes driver_library_dir=" + cfg_.DriverLibraryDir() +
            " present=" + (libs ? "true" : "false") +
            (libs ? "" : " note=\"containers get no driver-library mount until it exists\""));
    return OkStatus();
  }

  // A step of the device-plugin API only: logged as skipped when there is no kubelet
  // (standalone) or the kubelet speaks DRA instead.
  bool SkipDevicePluginStep(std::string_view step) {
    if (!cfg_.standalone && !cfg_.dra()) {
      return false;
    }
    LogInfo("event=startup step=" + std::string(step) +
            " skipped=" + (cfg_.dra() ? "dra" : "standalone"));
    return true;
  }

  Status PodResources() {
    // DRA slots belong to claims, which the kubelet unprepares itself: no orphan check.
    if (SkipDevicePluginStep("pod-resources")) {
      return OkStatus();
    }
    pod_resources_ = podresources::MakeGrpcPodResourcesClient(cfg_.pod_resources_socket,
                                                              std::chrono::seconds(2));
    auto listed = pod_resources_->List();
    if (listed.ok()) {
      LogInfo("event=startup step=pod-resources socket=" + cfg_.pod_resources_socket +
              " containers=" + std::to_string(listed->size()));
    } else {
      // Not fatal: the kubelet may come up after us; PreStartContainer and the orphan check
      // retry on every call.
      LogWarn("event=startup step=pod-resources socket=" + cfg_.pod_resources_socket + " error=\"" +
              listed.status().message() + "\"");
    }
    return OkStatus();
  }

  Result<labels::KubeEndpoint> ApiEndpoint() const {
    return cfg_.incluster_mode ? labels::InClusterEndpoint()
           : !cfg_.kubeconfig.empty()
               ? labels::KubeconfigEndpoint(cfg_.kubeconfig)
               : Result<labels::KubeEndpoint>(FailedPreconditionError(
                     "no API access: give --kubeconfig or --incluster-mode"));
  }

  // A pod's annotations choose how its compute share is enforced (kComputeModeAnnotation).
  void PodAnnotations() {
    if (cfg_.standalone) {
      return;
    }
    auto endpoint = ApiEndpoint();
    if (!endpoint.ok()) {
      LogWarn("event=startup step=pod-annotations read=false compute_mode=cap error=\"" +
              endpoint.status().ToString() + "\"");
      return;
    }
    pod_reader_ = labels::MakeKubePodReader(std::move(*endpoint));
    slots_->SetPodAnnotations(pod_reader_.get());
    LogInfo("event=startup step=pod-annotations read=true annotation=" +
            std::string(kComputeModeAnnotation));
  }

  Status NodeLabels() {
    labels::LabelSet from_flag;
    if (!cfg_.node_labels.empty()) {
      auto parsed = labels::ParseNodeLabelsFlag(cfg_.node_labels);
      if (!parsed.ok()) {
        return parsed.status().Annotate("--node-labels");
      }
      from_flag = std::move(*parsed);
    }
    // The enforcement in force is always published (enforcement.h), with the operator's labels.
    auto labels = NodeLabelsToPublish(from_flag, enforcement_);
    if (!labels.ok()) {
      return labels.status();
    }
    Result<labels::KubeEndpoint> endpoint = ApiEndpoint();
    if (!endpoint.ok()) {
      LogWarn("event=startup step=node-labels published=false error=\"" +
              endpoint.status().ToString() + "\"");
      return OkStatus();  // labels are a convenience, never a reason to stop serving GPUs
    }
    std::string node = cfg_.hostname_override;
    if (node.empty()) {
      char host[256] = {};
      ::gethostname(host, sizeof host - 1);
      node = host;
    }
    std::string shown;
    for (const auto& [k, v] : *labels) {
      shown += (shown.empty() ? "" : ",") + k + "=" + v.value_or("(removed)");
    }
    LogInfo("event=startup step=node-labels node=" + node + " labels=\"" + shown +
            "\" publishing=background");
    // The PATCH retries with backoff; it must not hold up the device plugin.
    labeler_thread_ = std::thread([endpoint = std::move(*endpoint), node, set = *labels] {
      labels::NodeLabeler labeler(endpoint);
      Status s = labeler.Apply(node, set);
      if (s.ok()) {
        LogInfo("event=node_labels_published node=" + node);
      } else {
        LogWarn("event=node_labels_failed node=" + node + " error=\"" + s.ToString() + "\"");
      }
    });
    return OkStatus();
  }

  // Resolves the enforcement and starts its slot backend; what started is what the labels and
  // /metrics publish (enforcement.h). --enforcement=auto without a usable vgpu.ko fails unless
  // --allow-shim-fallback says soft limits are acceptable on this node.
  Status StartEnforcement() {
    ModuleInstallState install;
    if (!cfg_.module_state_file.empty()) {
      install = ReadModuleInstallState(cfg_.module_state_file);
      if (install.known && !install.ok) {
        LogError("event=module_install_failed state_file=" + cfg_.module_state_file + " reason=\"" +
                 install.detail + "\"");
      } else if (!install.known) {
        LogWarn("event=module_install_unknown error=\"" + install.detail + "\"");
      }
    }
    auto mode = config::ResolveEnforcement(cfg_);
    if (!mode.ok()) {
      return install.known && !install.ok
                 ? mode.status().Annotate("module installer: " + install.detail)
                 : mode.status();
    }
    std::string fallback;
    if (*mode == config::Enforcement::kKmod) {
      auto kmod = OpenKmodBackend();
      if (kmod.ok()) {
        backend_ = std::move(*kmod);
      } else if (cfg_.enforcement == config::Enforcement::kAuto && cfg_.allow_shim_fallback) {
        fallback = "vgpu.ko present but unusable: " + kmod.status().ToString();
      } else {
        return kmod.status();
      }
    } else if (cfg_.enforcement == config::Enforcement::kAuto) {
      fallback = "vgpu.ko is not loaded" + (install.known && !install.ok
                                                ? " (module installer: " + install.detail + ")"
                                                : std::string());
    }
    if (backend_ == nullptr) {
      slots::ShimBackendOptions opts;
      opts.root = fs::path(cfg_.slot_path) / "slots";
      opts.ledger_root = fs::path(cfg_.slot_path) / "ledgers";
      opts.shim_library_host = cfg_.shim_library;
      backend_ = std::make_unique<slots::ShimSlotBackend>(std::move(opts));
    }
    enforcement_ = DescribeEnforcement(backend_->Kind(), fallback, install);
    if (!fallback.empty()) {
      LogWarn("event=enforcement_fallback mode=shim hard=false reason=\"" + fallback +
              "\" allowed_by=--allow-shim-fallback");
    }
    LogInfo("event=startup step=enforcement mode=" + enforcement_.mode +
            " hard=" + (enforcement_.hard ? "true" : "false") +
            " requested=" + std::string(config::EnforcementName(cfg_.enforcement)));
    return OkStatus();
  }

  Result<std::unique_ptr<slots::SlotBackend>> OpenKmodBackend() {
#ifdef VGPU_HAVE_KMOD_BACKEND
    auto kmod = slots::KmodSlotBackend::Open();
    if (!kmod.ok()) {
      return kmod.status();
    }
    return std::unique_ptr<slots::SlotBackend>(std::move(*kmod));
#else
    return UnimplementedError(
        "--enforcement=kmod: this build has no kmod backend "
        "(daemon/kmodclient missing); use --enforcement=shim");
#endif
  }

  Status Slots() {
    auto live = backend_->List();
    if (!live.ok()) {
      return live.status();
    }
    LogInfo("event=startup step=slots enforcement=" + std::string(backend_->Kind()) +
            " requested=" + std::string(config::EnforcementName(cfg_.enforcement)) +
            " live_slots=" + std::to_string(live->size()));
    return OkStatus();
  }

  Status Topology() {
    auto inv = cfg_.gpu_fixture.empty() ? alloc::DiscoverNodeGpus()
                                        : alloc::LoadGpuFixture(cfg_.gpu_fixture);
    if (!inv.ok()) {
      return inv.status();
    }
    for (const auto& note : inv->notes) {
      LogWarn("event=startup step=topology note=\"" + note + "\"");
    }
    for (const auto& g : inv->gpus) {
      LogInfo("event=startup step=topology gpu=" + std::to_string(g.index) + " uuid=" + g.uuid +
              " memory_bytes=" + std::to_string(g.memory_bytes) +
              " numa=" + std::to_string(g.numa) + " pci=" + g.pci_bus_id);
    }
    LogInfo("event=startup step=topology source=\"" + inv->source +
            "\" gpus=" + std::to_string(inv->gpus.size()));
    gpus_ = std::move(inv->gpus);
    return OkStatus();
  }

  Status Allocator() {
    auto placer = alloc::MakePlacer(cfg_.placement, gpus_);
    if (!placer.ok()) {
      return placer.status().Annotate("--placement");
    }
    auto extra = LoadExtraConfig(cfg_.extra_config);
    if (!extra.ok()) {
      return extra.status();
    }
    std::error_code ec;
    fs::create_directories(cfg_.checkpoint_path, ec);
    if (ec) {
      return InternalError("--checkpoint-path " + cfg_.checkpoint_path + ": " + ec.message());
    }
    store_ = std::make_unique<checkpoint::CheckpointStore>(cfg_.CheckpointFile());
    ManagerOptions opts;
    opts.memory_unit_bytes = cfg_.memory_unit_bytes;
    opts.core_resource = cfg_.core_resource;
    opts.memory_resource = cfg_.memory_resource;
    opts.gpu_resource = cfg_.gpu_resource;
    // config::Validate() accepted both names already.
    opts.managed_policy = ParseManagedPolicy(cfg_.managed_policy).value();
    opts.unknown_policy = ParseUnknownPolicy(cfg_.unknown_policy).value();
    opts.orphan_grace = std::chrono::seconds(cfg_.allocation_check_period_s);
    opts.cdi_kind = cfg_.cdi_kind;
    opts.cdi_spec_dir = cfg_.cdi_spec_dir;
    opts.driver_library_dir = cfg_.DriverLibraryDir();
    opts.extra = std::move(*extra);
    auto clocks = LoadReferenceClocks(cfg_.checkpoint_path);
    if (!clocks.ok()) {
      return clocks.status();
    }
    reference_clocks_ = std::move(*clocks);
    opts.reference_clock_mhz = [clocks = reference_clocks_.get()](std::string_view uuid) {
      return clocks->MhzFor(uuid);
    };
    if (const char* at = std::getenv("VGPU_MANAGER_CRASH_AT"); at != nullptr && *at != '\0') {
      // Test seam for the crash-consistency scenarios (tests/integration/manager).
      std::string point = at;
      LogWarn("event=crash_point_armed point=" + point);
      opts.crash_point = [point](std::string_view here) {
        if (here == point) {
          ::kill(::getpid(), SIGKILL);
        }
      };
    }
    slots_ = std::make_unique<SlotManager>(std::move(opts), gpus_, *backend_, *store_,
                                           pod_resources_.get(), std::move(*placer),
                                           [] { return std::chrono::steady_clock::now(); });
    PodAnnotations();
    auto report = slots_->Reconcile();
    if (!report.ok()) {
      return report.status();
    }
    if (!report->checkpoint_corrupt.empty()) {
      LogWarn("event=checkpoint_corrupt path=" + store_->path().string() +
              " kept_aside=" + report->kept_aside + " reason=\"" + report->checkpoint_corrupt +
              "\" action=\"state rebuilt from live slots and pod-resources\"");
    }
    LogInfo("event=startup step=allocator placement=" + std::string(slots_->placer_name()) +
            " checkpoint=" + store_->path().string() + " " + report->ToString());
    StartReferenceClocks(*reference_clocks_, *slots_);
    // GPU health (XID events through NVML) feeds ListAndWatch; without NVML GPUs stay healthy.
    xid_source_ = std::make_unique<health::NvmlXidSource>();
    health_sink_ = std::make_unique<health::SlotManagerHealthSink>(*slots_);
    health_ = std::make_unique<health::HealthMonitor>(*xid_source_, *health_sink_);
    Status h = health_->Start();
    if (!h.ok()) {
      LogWarn("event=startup step=allocator health=off error=\"" + h.ToString() + "\"");
      health_.reset();
    }
    return OkStatus();
  }

  Status Services() {
    std::error_code ec;
    fs::create_directories(fs::path(cfg_.ControlSocket()).parent_path(), ec);
    if (ec) {
      return InternalError("--control-socket " + cfg_.ControlSocket() + ": " + ec.message());
    }
    control_ = std::make_unique<ControlServer>(cfg_.ControlSocket(), *slots_, cfg_.standalone);
    VGPU_RETURN_IF_ERROR(control_->Start().Annotate("--control-socket"));
    LogInfo("event=startup step=services control_socket=" + cfg_.ControlSocket() +
            " ops=" + (cfg_.standalone ? "list,create,delete" : "list"));
    if (cfg_.query_port != 0) {
      stats_ = std::make_unique<SlotManagerStatsSource>(*slots_, registrations_,
                                                        EnforcementMetrics(enforcement_));
      metrics::ExporterOptions mo;
      mo.node_name = cfg_.hostname_override;
      mo.port = cfg_.query_port;
      mo.sample_period = std::chrono::seconds(cfg_.sample_period_s);
      exporter_ = std::make_unique<metrics::MetricsExporter>(mo, *stats_);
      VGPU_RETURN_IF_ERROR(
          exporter_->Start().Annotate("--query-port " + std::to_string(cfg_.query_port)));
      LogInfo("event=startup step=services metrics_port=" + std::to_string(exporter_->port()));
    }
    if (cfg_.standalone) {
      return OkStatus();
    }
    if (cfg_.dra()) {
      dra_ = std::make_unique<dra::DraNode>(cfg_, *slots_);
      return dra_->Start();
    }
    std::vector<plugin::PluginOptions> resources;
    if (cfg_.share_mode) {
      resources.push_back({cfg_.device_plugin_path, "vgpu-vcuda-core.sock", cfg_.core_resource,
                           ResourceKind::kCore});
      resources.push_back({cfg_.device_plugin_path, "vgpu-vcuda-memory.sock", cfg_.memory_resource,
                           ResourceKind::kMemory});
    }
    resources.push_back({cfg_.device_plugin_path, "vgpu-vcuda-gpu.sock", cfg_.gpu_resource,
                         ResourceKind::kWholeGpu});
    for (auto& r : resources) {
      plugins_.push_back(std::make_unique<plugin::PluginServer>(r, *slots_));
    }
    return ServeAll();
  }

  Status ServeAll() {
    for (auto& p : plugins_) {
      VGPU_RETURN_IF_ERROR(p->Serve());
      LogInfo("event=serving resource=" + p->options().resource + " socket=" + p->SocketPath() +
              " devices=" + std::to_string(slots_->Devices(p->options().kind).size()));
    }
    return OkStatus();
  }

  Status RegisterAll() {
    // A DRA plugin registers by its socket in plugins_registry/ (the kubelet dials it).
    if (SkipDevicePluginStep("register")) {
      return OkStatus();
    }
    fs::path kubelet(cfg_.KubeletSocket());
    watcher_ = std::make_unique<plugin::KubeletWatcher>(
        kubelet.parent_path().string(), kubelet.filename().string(), [this](std::string why) {
          restart_reason_ = why;
          restart_ = true;
        });
    VGPU_RETURN_IF_ERROR(watcher_->Start());
    Status s = TryRegister();
    if (!s.ok()) {
      // Keep serving: the kubelet's next start re-creates kubelet.sock and we register then;
      // meanwhile retry on a timer.
      LogWarn("event=register_failed error=\"" + s.ToString() + "\" retry_in_s=5");
      register_pending_ = true;
    }
    return OkStatus();
  }

  Status TryRegister() {
    for (auto& p : plugins_) {
      VGPU_RETURN_IF_ERROR(p->Register(cfg_.KubeletSocket(), std::chrono::seconds(5)));
      ++registrations_;
      LogInfo("event=registered resource=" + p->options().resource +
              " endpoint=" + p->options().endpoint + " kubelet=" + cfg_.KubeletSocket());
    }
    return OkStatus();
  }

  void Restart(const std::string& why) {
    LogInfo("event=restart_plugins reason=\"" + why + "\"");
    for (auto& p : plugins_) {
      p->Stop();
    }
    Status s = ServeAll();
    if (s.ok()) {
      s = TryRegister();
    }
    register_pending_ = !s.ok();
    if (!s.ok()) {
      LogWarn("event=register_failed error=\"" + s.ToString() + "\" retry_in_s=5");
    }
  }

  int Loop(const sigset_t& set) {
    using clock = std::chrono::steady_clock;
    auto next_orphan_check = clock::now() + std::chrono::seconds(cfg_.allocation_check_period_s);
    auto next_register = clock::now() + std::chrono::seconds(5);
    for (;;) {
      timespec ts{0, 100 * 1000 * 1000};
      siginfo_t info;
      int sig = sigtimedwait(&set, &info, &ts);
      if (sig == SIGINT || sig == SIGTERM) {
        LogInfo("event=shutdown signal=" + std::to_string(sig));
        return 0;
      }
      if (sig == SIGHUP) {
        restart_reason_ = "SIGHUP";
        restart_ = true;
      }
      if (restart_.exchange(false)) {
        Restart(restart_reason_);
        next_register = clock::now() + std::chrono::seconds(5);
      }
      if (register_pending_ && clock::now() >= next_register) {
        Restart("registration retry");
        next_register = clock::now() + std::chrono::seconds(5);
      }
      if (clock::now() >= next_orphan_check) {
        auto n = slots_->ReclaimOrphans();
        if (!n.ok()) {
          LogWarn("event=orphan_check_failed error=\"" + n.status().ToString() + "\"");
        } else if (*n > 0) {
          LogInfo("event=orphans_reclaimed count=" + std::to_string(*n));
        }
        // Check at a fraction of the grace so a slot is reclaimed within ~1.25 periods.
        next_orphan_check =
            clock::now() + std::chrono::milliseconds(cfg_.allocation_check_period_s * 250);
      }
    }
  }

  void Shutdown() {
    if (reference_clocks_) {
      reference_clocks_->Stop();  // its thread calls into slots_
    }
    if (health_) {
      health_->Stop();
    }
    if (exporter_) {
      exporter_->Stop();
    }
    if (labeler_thread_.joinable()) {
      labeler_thread_.join();
    }
    if (watcher_) {
      watcher_->Stop();
    }
    if (dra_) {
      dra_->Stop();
    }
    for (auto& p : plugins_) {
      p->Stop();
    }
    if (control_) {
      control_->Stop();
    }
  }

  Config cfg_;
  std::unique_ptr<podresources::PodResourcesSource> pod_resources_;
  std::unique_ptr<podresources::PodAnnotationSource> pod_reader_;
  std::unique_ptr<slots::SlotBackend> backend_;
  EnforcementInForce enforcement_;
  std::vector<alloc::GpuInfo> gpus_;
  std::unique_ptr<checkpoint::CheckpointStore> store_;
  std::unique_ptr<reference_clock::ReferenceClocks> reference_clocks_;  // outlives slots_
  std::unique_ptr<SlotManager> slots_;
  std::unique_ptr<ControlServer> control_;
  std::vector<std::unique_ptr<plugin::PluginServer>> plugins_;
  std::unique_ptr<plugin::KubeletWatcher> watcher_;
  std::unique_ptr<dra::DraNode> dra_;
  std::unique_ptr<health::NvmlXidSource> xid_source_;
  std::unique_ptr<health::SlotManagerHealthSink> health_sink_;
  std::unique_ptr<health::HealthMonitor> health_;
  std::unique_ptr<SlotManagerStatsSource> stats_;
  std::unique_ptr<metrics::MetricsExporter> exporter_;
  std::thread labeler_thread_;
  std::atomic<uint64_t> registrations_{0};
  std::atomic<bool> restart_{false};
  std::string restart_reason_;  // written by the watcher just before restart_ is set
  bool register_pending_ = false;
};

}  // namespace
}  // namespace vgpu::manager

int main(int argc, char** argv) {
  // Memory stays flat on a long-lived node daemon: gRPC runs many threads and glibc would give
  // each its own arena, and the checkpoint writer's large buffers would otherwise raise the
  // dynamic mmap threshold and stay on the heap after being freed (mallopt(3)).
  mallopt(M_ARENA_MAX, 2);
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  std::vector<std::string> args(argv + 1, argv + argc);
  bool help = false;
  auto cfg = vgpu::config::ParseArgs(args, &help);
  if (help) {
    std::fputs(vgpu::config::Usage().c_str(), stdout);
    return 0;
  }
  if (!cfg.ok()) {
    std::fprintf(stderr, "vgpu-manager: %s\n", cfg.status().ToString().c_str());
    return 2;
  }
  vgpu::Status valid = vgpu::config::Validate(*cfg);
  if (!valid.ok()) {
    std::fprintf(stderr, "vgpu-manager: %s\n", valid.ToString().c_str());
    return 2;
  }
  vgpu::manager::LogInfo("event=config " + cfg->EffectiveConfigLine());
  vgpu::manager::Daemon daemon(std::move(*cfg));
  return daemon.Run();
}
