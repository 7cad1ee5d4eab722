// A tenant in the demo: opens a slot's nodes like libcuda, reports the memory it sees, then
// allocates video memory in chunks until the slot's quota refuses (NV_ERR_NO_MEMORY).
// usage: vgpu_tenant SLOT_ID CHUNK_MIB
#include <cstdio>
#include <cstdlib>

#include "vgpu_rm.h"

int main(int argc, char** argv) {
  using namespace vgpu_test;  // NOLINT
  if (argc != 3) {
    std::fprintf(stderr, "usage: vgpu_tenant SLOT_ID CHUNK_MIB\n");
    return 2;
  }
  std::string id = argv[1];
  uint64_t chunk = std::strtoull(argv[2], nullptr, 10) * kMiB;
  Session s;
  std::string err = s.Open("/dev/vgpuctl" + id, "/dev/vgpu" + id);
  if (!err.empty()) {
    std::fprintf(stderr, "tenant %s: %s\n", id.c_str(), err.c_str());
    return 1;
  }
  std::printf("tenant on slot %s sees: total %u MiB, free %u MiB (FB_GET_INFO_V2)\n", id.c_str(),
              s.Fb(NV2080_CTRL_FB_INFO_INDEX_HEAP_SIZE) / 1024,
              s.Fb(NV2080_CTRL_FB_INFO_INDEX_HEAP_FREE) / 1024);
  int n = 0;
  for (uint32_t h = 0xa0; h < 0xa0 + 64; ++h) {
    int64_t st = s.Vidmem(h, chunk);
    if (st != NV_OK) {
      std::printf("tenant on slot %s: allocation %d of %llu MiB refused with status 0x%llx%s\n",
                  id.c_str(), n + 1, static_cast<unsigned long long>(chunk >> 20),
                  static_cast<unsigned long long>(st),
                  st == NV_ERR_NO_MEMORY ? " (NV_ERR_NO_MEMORY -> CUDA_ERROR_OUT_OF_MEMORY)" : "");
      break;
    }
    ++n;
  }
  std::printf("tenant on slot %s: holds %d x %llu MiB; now sees free %u MiB\n", id.c_str(), n,
              static_cast<unsigned long long>(chunk >> 20),
              s.Fb(NV2080_CTRL_FB_INFO_INDEX_HEAP_FREE) / 1024);
  std::fflush(stdout);
  if (getenv("TENANT_HOLD")) pause();
  return 0;
}
