// The stdin protocol of the fake cluster programs the GPU scripts drive (vgpu-e2e-kubelet,
// vgpu-dra-e2e-cluster): one command per line, its first word the command, one JSON line per
// answer on stdout; "quit" or the end of stdin ends the loop.
#pragma once

#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace vgpu::testing {

// `handle(cmd, in)` answers one command; `in` holds the rest of its line.
inline void ServeCommands(
    const std::function<nlohmann::json(const std::string& cmd, std::istringstream& in)>& handle) {
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string cmd;
    in >> cmd;
    if (cmd == "quit") {
      return;
    }
    std::cout << handle(cmd, in).dump() << std::endl;
  }
}

}  // namespace vgpu::testing
