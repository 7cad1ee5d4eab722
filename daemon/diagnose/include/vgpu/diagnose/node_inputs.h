// What the node report needs from the live system besides files: the kernel log (/dev/kmsg,
// read without blocking) and the manager's slot list (its control socket, {"op":"list"}).
#pragma once

#include <string>

#include "vgpu/diagnose/node_report.h"

namespace vgpu::diagnose {

// Reads every record /dev/kmsg holds now (the messages only). false and *err when it cannot.
bool ReadKernelLog(const std::string& kmsg_path, std::vector<std::string>* lines, std::string* err);
// One request on the manager's control socket; nullopt and *err when it does not answer.
std::optional<nlohmann::json> AskManager(const std::string& socket_path,
                                         const nlohmann::json& request, std::string* err);

NodeInputs GatherNodeInputs(const std::filesystem::path& root, const std::string& control_socket);

}  // namespace vgpu::diagnose
