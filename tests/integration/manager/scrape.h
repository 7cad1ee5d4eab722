// What the tests against the real manager share: a free loopback port for --query-port and one
// scrape of its /metrics, parsed.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <optional>
#include <string>

#include "testing/exposition_parser.h"

namespace vgpu::testing {

inline int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

inline std::optional<metrics::testing::ParsedExposition> Scrape(int port) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(1);
  auto res = client.Get("/metrics");
  if (!res || res->status != 200) return std::nullopt;
  metrics::testing::ParsedExposition parsed;
  std::string error;
  EXPECT_TRUE(metrics::testing::ParseExposition(res->body, &parsed, &error)) << error;
  return parsed;
}

}  // namespace vgpu::testing
