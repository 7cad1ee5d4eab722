// vgpu-trace-record: the recorder alone, for machines where the full vgpu-trace CLI (which
// also replays through the filter core) is not built. Same arguments as `vgpu-trace record`.
#include "record.h"

int main(int argc, char** argv) { return RunRecord(argc, argv); }
