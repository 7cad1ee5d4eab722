#include "vgpu/labels/kube_endpoint.h"

#include <yaml.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "vgpu/text.h"

namespace vgpu::labels {
namespace {

using nlohmann::json;

// libyaml's document tree -> JSON with every scalar as a string (kubeconfig needs no more).
json NodeToJson(yaml_document_t* doc, yaml_node_t* node, int depth) {
  if (node == nullptr || depth > 64) return nullptr;
  switch (node->type) {
    case YAML_SCALAR_NODE:
      return std::string(reinterpret_cast<const char*>(node->data.scalar.value),
                         node->data.scalar.length);
    case YAML_SEQUENCE_NODE: {
      json arr = json::array();
      for (yaml_node_item_t* it = node->data.sequence.items.start;
           it < node->data.sequence.items.top; ++it) {
        arr.push_back(NodeToJson(doc, yaml_document_get_node(doc, *it), depth + 1));
      }
      return arr;
    }
    case YAML_MAPPING_NODE: {
      json obj = json::object();
      for (yaml_node_pair_t* p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top;
           ++p) {
        json key = NodeToJson(doc, yaml_document_get_node(doc, p->key), depth + 1);
        if (key.is_string()) {
          obj[key.get<std::string>()] =
              NodeToJson(doc, yaml_document_get_node(doc, p->value), depth + 1);
        }
      }
      return obj;
    }
    default:
      return nullptr;
  }
}

Result<json> ParseYaml(const std::string& text) {
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser)) return InternalError("yaml parser init");
  yaml_parser_set_input_string(&parser, reinterpret_cast<const unsigned char*>(text.data()),
                               text.size());
  yaml_document_t doc;
  if (!yaml_parser_load(&parser, &doc)) {
    std::string why = parser.problem ? parser.problem : "unknown error";
    const size_t line = parser.problem_mark.line + 1;
    yaml_parser_delete(&parser);
    return InvalidArgumentError("line " + std::to_string(line) + ": " + why);
  }
  json out = NodeToJson(&doc, yaml_document_get_root_node(&doc), 0);
  yaml_document_delete(&doc);
  yaml_parser_delete(&parser);
  return out;
}

// Finds {name: N, <field>: {...}} in a kubeconfig list (clusters, users, contexts).
const json* Named(const json& root, const char* list, const std::string& name, const char* field) {
  auto it = root.find(list);
  if (it == root.end() || !it->is_array()) return nullptr;
  for (const json& e : *it) {
    if (e.is_object() && e.value("name", json()) == name && e.contains(field) &&
        e[field].is_object()) {
      return &e[field];
    }
  }
  return nullptr;
}

std::string Str(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string Resolve(const std::string& base_dir, const std::string& p) {
  if (p.empty() || p[0] == '/') return p;
  return base_dir + "/" + p;
}

}  // namespace

Result<std::string> DecodeBase64(std::string_view text) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0, pad = 0;
  for (char c : text) {
    int v;
    if (c >= 'A' && c <= 'Z')
      v = c - 'A';
    else if (c >= 'a' && c <= 'z')
      v = c - 'a' + 26;
    else if (c >= '0' && c <= '9')
      v = c - '0' + 52;
    else if (c == '+')
      v = 62;
    else if (c == '/')
      v = 63;
    else if (c == '=') {
      ++pad;
      continue;
    } else if (c == '\n' || c == '\r' || c == ' ' || c == '\t')
      continue;
    else
      return InvalidArgumentError("base64: unexpected character");
    if (pad) return InvalidArgumentError("base64: data after padding");
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  if (bits >= 6 || pad > 2) return InvalidArgumentError("base64: truncated");
  return out;
}

