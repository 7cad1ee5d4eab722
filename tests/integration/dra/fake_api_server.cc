#include "fake_api_server.h"

#include <chrono>
#include <fstream>

namespace vgpu::testing {

using nlohmann::json;

FakeApiServer::FakeApiServer() {
  // cpp-httplib writes a response's headers and body in two send()s and leaves Nagle on by
  // default: the body then waits for the client's delayed ACK of the headers, ~40 ms on Linux
  // loopback, on every keep-alive request. A real API server (Go's net/http) writes with Nagle
  // off, so the fixture must too, or every prepare measures the fixture's 40 ms.
  server_.set_tcp_nodelay(true);
  // cpp-httplib also closes a keep-alive connection after 5 requests; a real API server keeps it
  // until it is idle, so the client's reconnects would be the fixture's cost too.
  server_.set_keep_alive_max_count(1000000);
  Route();
  port_ = server_.bind_to_any_port("127.0.0.1");
  thread_ = std::thread([this] { server_.listen_after_bind(); });
  while (!server_.is_running()) {  // the socket already listens; this is only tidy
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

FakeApiServer::~FakeApiServer() {
  server_.stop();
  thread_.join();
}

void FakeApiServer::WriteKubeconfig(const std::string& path) const {
  std::ofstream(path) << "apiVersion: v1\nkind: Config\ncurrent-context: test\n"
                      << "clusters:\n- name: test\n  cluster:\n    server: " << url() << "\n"
                      << "contexts:\n- name: test\n  context:\n    cluster: test\n    user: test\n"
                      << "users:\n- name: test\n  user:\n    token: test-token\n";
}

void FakeApiServer::PutClaim(const json& claim) {
  std::lock_guard lock(mu_);
  claims_[claim["metadata"]["namespace"].get<std::string>() + "/" +
          claim["metadata"]["name"].get<std::string>()] = claim;
}

std::map<std::string, json> FakeApiServer::Slices() {
  std::lock_guard lock(mu_);
  return slices_;
}

void FakeApiServer::Wipe() {
  std::lock_guard lock(mu_);
  slices_.clear();
}

int FakeApiServer::Requests(const std::string& key) {
  std::lock_guard lock(mu_);
  return requests_[key];
}

void FakeApiServer::Route() {
  auto reply = [](httplib::Response& res, int status, const json& body) {
    res.status = status;
    res.set_content(body.dump(), "application/json");
  };
  auto status_body = [](int code, const std::string& msg) {
    return json{{"kind", "Status"}, {"code", code}, {"message", msg}};
  };
  server_.Get(R"(/apis/resource.k8s.io/v1/namespaces/([^/]+)/resourceclaims/([^/]+))",
              [=, this](const httplib::Request& req, httplib::Response& res) {
                std::lock_guard lock(mu_);
                ++requests_["GET resourceclaims"];
                auto it = claims_.find(req.matches[1].str() + "/" + req.matches[2].str());
                if (it == claims_.end()) {
                  return reply(res, 404, status_body(404, "resourceclaims not found"));
                }
                reply(res, 200, it->second);
              });
  server_.Get(R"(/api/v1/nodes/([^/]+))", [=](const httplib::Request& req, httplib::Response& res) {
    reply(res, 200, {{"metadata", {{"name", req.matches[1].str()}, {"uid", "node-uid-1"}}}});
  });
  server_.Get("/apis/resource.k8s.io/v1/resourceslices",
              [=, this](const httplib::Request& req, httplib::Response& res) {
                std::lock_guard lock(mu_);
                ++requests_["GET resourceslices"];
                std::string sel = req.get_param_value("labelSelector");
                std::string key = sel.substr(0, sel.find('='));
                std::string value = sel.substr(sel.find('=') + 1);
                json items = json::array();
                for (const auto& [name, s] : slices_) {
                  const json& labels = s["metadata"].value("labels", json::object());
                  if (sel.empty() || (labels.contains(key) && labels[key] == value)) {
                    items.push_back(s);
                  }
                }
                reply(res, 200, {{"kind", "ResourceSliceList"}, {"items", items}});
              });
  server_.Post("/apis/resource.k8s.io/v1/resourceslices",
               [=, this](const httplib::Request& req, httplib::Response& res) {
                 std::lock_guard lock(mu_);
                 ++requests_["POST resourceslices"];
                 json s = json::parse(req.body, nullptr, false);
                 if (s.is_discarded() || !s.contains("metadata")) {
                   return reply(res, 400, status_body(400, "bad body"));
                 }
                 std::string name = s["metadata"].value("name", "");
                 if (slices_.count(name) != 0) {
                   return reply(res, 409, status_body(409, "already exists"));
                 }
                 s["metadata"]["resourceVersion"] = std::to_string(next_version_++);
                 s["metadata"]["uid"] = "slice-uid-" + name;
                 slices_[name] = s;
                 reply(res, 201, s);
               });
  server_.Put(R"(/apis/resource.k8s.io/v1/resourceslices/([^/]+))",
              [=, this](const httplib::Request& req, httplib::Response& res) {
                std::lock_guard lock(mu_);
                ++requests_["PUT resourceslices"];
                json s = json::parse(req.body, nullptr, false);
                auto it = slices_.find(req.matches[1].str());
                if (it == slices_.end()) {
                  return reply(res, 404, status_body(404, "not found"));
                }
                if (s.is_discarded() || s["metadata"].value("resourceVersion", "") !=
                                            it->second["metadata"]["resourceVersion"]) {
                  return reply(res, 409, status_body(409, "the object has been modified"));
                }
                s["metadata"]["resourceVersion"] = std::to_string(next_version_++);
                it->second = s;
                reply(res, 200, s);
              });
  server_.Delete(R"(/apis/resource.k8s.io/v1/resourceslices/([^/]+))",
                 [=, this](const httplib::Request& req, httplib::Response& res) {
                   std::lock_guard lock(mu_);
                   ++requests_["DELETE resourceslices"];
                   if (slices_.erase(req.matches[1].str()) == 0) {
                     return reply(res, 404, status_body(404, "not found"));
                   }
                   reply(res, 200, status_body(200, "deleted"));
                 });
}

json MakeClaim(const std::string& ns, const std::string& name, const std::string& uid,
               const std::string& driver, const std::string& pool, json results, json config) {
  for (json& r : results) {
    r["driver"] = driver;
    r["pool"] = pool;
    if (!r.contains("request")) {
      r["request"] = "gpu";
    }
  }
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceClaim"},
          {"metadata", {{"namespace", ns}, {"name", name}, {"uid", uid}}},
          {"spec", {{"devices", {{"requests", json::array()}}}}},
          {"status", {{"allocation", {{"devices", {{"results", results}, {"config", config}}}}}}}};
}

}  // namespace vgpu::testing
