#include "vgpu/dra/claim_service.h"

#include "vgpu/manager/log.h"

namespace vgpu::dra {

Result<nlohmann::json> ClaimService::ReadClaim(const ClaimRef& claim) {
  auto reply = api_.Call("GET", "/apis/resource.k8s.io/v1/namespaces/" + claim.namespace_ +
                                    "/resourceclaims/" + claim.name);
  if (!reply.ok()) {
    return reply.status().Annotate("reading claim " + claim.ToString());
  }
  if (reply->status == 404) {
    return NotFoundError("claim " + claim.ToString() + " is not in the API server");
  }
  if (reply->status != 200) {
    return UnavailableError("reading claim " + claim.ToString() + ": HTTP " +
                            std::to_string(reply->status) + ": " + ApiMessage(*reply));
  }
  auto doc = nlohmann::json::parse(reply->body, nullptr, false);
  if (doc.is_discarded()) {
    return UnavailableError("reading claim " + claim.ToString() + ": the answer is not JSON");
  }
  return doc;
}

Result<std::vector<PreparedDevice>> ClaimService::PrepareOne(const ClaimRef& claim) {
  // The claim is the API server's JSON: a shape nobody checked for (a type where another was
  // expected) makes nlohmann::json throw. That fails this claim, never the manager.
  try {
    return PrepareChecked(claim);
  } catch (const std::exception& e) {
    return InternalError("claim " + claim.ToString() + ": unexpected content: " + e.what());
  }
}

Result<std::vector<PreparedDevice>> ClaimService::PrepareChecked(const ClaimRef& claim) {
  if (claim.uid.empty() || claim.name.empty() || claim.namespace_.empty()) {
    return InvalidArgumentError("claim " + claim.ToString() +
                                ": namespace, name and uid are required");
  }
  auto doc = ReadClaim(claim);
  if (!doc.ok()) {
    return doc.status();
  }
  auto plan = PlanClaim(*doc, claim, plan_);
  if (!plan.ok()) {
    return plan.status();
  }
  return preparer_.Prepare(*plan);
}

std::vector<ClaimAnswer> ClaimService::Prepare(const std::vector<ClaimRef>& claims) {
  std::vector<ClaimAnswer> out;
  for (const ClaimRef& c : claims) {
    ClaimAnswer a{c.uid, {}, ""};
    auto devices = PrepareOne(c);
    if (devices.ok()) {
      a.devices = std::move(*devices);
      manager::LogInfo("event=dra_prepared claim=" + c.namespace_ + "/" + c.name +
                       " claim_uid=" + c.uid + " devices=" + std::to_string(a.devices.size()));
    } else {
      a.error = devices.status().ToString();
      manager::LogWarn("event=dra_prepare_failed claim=" + c.namespace_ + "/" + c.name +
                       " claim_uid=" + c.uid + " error=\"" + a.error + "\"");
    }
    out.push_back(std::move(a));
  }
  return out;
}

std::vector<ClaimAnswer> ClaimService::Unprepare(const std::vector<ClaimRef>& claims) {
  std::vector<ClaimAnswer> out;
  for (const ClaimRef& c : claims) {
    ClaimAnswer a{c.uid, {}, ""};
    Status s = c.uid.empty() ? InvalidArgumentError("claim " + c.ToString() + ": uid is required")
                             : preparer_.Unprepare(c.uid);
    if (!s.ok()) {
      a.error = s.ToString();
      manager::LogWarn("event=dra_unprepare_failed claim=" + c.namespace_ + "/" + c.name +
                       " claim_uid=" + c.uid + " error=\"" + a.error + "\"");
    } else {
      manager::LogInfo("event=dra_unprepared claim=" + c.namespace_ + "/" + c.name +
                       " claim_uid=" + c.uid);
    }
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace vgpu::dra
