// The kubelet's pod-resources API (v1 List), the only identity-safe join from device IDs to
// (pod, container): docs/reference/device-plugin-api.md §3, §4.2 "Lessons". It lists a
// container's IDs only after Allocate returned (§2.5), so the manager reads it from
// PreStartContainer onward and for reconciliation, never inside Allocate.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "vgpu/status.h"

namespace vgpu::podresources {

struct ContainerAssignment {
  std::string pod_namespace;
  std::string pod_name;
  std::string container;
  std::map<std::string, std::vector<std::string>> device_ids;  // resource name -> IDs
};

class PodResourcesSource {
 public:
  virtual ~PodResourcesSource() = default;
  virtual Result<std::vector<ContainerAssignment>> List() = 0;
};

// gRPC client of /v1.PodResourcesLister/List on a unix socket. Each List dials afresh when
// the previous channel broke: the kubelet re-creates the socket when it restarts.
std::unique_ptr<PodResourcesSource> MakeGrpcPodResourcesClient(
    std::string socket_path, std::chrono::milliseconds timeout = std::chrono::seconds(5));

}  // namespace vgpu::podresources
