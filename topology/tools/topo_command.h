// `vgpuctl topo` (and the standalone `vgpu-topo`): print this machine's GPU link matrix like
// `nvidia-smi topo -m`, print a recorded machine's, or record this machine as a fixture.
#pragma once

#include <iosfwd>
#include <span>
#include <string>

namespace vgpu::topology {

// args are the flags after the command name (see --help). json: print the machine as fixture
// JSON instead of the matrix (vgpuctl --json). Returns the exit status: 0 done, 1 failed (message
// on err), 2 bad usage.
int RunTopoCommand(std::span<const std::string> args, bool json, std::ostream& out,
                   std::ostream& err);

// The same for a main(): argv[0] is the program, output on stdout/stderr.
int RunTopoCommand(int argc, char** argv);

}  // namespace vgpu::topology
