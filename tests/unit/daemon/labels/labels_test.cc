// Node labels against a local HTTP(S) endpoint that speaks the Kubernetes node PATCH protocol:
// PATCH /api/v1/nodes/{name}, strategic-merge or merge patch content types, bearer token,
// metav1.Status bodies on errors, and a merge that applies {"metadata":{"labels":...}}.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "vgpu/labels/kube_endpoint.h"
#include "vgpu/labels/node_labeler.h"

namespace vgpu::labels {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

json StatusBody(int code, const std::string& reason, const std::string& message) {
  return {{"kind", "Status"},   {"apiVersion", "v1"}, {"status", "Failure"},
          {"message", message}, {"reason", reason},   {"code", code}};
}

class FakeApiServer {
 public:
  explicit FakeApiServer(httplib::Server* server) : svr_(server) {
    nodes_["node-1"] = {
        {"kind", "Node"},
        {"apiVersion", "v1"},
        {"metadata",
         {{"name", "node-1"}, {"labels", {{"kubernetes.io/os", "linux"}, {"stale", "x"}}}}}};
    svr_->Patch(R"(/api/v1/nodes/([^/]+))",
                [this](const httplib::Request& req, httplib::Response& res) { Handle(req, res); });
  }
  int Start() {
    port_ = svr_->bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { svr_->listen_after_bind(); });
    while (!svr_->is_running()) std::this_thread::sleep_for(1ms);
    return port_;
  }
  ~FakeApiServer() {
    svr_->stop();
    if (thread_.joinable()) thread_.join();
  }
  json Labels(const std::string& node) {
    std::lock_guard<std::mutex> l(mu_);
    return nodes_[node]["metadata"]["labels"];
  }
  std::atomic<int> fail_first{0};
  std::atomic<int> requests{0};
  std::string token = "sa-token-123";

 private:
  void Handle(const httplib::Request& req, httplib::Response& res) {
    ++requests;
    auto reply = [&](int code, const json& body) {
      res.status = code;
      res.set_content(body.dump(), "application/json");
    };
    const std::string ct = req.get_header_value("Content-Type");
    if (ct != "application/strategic-merge-patch+json" && ct != "application/merge-patch+json") {
      return reply(415, StatusBody(415, "UnsupportedMediaType",
                                   "the body of the request was in an unknown format"));
    }
    if (req.get_header_value("Authorization") != "Bearer " + token) {
      return reply(401, StatusBody(401, "Unauthorized", "Unauthorized"));
    }
    if (fail_first > 0) {
      --fail_first;
      return reply(503, StatusBody(503, "ServiceUnavailable", "etcd leader changed"));
    }
    std::lock_guard<std::mutex> l(mu_);
    const std::string name = req.matches[1];
    if (!nodes_.count(name)) {
      return reply(404, StatusBody(404, "NotFound", "nodes \"" + name + "\" not found"));
    }
    json patch = json::parse(req.body, nullptr, false);
    if (!patch.is_object() || !patch["metadata"].is_object() ||
        !patch["metadata"]["labels"].is_object() || patch.size() != 1 ||
        patch["metadata"].size() != 1) {
      return reply(422, StatusBody(422, "Invalid", "unexpected patch: " + req.body));
    }
    json& labels = nodes_[name]["metadata"]["labels"];
    for (auto& [k, v] : patch["metadata"]["labels"].items()) {
      if (v.is_null())
        labels.erase(k);
      else
        labels[k] = v;
    }
    reply(200, nodes_[name]);
  }

  httplib::Server* svr_;
  std::mutex mu_;
  std::map<std::string, json> nodes_;
  int port_ = 0;
  std::thread thread_;
};

KubeEndpoint Plain(const std::string& server, const std::string& token) {
  KubeEndpoint ep;
  ep.server = server;
  ep.token = token;
  return ep;
}

LabelerOptions FastRetries(std::vector<std::chrono::milliseconds>* sleeps) {
  LabelerOptions o;
  o.max_attempts = 4;
  o.initial_backoff = 100ms;
  o.max_backoff = 250ms;
  o.request_timeout = 5s;
  o.sleep = [sleeps](std::chrono::milliseconds d) { sleeps->push_back(d); };
  return o;
}

