// Where the Kubernetes API is and how to authenticate to it: from the in-cluster service
// account (KUBERNETES_SERVICE_HOST/PORT + /var/run/secrets/kubernetes.io/serviceaccount/{token,
// ca.crt}, as client-go's rest.InClusterConfig reads them) or from a kubeconfig (--kubeconfig).
// Only what a node PATCH needs is read: the current context's cluster server and CA, and its
// user's bearer token or client certificate. Exec/auth-provider plugins are refused by name.
#pragma once

#include <string>

#include "vgpu/status.h"

namespace vgpu::labels {

struct KubeEndpoint {
  std::string server;  // https://host:port (http:// accepted for tests)
  std::string ca_file;
  std::string ca_pem;  // certificate-authority-data, decoded
  bool insecure_skip_tls_verify = false;
  std::string token;
  std::string client_cert_file, client_key_file;
  std::string client_cert_pem, client_key_pem;  // client-*-data, decoded
};

struct InClusterPaths {
  std::string service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount";
};

// NOT_FOUND when not running in a pod (no KUBERNETES_SERVICE_HOST or no token).
Result<KubeEndpoint> InClusterEndpoint(const InClusterPaths& paths = {});
Result<KubeEndpoint> KubeconfigEndpoint(const std::string& path);
// Parses kubeconfig text; relative file paths resolve against base_dir.
Result<KubeEndpoint> ParseKubeconfig(const std::string& yaml_text, const std::string& base_dir);

// RFC 4648 base64 (kubeconfig *-data fields); whitespace ignored, bad input is an error.
Result<std::string> DecodeBase64(std::string_view text);

}  // namespace vgpu::labels
