#include "diagnose_command.h"

#include <ostream>

#include "cli.h"
#include "vgpu/diagnose/container_report.h"
#include "vgpu/diagnose/node_inputs.h"
#include "vgpu/diagnose/node_report.h"

namespace vgpu::ctl {

int RunDiagnose(CommandContext& ctx, std::span<const std::string> args) {
  static constexpr FlagSpec kFlags[] = {
      {"--container", false}, {"--root", true}, {"--control-socket", true}};
  auto a = ParseArgs("diagnose", args, kFlags);
  if (!a.ok()) {
    *ctx.err << "vgpuctl: " << a.status().ToString() << '\n';
    return 2;
  }
  const std::string root = a->Has("--root") ? a->flags.at("--root") : "/";
  diagnose::Report report;
  if (a->Has("--container")) {
    diagnose::ContainerInputs in;
    in.root = root;
    report = diagnose::ContainerReport(in);
  } else {
    const std::string socket = a->Has("--control-socket")
                                   ? a->flags.at("--control-socket")
                                   : "/etc/vgpu-manager/vm/vgpu-manager.sock";
    report = diagnose::NodeReport(diagnose::GatherNodeInputs(root, socket));
  }
  *ctx.out << (ctx.json ? report.ToJson().dump(2) + "\n" : report.ToTable());
  return 0;
}

}  // namespace vgpu::ctl