Result<KubeEndpoint> InClusterEndpoint(const InClusterPaths& paths) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || *host == '\0') {
    return NotFoundError("not in a cluster: KUBERNETES_SERVICE_HOST is not set");
  }
  KubeEndpoint ep;
  std::string h(host);
  if (h.find(':') != std::string::npos) h = "[" + h + "]";  // IPv6 service address
  ep.server = "https://" + h + ":" + (port && *port ? port : "443");
  Result<std::string> token = ReadFileToString(paths.service_account_dir + "/token");
  if (!token.ok()) return token.status().Annotate("in-cluster service account");
  ep.token = *token;
  while (!ep.token.empty() && (ep.token.back() == '\n' || ep.token.back() == '\r')) {
    ep.token.pop_back();
  }
  ep.ca_file = paths.service_account_dir + "/ca.crt";
  return ep;
}

Result<KubeEndpoint> ParseKubeconfig(const std::string& text, const std::string& base_dir) {
  Result<json> root = ParseYaml(text);
  if (!root.ok()) return root.status().Annotate("--kubeconfig");
  if (!root->is_object()) return InvalidArgumentError("--kubeconfig: not a mapping");
  const std::string context_name = Str(*root, "current-context");
  if (context_name.empty()) return InvalidArgumentError("--kubeconfig: no current-context");
  const json* context = Named(*root, "contexts", context_name, "context");
  if (context == nullptr) {
    return InvalidArgumentError("--kubeconfig: context '" + context_name + "' not found");
  }
  const std::string cluster_name = Str(*context, "cluster");
  const json* cluster = Named(*root, "clusters", cluster_name, "cluster");
  if (cluster == nullptr) {
    return InvalidArgumentError("--kubeconfig: cluster '" + cluster_name + "' not found");
  }
  KubeEndpoint ep;
  ep.server = Str(*cluster, "server");
  if (ep.server.rfind("https://", 0) != 0 && ep.server.rfind("http://", 0) != 0) {
    return InvalidArgumentError("--kubeconfig: cluster '" + cluster_name +
                                "': server must be an http(s) URL");
  }
  while (!ep.server.empty() && ep.server.back() == '/') ep.server.pop_back();
  ep.ca_file = Resolve(base_dir, Str(*cluster, "certificate-authority"));
  if (std::string data = Str(*cluster, "certificate-authority-data"); !data.empty()) {
    Result<std::string> pem = DecodeBase64(data);
    if (!pem.ok()) return pem.status().Annotate("--kubeconfig: certificate-authority-data");
    ep.ca_pem = *pem;
  }
  ep.insecure_skip_tls_verify = Str(*cluster, "insecure-skip-tls-verify") == "true";

  const std::string user_name = Str(*context, "user");
  if (const json* user = Named(*root, "users", user_name, "user")) {
    if (user->contains("exec") || user->contains("auth-provider")) {
      return UnimplementedError("--kubeconfig: user '" + user_name +
                                "' uses an exec/auth-provider plugin; give a token or client "
                                "certificate");
    }
    ep.token = Str(*user, "token");
    if (std::string file = Str(*user, "tokenFile"); ep.token.empty() && !file.empty()) {
      Result<std::string> token = ReadFileToString(Resolve(base_dir, file));
      if (!token.ok()) return token.status().Annotate("--kubeconfig: tokenFile");
      ep.token = *token;
      while (!ep.token.empty() && ep.token.back() == '\n') ep.token.pop_back();
    }
    ep.client_cert_file = Resolve(base_dir, Str(*user, "client-certificate"));
    ep.client_key_file = Resolve(base_dir, Str(*user, "client-key"));
    for (auto [key, out] : {std::pair{"client-certificate-data", &ep.client_cert_pem},
                            std::pair{"client-key-data", &ep.client_key_pem}}) {
      if (std::string data = Str(*user, key); !data.empty()) {
        Result<std::string> pem = DecodeBase64(data);
        if (!pem.ok()) return pem.status().Annotate(std::string("--kubeconfig: ") + key);
        *out = *pem;
      }
    }
  }
  return ep;
}

Result<KubeEndpoint> KubeconfigEndpoint(const std::string& path) {
  Result<std::string> text = ReadFileToString(path);
  if (!text.ok()) return text.status().Annotate("--kubeconfig");
  const size_t slash = path.rfind('/');
  return ParseKubeconfig(*text, slash == std::string::npos ? "." : path.substr(0, slash));
}

}  // namespace vgpu::labels
