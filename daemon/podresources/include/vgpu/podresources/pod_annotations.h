// Where the manager reads a pod's annotations (daemon/labels/pod_reader.h reads them from the
// Kubernetes API; tests inject their own).
#pragma once

#include <map>
#include <string>

#include "vgpu/status.h"

namespace vgpu::podresources {

using Annotations = std::map<std::string, std::string>;

class PodAnnotationSource {
 public:
  virtual ~PodAnnotationSource() = default;
  // NOT_FOUND for a pod the API does not know; UNAVAILABLE when the API cannot be reached.
  virtual Result<Annotations> Get(const std::string& pod_namespace,
                                  const std::string& pod_name) = 0;
};

}  // namespace vgpu::podresources
