// NodePrepareResources / NodeUnprepareResources for one claim, after its plan is read: one
// slot per allocation result (SlotManager::CreateForClaim, named dra-<claim uid>-<k>, so a
// retry finds it), and one CDI spec file per claim (<cdi dir>/<kind>_<uid>.json, device
// <uid>-<k>) carrying the device plugin's grant for that slot. CDI names embed the claim uid,
// which is never reused, because runtimes cache specs by name (docs/dra.md).
//
// Both directions are idempotent, and every change is in the checkpoint before the answer
// goes back: the slots are in the manager's checkpoint, the spec is rewritten from them on a
// retry, and unprepare needs nothing but the slot names, so it works after a restart, a
// SIGKILL, or the claim's deletion from the API server.
#pragma once

#include <string>
#include <vector>

#include "vgpu/dra/claim_plan.h"
#include "vgpu/manager/slot_manager.h"
#include "vgpu/status.h"

namespace vgpu::dra {

struct PreparedDevice {
  PlannedDevice planned;
  std::string cdi_id;  // "<kind>=<uid>-<k>"
};

struct PreparerOptions {
  std::string cdi_kind = "gpu.vgpu.io/claim";  // --cdi-kind when given
  std::string cdi_spec_dir;                    // --cdi-spec-dir (daemon/config: its one default)
};

class ClaimPreparer {
 public:
  ClaimPreparer(manager::SlotManager& slots, PreparerOptions options)
      : slots_(slots), options_(std::move(options)) {}

  // All or nothing: when one result cannot be served, the claim's slots made so far go again.
  Result<std::vector<PreparedDevice>> Prepare(const ClaimPlan& plan);
  Status Unprepare(const std::string& claim_uid);
  // Writes every prepared claim's spec again from its slots, which are the checkpoint's: at
  // start, since the spec directory is a tmpfs and a reboot empties it while the kubelet may
  // still hold the claim prepared. The first failure; the other specs are still written.
  Status RewriteSpecs();

  static std::string SlotName(const std::string& claim_uid, size_t index);
  std::string SpecPath(const std::string& claim_uid) const;

 private:
  Status WriteSpec(const std::string& claim_uid,
                   const std::vector<manager::CdiDevice>& devices) const;

  manager::SlotManager& slots_;
  PreparerOptions options_;
};

}  // namespace vgpu::dra
