#include "vgpu/manager/grant_builder.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "vgpu/slots/shim_backend.h"

namespace vgpu::manager {
namespace {

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) {
    out += out.empty() ? s : "," + s;
  }
  return out;
}

}  // namespace

Grant GrantBuilder::Make(const slots::SlotRecord& slot) const {
  const slots::SlotRecord* one[] = {&slot};
  return Make(one);
}

Grant GrantBuilder::Make(std::span<const slots::SlotRecord* const> slots) const {
  Grant g;
  std::set<std::string> container_paths;
  std::vector<std::string> ids, names, uuids;
  for (size_t i = 0; i < slots.size(); ++i) {
    const slots::SlotConfig& c = slots[i]->config;
    slots::ContainerEdits e = backend_.Edits(c);
    for (auto d : e.devices) {
      // The kmod backend maps each slot's GPU to /dev/nvidia0; with several slots the i-th
      // becomes /dev/nvidia<i>, as on a node where the container saw those GPUs directly.
      if (i > 0 && d.container_path == "/dev/nvidia0") {
        d.container_path = "/dev/nvidia" + std::to_string(i);
      }
      if (container_paths.insert(d.container_path).second) {  // the first slot's ctl and uvm
        g.edits.devices.push_back(d);
      }
    }
    for (const auto& m : e.mounts) {
      bool seen = std::any_of(g.edits.mounts.begin(), g.edits.mounts.end(),
                              [&](const auto& x) { return x.container_path == m.container_path; });
      if (!seen) {
        g.edits.mounts.push_back(m);
      }
    }
    for (const auto& [k, v] : e.envs) {
      g.edits.envs.emplace(k, v);
    }
    ids.push_back(std::to_string(c.id));
    names.push_back(c.name);
    if (!c.gpu_uuid.empty()) {
      uuids.push_back(c.gpu_uuid);
    }
    if (!options_.cdi_kind.empty()) {
      g.cdi_devices.push_back(options_.cdi_kind + "=slot" + std::to_string(c.id));
    }
  }
  uint64_t quota = slots.empty() ? 0 : slots[0]->config.mem_quota;
  g.edits.envs["VGPU_SLOT_ID"] = Join(ids);
  g.edits.envs["VGPU_SLOT_NAME"] = Join(names);
  g.edits.envs["VGPU_MEMORY_QUOTA_BYTES"] = std::to_string(quota);
  if (!uuids.empty()) {
    g.edits.envs["VGPU_GPU_UUID"] = Join(uuids);
  }
  std::error_code ec;
  if (!options_.driver_library_dir.empty() &&
      std::filesystem::is_directory(options_.driver_library_dir, ec)) {
    g.edits.mounts.push_back({options_.driver_library_dir, "/usr/local/nvidia", true});
    g.edits.envs["LD_LIBRARY_PATH"] = "/usr/local/nvidia/lib64:/usr/local/nvidia/lib";
    g.edits.envs["PATH"] =
        "/usr/local/nvidia/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  }
  for (const auto& d : options_.extra.devices) {
    g.edits.devices.push_back(d);
  }
  for (const auto& m : options_.extra.mounts) {
    g.edits.mounts.push_back(m);
  }
  for (const auto& [k, v] : options_.extra.envs) {
    g.edits.envs.emplace(k, v);
  }
  g.annotations["vgpu.io/slot"] = Join(ids);
  g.annotations["vgpu.io/slot-name"] = Join(names);
  g.annotations[options_.memory_resource] = std::to_string(quota);
  return g;
}

std::string GrantBuilder::CdiSpecPath(uint32_t slot_id) const {
  std::string kind = options_.cdi_kind;
  std::replace(kind.begin(), kind.end(), '/', '-');
  return options_.cdi_spec_dir + "/" + kind + "_slot" + std::to_string(slot_id) + ".json";
}

std::string CdiSpecText(const std::string& kind, std::span<const CdiDevice> devices) {
  // CDI SPEC.md: hostPath on deviceNodes needs cdiVersion >= 0.5.0; declare the lowest that
  // covers the fields used, since loaders reject newer versions they do not know.
  nlohmann::json list = nlohmann::json::array();
  for (const CdiDevice& d : devices) {
    nlohmann::json edits = {{"env", nlohmann::json::array()},
                            {"deviceNodes", nlohmann::json::array()},
                            {"mounts", nlohmann::json::array()}};
    for (const auto& [k, v] : d.edits.envs) {
      edits["env"].push_back(k + "=" + v);
    }
    for (const auto& n : d.edits.devices) {
      edits["deviceNodes"].push_back({{"path", n.container_path},
                                      {"hostPath", n.host_path},
                                      {"permissions", n.permissions + "m"}});
    }
    for (const auto& m : d.edits.mounts) {
      edits["mounts"].push_back(
          {{"hostPath", m.host_path},
           {"containerPath", m.container_path},
           {"options", {m.read_only ? "ro" : "rw", "nosuid", "nodev", "bind"}}});
    }
    list.push_back({{"name", d.name}, {"containerEdits", edits}});
  }
  nlohmann::json spec = {{"cdiVersion", "0.5.0"}, {"kind", kind}, {"devices", list}};
  return spec.dump(2) + "\n";
}

Status GrantBuilder::WriteCdiSpec(const slots::SlotRecord& r) const {
  const CdiDevice one[] = {{"slot" + std::to_string(r.config.id), Make(r).edits}};
  std::error_code ec;
  std::filesystem::create_directories(options_.cdi_spec_dir, ec);
  return slots::WriteFileAtomically(CdiSpecPath(r.config.id), CdiSpecText(options_.cdi_kind, one))
      .Annotate("CDI spec for slot " + std::to_string(r.config.id));
}

Status GrantBuilder::EnsureCdiSpec(const slots::SlotRecord& r) const {
  if (options_.cdi_kind.empty() || std::filesystem::exists(CdiSpecPath(r.config.id))) {
    return OkStatus();
  }
  return WriteCdiSpec(r);
}

void GrantBuilder::RemoveCdiSpec(uint32_t slot_id) const {
  if (!options_.cdi_kind.empty()) {
    std::error_code ec;
    std::filesystem::remove(CdiSpecPath(slot_id), ec);
  }
}

}  // namespace vgpu::manager
