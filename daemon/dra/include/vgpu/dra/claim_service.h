// The claim side of NodePrepareResources / NodeUnprepareResources, free of gRPC: for each
// claim the kubelet names, GET it from the API server, check it (claim_plan.h) and prepare it
// (claim_preparer.h). Every claim gets its own answer, an error string for that claim alone:
// one bad claim never fails the others, and nothing here throws or aborts.
#pragma once

#include <string>
#include <vector>

#include "vgpu/dra/claim_plan.h"
#include "vgpu/dra/claim_preparer.h"
#include "vgpu/dra/kube_client.h"
#include "vgpu/status.h"

namespace vgpu::dra {

struct ClaimAnswer {
  std::string uid;
  std::vector<PreparedDevice> devices;
  std::string error;  // empty: prepared (or unprepared)
};

class ClaimService {
 public:
  ClaimService(KubeApi& api, ClaimPreparer& preparer, PlanOptions plan)
      : api_(api), preparer_(preparer), plan_(std::move(plan)) {}

  std::vector<ClaimAnswer> Prepare(const std::vector<ClaimRef>& claims);
  std::vector<ClaimAnswer> Unprepare(const std::vector<ClaimRef>& claims);

 private:
  Result<std::vector<PreparedDevice>> PrepareOne(const ClaimRef& claim);
  Result<std::vector<PreparedDevice>> PrepareChecked(const ClaimRef& claim);
  Result<nlohmann::json> ReadClaim(const ClaimRef& claim);

  KubeApi& api_;
  ClaimPreparer& preparer_;
  PlanOptions plan_;
};

}  // namespace vgpu::dra
