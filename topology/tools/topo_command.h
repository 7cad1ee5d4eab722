// `vgpuctl topo` (and the standalone `vgpu-topo`): print this machine's GPU link matrix like
// `nvidia-smi topo -m`, print a recorded machine's, or record this machine as a fixture.
#pragma once

namespace vgpu::topology {

// argv[0] is the command's own name ("topo" or the program); the rest are its flags (--help).
// Returns the process exit status: 0 done, 1 failed (message on stderr), 2 bad usage.
int RunTopoCommand(int argc, char** argv);

}  // namespace vgpu::topology
