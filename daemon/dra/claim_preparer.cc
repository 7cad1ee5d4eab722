#include "vgpu/dra/claim_preparer.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>

#include "vgpu/manager/grant_builder.h"
#include "vgpu/manager/log.h"
#include "vgpu/slots/shim_backend.h"

namespace vgpu::dra {

std::string ClaimPreparer::SlotName(const std::string& claim_uid, size_t index) {
  return "dra-" + claim_uid + "-" + std::to_string(index);
}

std::string ClaimPreparer::SpecPath(const std::string& claim_uid) const {
  std::string kind = options_.cdi_kind;
  std::replace(kind.begin(), kind.end(), '/', '-');
  return options_.cdi_spec_dir + "/" + kind + "_" + claim_uid + ".json";
}

Result<std::vector<PreparedDevice>> ClaimPreparer::Prepare(const ClaimPlan& plan) {
  const std::string& uid = plan.claim.uid;
  std::vector<PreparedDevice> out;
  std::vector<manager::CdiDevice> cdi;
  for (size_t k = 0; k < plan.devices.size(); ++k) {
    const PlannedDevice& d = plan.devices[k];
    manager::ClaimSlotRequest req;
    req.name = SlotName(uid, k);
    req.gpu = d.gpu;
    req.exclusive = d.exclusive;
    req.memory_bytes = d.memory_bytes;
    req.core_percent = d.core_percent;
    req.compute_mode = d.compute_mode;
    req.managed_policy = d.managed_policy;
    req.claim_namespace = plan.claim.namespace_;
    req.claim_name = plan.claim.name;
    auto slot = slots_.CreateForClaim(req);
    if (!slot.ok()) {
      Status undo = Unprepare(uid);
      if (!undo.ok()) {
        manager::LogWarn("event=dra_prepare_undo_failed claim_uid=" + uid + " error=\"" +
                         undo.ToString() + "\"");
      }
      return slot.status().Annotate("claim " + plan.claim.ToString() + " device " + d.device);
    }
    std::string name = uid + "-" + std::to_string(k);
    cdi.push_back({name, slots_.GrantFor(*slot).edits});
    out.push_back({d, options_.cdi_kind + "=" + name});
  }
  if (!cdi.empty()) {
    Status s = WriteSpec(uid, cdi);
    if (!s.ok()) {
      (void)Unprepare(uid);
      return s.Annotate("CDI spec of claim " + plan.claim.ToString());
    }
  }
  return out;
}

Status ClaimPreparer::WriteSpec(const std::string& claim_uid,
                                const std::vector<manager::CdiDevice>& devices) const {
  // The runtime may read the directory at any time (CDI caches watch it): temp file and rename,
  // so it never sees half a spec. No flush: the directory is a tmpfs on most nodes, and the
  // specs are rewritten from the checkpoint at start (RewriteSpecs).
  std::error_code ec;
  std::filesystem::create_directories(options_.cdi_spec_dir, ec);
  return slots::WriteFileAtomically(SpecPath(claim_uid),
                                    manager::CdiSpecText(options_.cdi_kind, devices),
                                    slots::Durability::kProcessDeath);
}

Status ClaimPreparer::RewriteSpecs() {
  // Slot "dra-<uid>-<k>" is device "<uid>-<k>" of the claim's spec (Prepare). A claim uid may
  // hold '-', the index never does.
  std::map<std::string, std::map<size_t, manager::CdiDevice>> specs;
  for (const auto& r : slots_.Snapshot()) {
    const std::string& name = r.config.name;
    const size_t dash = name.rfind('-');
    size_t k = 0;
    if (!name.starts_with("dra-") || dash == std::string::npos || dash <= 4 ||
        std::from_chars(name.data() + dash + 1, name.data() + name.size(), k).ptr !=
            name.data() + name.size()) {
      continue;
    }
    const std::string uid = name.substr(4, dash - 4);
    specs[uid][k] = {uid + "-" + std::to_string(k), slots_.GrantFor(r).edits};
  }
  Status first;
  for (const auto& [uid, by_index] : specs) {
    std::vector<manager::CdiDevice> devices;
    for (const auto& [k, d] : by_index) {
      devices.push_back(d);
    }
    Status s = WriteSpec(uid, devices);
    if (!s.ok() && first.ok()) {
      first = s.Annotate("CDI spec of claim uid " + uid);
    }
  }
  return first;
}

Status ClaimPreparer::Unprepare(const std::string& claim_uid) {
  const std::string prefix = "dra-" + claim_uid + "-";
  for (const auto& r : slots_.Snapshot()) {
    if (r.config.name.starts_with(prefix)) {
      VGPU_RETURN_IF_ERROR(slots_.DestroyNamed(r.config.name));
    }
  }
  std::error_code ec;
  std::filesystem::remove(SpecPath(claim_uid), ec);
  return OkStatus();
}

}  // namespace vgpu::dra
