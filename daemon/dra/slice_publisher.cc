#include "vgpu/dra/slice_publisher.h"

#include <map>

#include "vgpu/manager/log.h"

namespace vgpu::dra {
namespace {

using nlohmann::json;
constexpr const char* kSlices = "/apis/resource.k8s.io/v1/resourceslices";

Status HttpError(const std::string& what, const HttpReply& r) {
  std::string msg = what + ": HTTP " + std::to_string(r.status) + ": " + ApiMessage(r);
  if (r.status == 403) {
    return PermissionDeniedError(msg + " (does the ClusterRole allow resourceslices?)");
  }
  return UnavailableError(msg);
}

json WithoutGeneration(std::vector<json> slices) {
  for (json& s : slices) {
    s["spec"]["pool"].erase("generation");
  }
  return slices;
}

}  // namespace

SlicePublisher::SlicePublisher(KubeApi& api, const manager::SlotManager& slots,
                               PublisherOptions options)
    : api_(api), slots_(slots), options_(std::move(options)) {}

SlicePublisher::~SlicePublisher() { Stop(); }

Result<std::vector<json>> SlicePublisher::ListOurs() {
  auto reply = api_.Call("GET", std::string(kSlices) + "?labelSelector=" + kNodeLabel + "%3D" +
                                    options_.slices.node_name);
  if (!reply.ok()) {
    return reply.status();
  }
  if (reply->status != 200) {
    return HttpError("listing ResourceSlices", *reply);
  }
  auto doc = json::parse(reply->body, nullptr, false);
  if (doc.is_discarded() || !doc.contains("items") || !doc["items"].is_array()) {
    return UnavailableError("listing ResourceSlices: the answer is not a list");
  }
  std::vector<json> ours;
  for (json& s : doc["items"]) {
    if (s.contains("spec") && s["spec"].value("driver", "") == options_.slices.driver_name) {
      ours.push_back(std::move(s));
    }
  }
  return ours;
}

Result<std::string> SlicePublisher::SyncOnce() {
  std::lock_guard lock(mu_);
  // What the API server lists is not ours to trust: a shape nlohmann::json refuses fails this
  // pass (retried at the next resync), never the manager.
  try {
    return SyncLocked();
  } catch (const std::exception& e) {
    return UnavailableError(std::string("ResourceSlices: unexpected content: ") + e.what());
  }
}

Result<std::string> SlicePublisher::SyncLocked() {
  auto existing = ListOurs();
  if (!existing.ok()) {
    return existing.status();
  }
  std::map<std::string, json> by_name;
  for (json& s : *existing) {
    by_name[s["metadata"].value("name", "")] = std::move(s);
  }
  if (generation_ == 0) {
    for (const auto& [name, s] : by_name) {
      generation_ = std::max<int64_t>(generation_, s["spec"]["pool"].value("generation", 0));
    }
  }
  std::vector<json> desired =
      BuildSlices(slots_.gpus(), slots_.GpuHealth(), options_.slices, generation_);
  json content = WithoutGeneration(desired);
  if (content != last_content_) {
    ++generation_;  // new content, or the first pass of this run
    last_content_ = content;
    desired = BuildSlices(slots_.gpus(), slots_.GpuHealth(), options_.slices, generation_);
  }
  int created = 0, updated = 0, deleted = 0;
  for (json& want : desired) {
    std::string name = want["metadata"]["name"];
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      auto r = api_.Call("POST", kSlices, want.dump());
      if (!r.ok()) {
        return r.status();
      }
      if (r->status != 201 && r->status != 200) {
        return HttpError("creating ResourceSlice " + name, *r);
      }
      ++created;
      continue;
    }
    json have = std::move(it->second);
    by_name.erase(it);
    if (have["spec"] == want["spec"] &&
        have["metadata"].value("labels", json()) == want["metadata"]["labels"]) {
      continue;
    }
    want["metadata"]["resourceVersion"] = have["metadata"].value("resourceVersion", "");
    auto r = api_.Call("PUT", std::string(kSlices) + "/" + name, want.dump());
    if (!r.ok()) {
      return r.status();
    }
    if (r->status != 200) {
      return HttpError("replacing ResourceSlice " + name, *r);
    }
    ++updated;
  }
  for (const auto& [name, s] : by_name) {
    auto r = api_.Call("DELETE", std::string(kSlices) + "/" + name);
    if (!r.ok()) {
      return r.status();
    }
    if (r->status != 200 && r->status != 202 && r->status != 404) {
      return HttpError("deleting ResourceSlice " + name, *r);
    }
    ++deleted;
  }
  if (created + updated + deleted > 0) {
    ++writes_;
  }
  return "created=" + std::to_string(created) + " updated=" + std::to_string(updated) +
         " deleted=" + std::to_string(deleted) + " generation=" + std::to_string(generation_);
}

void SlicePublisher::Start() {
  stop_ = false;
  thread_ = std::thread([this] { Run(); });
}

void SlicePublisher::Stop() {
  stop_ = true;
  if (thread_.joinable()) {
    thread_.join();
  }
}

void SlicePublisher::Run() {
  using clock = std::chrono::steady_clock;
  uint64_t seen = 0;
  auto next = clock::now();
  std::string last_error;
  while (!stop_) {
    uint64_t gen = slots_.WaitForChange(seen, std::chrono::milliseconds(200));
    if (gen == seen && clock::now() < next) {
      continue;
    }
    seen = gen;
    auto done = SyncOnce();
    if (!done.ok()) {
      if (done.status().ToString() != last_error) {
        manager::LogWarn("event=dra_slices_sync_failed error=\"" + done.status().ToString() +
                         "\" retry_in_ms=" + std::to_string(options_.resync.count()));
      }
      last_error = done.status().ToString();
    } else {
      if (done->find("created=0 updated=0 deleted=0") == std::string::npos) {
        manager::LogInfo("event=dra_slices_published node=" + options_.slices.node_name + " " +
                         *done);
      }
      last_error.clear();
    }
    next = clock::now() + options_.resync;
  }
}

}  // namespace vgpu::dra
