// A local Kubernetes API server for the DRA plugin's tests (cpp-httplib on 127.0.0.1, an
// ephemeral port): serves ResourceClaims that the test puts in, stores ResourceSlices the
// plugin writes (list with a labelSelector, create, replace with resourceVersion checks like
// the real server's optimistic concurrency, delete), and answers GET nodes/<name>. Wipe()
// deletes every slice, as the kubelet does at its start.
#pragma once

#include <httplib.h>

#include <atomic>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace vgpu::testing {

class FakeApiServer {
 public:
  FakeApiServer();
  ~FakeApiServer();

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // A kubeconfig pointing at this server (no credentials), written to `path`.
  void WriteKubeconfig(const std::string& path) const;

  void PutClaim(const nlohmann::json& claim);  // keyed by metadata.namespace/name
  std::map<std::string, nlohmann::json> Slices();
  void Wipe();
  // Counts of the requests seen, by "METHOD kind" ("GET resourceclaims", "POST resourceslices").
  int Requests(const std::string& key);

 private:
  void Route();
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::map<std::string, nlohmann::json> claims_;  // "ns/name"
  std::map<std::string, nlohmann::json> slices_;  // name
  std::map<std::string, int> requests_;
  uint64_t next_version_ = 1;
};

// A ResourceClaim allocated by the scheduler: `results` are {request, device, shareID,
// consumedCapacity} objects (driver and pool filled in).
nlohmann::json MakeClaim(const std::string& ns, const std::string& name, const std::string& uid,
                         const std::string& driver, const std::string& pool, nlohmann::json results,
                         nlohmann::json config = nlohmann::json::array());

}  // namespace vgpu::testing