TEST(NodeLabelsFlagTest, ParsesAndValidates) {
  auto l = ParseNodeLabelsFlag("vgpu.io/mode=shim,vgpu.io/driver=580.159.04,plain=");
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  EXPECT_EQ(l->at("vgpu.io/mode"), "shim");
  EXPECT_EQ(l->at("plain"), "");
  for (const char* bad : {"novalue", "Bad_Prefix.io/x=y", "vgpu.io/-x=y", "k=has space", "k=-lead",
                          "vgpu.io/x="
                          "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}) {
    auto r = ParseNodeLabelsFlag(bad);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(r.status().message().rfind("--node-labels", 0), 0u) << r.status().ToString();
  }
}

TEST(NodeLabelsFlagTest, PatchBodyIsAStrategicMergeOfLabels) {
  LabelSet l = {{"a", "1"}, {"gone", std::nullopt}};
  EXPECT_EQ(json::parse(LabelPatchBody(l)),
            json::parse(R"({"metadata":{"labels":{"a":"1","gone":null}}})"));
}

TEST(KubeconfigTest, ReadsCurrentContextClusterAndUser) {
  const std::string ca_b64 =
      "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==";  // "-----BEGIN CERTIFICATE-----\n"
  auto ep = ParseKubeconfig(R"(apiVersion: v1
kind: Config
current-context: prod
clusters:
- name: dev
  cluster: {server: "https://dev:6443"}
- name: prod-cluster
  cluster:
    server: https://10.0.0.1:6443/
    certificate-authority-data: )" +
                                ca_b64 + R"(
contexts:
- name: prod
  context: {cluster: prod-cluster, user: admin}
users:
- name: admin
  user:
    client-certificate: certs/admin.crt
    client-key: /abs/admin.key
    token: abc.def
)",
                            "/etc/kube");
  ASSERT_TRUE(ep.ok()) << ep.status().ToString();
  EXPECT_EQ(ep->server, "https://10.0.0.1:6443");
  EXPECT_EQ(ep->ca_pem, "-----BEGIN CERTIFICATE-----\n");
  EXPECT_EQ(ep->token, "abc.def");
  EXPECT_EQ(ep->client_cert_file, "/etc/kube/certs/admin.crt");
  EXPECT_EQ(ep->client_key_file, "/abs/admin.key");
}

TEST(KubeconfigTest, ErrorsAreSpecific) {
  EXPECT_NE(ParseKubeconfig("a: [b", ".").status().message().find("--kubeconfig"),
            std::string::npos);
  EXPECT_NE(ParseKubeconfig("kind: Config\n", ".").status().message().find("no current-context"),
            std::string::npos);
  EXPECT_NE(ParseKubeconfig("current-context: x\n", ".").status().message().find("context 'x'"),
            std::string::npos);
  auto exec = ParseKubeconfig(R"(current-context: c
contexts: [{name: c, context: {cluster: k, user: u}}]
clusters: [{name: k, cluster: {server: "https://k"}}]
users: [{name: u, user: {exec: {command: aws}}}]
)",
                              ".");
  EXPECT_EQ(exec.status().code(), StatusCode::kUnimplemented);
  EXPECT_FALSE(DecodeBase64("ab$c").ok());
  EXPECT_EQ(DecodeBase64("aGVsbG8=").value(), "hello");
  EXPECT_EQ(DecodeBase64("aGVs\nbG8").value(), "hello");
}

TEST(InClusterTest, ReadsServiceAccountAndEnvironment) {
  char tmpl[] = "/tmp/vgpu-sa-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  std::ofstream(dir + "/token") << "tok\n";
  setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
  setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  auto ep = InClusterEndpoint({dir});
  ASSERT_TRUE(ep.ok()) << ep.status().ToString();
  EXPECT_EQ(ep->server, "https://10.96.0.1:443");
  EXPECT_EQ(ep->token, "tok");
  EXPECT_EQ(ep->ca_file, dir + "/ca.crt");
  unsetenv("KUBERNETES_SERVICE_HOST");
  EXPECT_EQ(InClusterEndpoint({dir}).status().code(), StatusCode::kNotFound);
  std::filesystem::remove_all(dir);
}

TEST(NodeLabelerTest, PatchesLabelsAndRemovesNulls) {
  httplib::Server svr;
  FakeApiServer api(&svr);
  const int port = api.Start();
  std::vector<std::chrono::milliseconds> sleeps;
  NodeLabeler labeler(Plain("http://127.0.0.1:" + std::to_string(port), api.token),
                      FastRetries(&sleeps));
  PatchOutcome out;
  Status s = labeler.Apply("node-1", {{"vgpu.io/mode", "module"}, {"stale", std::nullopt}}, &out);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(out.attempts, 1);
  EXPECT_EQ(out.http_status, 200);
  EXPECT_EQ(api.Labels("node-1"),
            json::parse(R"({"kubernetes.io/os":"linux","vgpu.io/mode":"module"})"));
  // Rerunning is harmless (a PATCH of the same labels is idempotent).
  ASSERT_TRUE(labeler.Apply("node-1", {{"vgpu.io/mode", "module"}}).ok());
  EXPECT_TRUE(sleeps.empty());
}

