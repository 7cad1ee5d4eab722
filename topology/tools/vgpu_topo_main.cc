// Standalone `vgpu-topo`: the `vgpuctl topo` subcommand as its own binary, also what the GPU
// machine hook (tests/gpu/extra.d/topology.sh) builds to record a fixture.
#include "topo_command.h"

int main(int argc, char** argv) { return vgpu::topology::RunTopoCommand(argc, argv); }
