// `vgpuctl diagnose`: one report of a node's vgpu state, or, with --container, of the
// enforcement in force for this container (daemon/diagnose).
#pragma once

#include <span>
#include <string>

#include "commands.h"

namespace vgpu::ctl {

int RunDiagnose(CommandContext& ctx, std::span<const std::string> args);

}  // namespace vgpu::ctl