TEST(NodeLabelerTest, RetriesTransientFailuresWithGrowingBackoff) {
  httplib::Server svr;
  FakeApiServer api(&svr);
  const int port = api.Start();
  api.fail_first = 3;
  std::vector<std::chrono::milliseconds> sleeps;
  NodeLabeler labeler(Plain("http://127.0.0.1:" + std::to_string(port), api.token),
                      FastRetries(&sleeps));
  PatchOutcome out;
  ASSERT_TRUE(labeler.Apply("node-1", {{"vgpu.io/mode", "shim"}}, &out).ok());
  EXPECT_EQ(out.attempts, 4);
  EXPECT_EQ(sleeps, (std::vector<std::chrono::milliseconds>{100ms, 200ms, 250ms}));
  EXPECT_EQ(api.Labels("node-1")["vgpu.io/mode"], "shim");
}

TEST(NodeLabelerTest, PermanentErrorsAreNotRetriedAndCarryTheApiMessage) {
  httplib::Server svr;
  FakeApiServer api(&svr);
  const int port = api.Start();
  std::vector<std::chrono::milliseconds> sleeps;
  const std::string server = "http://127.0.0.1:" + std::to_string(port);
  NodeLabeler labeler(Plain(server, api.token), FastRetries(&sleeps));
  Status missing = labeler.Apply("node-404", {{"a", "b"}});
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_NE(missing.message().find("nodes \"node-404\" not found"), std::string::npos)
      << missing.ToString();
  NodeLabeler wrong_token(Plain(server, "nope"), FastRetries(&sleeps));
  EXPECT_EQ(wrong_token.Apply("node-1", {{"a", "b"}}).code(), StatusCode::kUnauthenticated);
  EXPECT_TRUE(sleeps.empty());
  EXPECT_EQ(api.requests, 2);
  EXPECT_EQ(labeler.Apply("node-1", {{"bad key!", "b"}}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(api.requests, 2);  // refused before sending
}

TEST(NodeLabelerTest, AbsentApiIsUnavailableNotACrash) {
  // A port nothing listens on: bind (no listen), note the port, close.
  int port = 0;
  {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    port = ntohs(addr.sin_port);
    close(fd);
  }
  std::vector<std::chrono::milliseconds> sleeps;
  NodeLabeler labeler(Plain("http://127.0.0.1:" + std::to_string(port), "t"), FastRetries(&sleeps));
  PatchOutcome out;
  Status s = labeler.Apply("node-1", {{"a", "b"}}, &out);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(out.attempts, 4);
  EXPECT_EQ(out.http_status, 0);
  EXPECT_NE(s.message().find("after 4 attempts"), std::string::npos) << s.ToString();
}

TEST(NodeLabelerTest, HttpsWithCaFromKubeconfigData) {
  if (std::system("command -v openssl >/dev/null") != 0) GTEST_SKIP() << "no openssl CLI";
  char tmpl[] = "/tmp/vgpu-tls-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string gen =
      "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 "
      "-addext subjectAltName=IP:127.0.0.1 -keyout " +
      dir + "/key.pem -out " + dir + "/cert.pem 2>/dev/null && base64 -w0 " + dir + "/cert.pem > " +
      dir + "/cert.b64";
  ASSERT_EQ(std::system(gen.c_str()), 0);
  httplib::SSLServer svr((dir + "/cert.pem").c_str(), (dir + "/key.pem").c_str());
  ASSERT_TRUE(svr.is_valid());
  FakeApiServer api(&svr);
  const int port = api.Start();
  std::ifstream b64(dir + "/cert.b64");
  std::string ca_data((std::istreambuf_iterator<char>(b64)), {});
  const std::string kubeconfig = dir + "/kubeconfig";
  std::ofstream(kubeconfig) << "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                            << "clusters:\n- name: k\n  cluster:\n    server: https://127.0.0.1:"
                            << port << "\n    certificate-authority-data: " << ca_data << "\n"
                            << "contexts:\n- name: c\n  context:\n    cluster: k\n    user: u\n"
                            << "users:\n- name: u\n  user:\n    token: " << api.token << "\n";
  auto ep = KubeconfigEndpoint(kubeconfig);
  ASSERT_TRUE(ep.ok()) << ep.status().ToString();
  std::vector<std::chrono::milliseconds> sleeps;
  Status s = NodeLabeler(*ep, FastRetries(&sleeps)).Apply("node-1", {{"vgpu.io/tls", "yes"}});
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(api.Labels("node-1")["vgpu.io/tls"], "yes");
  // Without the CA the server is not trusted: a transport error, retried, then UNAVAILABLE.
  KubeEndpoint untrusted = *ep;
  untrusted.ca_pem.clear();
  untrusted.ca_file = dir + "/key.pem";  // not a CA bundle
  sleeps.clear();
  EXPECT_EQ(NodeLabeler(untrusted, FastRetries(&sleeps)).Apply("node-1", {{"a", "b"}}).code(),
            StatusCode::kUnavailable);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace vgpu::labels
