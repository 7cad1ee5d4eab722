// `vgpu-trace record [-o FILE] -- CMD ARGS...`: runs CMD with libvgpu-trace-record.so preloaded
// and writes every ioctl that CMD and its children issue on /dev/nvidia* to FILE (one JSON
// object per line; format in uapi/). Returns CMD's exit status (128 + signal if it was killed),
// or 2 on a usage error.
#pragma once

namespace vgpu::shim::trace {

// argv[0] may be "record" (as dispatched by vgpu-trace's main) or the program name.
int RunRecord(int argc, char** argv);

}  // namespace vgpu::shim::trace

// C-linkage alias for the vgpu-trace CLI.
int RunRecord(int argc, char** argv);
