// vgpu-trace: record RM ioctl traffic (`record`, the shim's recorder) and run the filter core
// over recordings (`replay`). Record format: uapi/vgpu_trace.h.
#include <cstdio>
#include <cstring>

#include "shim/trace/record.h"
#include "shim/trace/replay.h"

namespace {

void Usage() {
  fprintf(stderr,
          "usage: vgpu-trace record [-o FILE] -- CMD ARGS...\n"
          "       vgpu-trace replay [--quota BYTES] [--policy strict|permissive] FILE...\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    Usage();
    return 2;
  }
  if (strcmp(argv[1], "record") == 0) {
    return RunRecord(argc - 1, argv + 1);
  }
  if (strcmp(argv[1], "replay") == 0) {
    return vgpu::trace::RunReplay(argc - 1, argv + 1);
  }
  if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
    Usage();
    return 0;
  }
  fprintf(stderr, "vgpu-trace: unknown subcommand '%s'\n", argv[1]);
  Usage();
  return 2;
}
