// A pod's annotations from the Kubernetes API (GET /api/v1/namespaces/{ns}/pods/{name}; the
// ClusterRole grants `pods get`). The manager reads them when a container's slot is linked
// (PreStartContainer), for the settings a pod chooses by annotation (docs/operator-guide.md).
#pragma once

#include <chrono>
#include <memory>

#include "vgpu/labels/kube_endpoint.h"
#include "vgpu/podresources/pod_annotations.h"

namespace vgpu::labels {

std::unique_ptr<podresources::PodAnnotationSource> MakeKubePodReader(
    KubeEndpoint endpoint, std::chrono::milliseconds timeout = std::chrono::seconds(3));

// The annotations of a v1.Pod JSON document; an error names what is malformed.
Result<podresources::Annotations> ParsePodAnnotations(const std::string& pod_json);

}  // namespace vgpu::labels
