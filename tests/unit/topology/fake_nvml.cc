// A fake libnvidia-ml.so.1 for the NVML source tests: the entry points NvmlSource binds, with
// the machine chosen at call time by FAKE_NVML_SHAPE:
//   pairs     4 GPUs, NVLink 0-1 and 2-3 (4 active links each, links 4-5 down, 6+ invalid)
//   switch    4 GPUs, 6 links each: 3 to NVSwitch 0000:e0:00.0, 3 to NVSwitch 0000:e1:00.0
//   nolink    2 GPUs without NVLink (NOT_SUPPORTED)
//   noinit    nvmlInit_v2 fails with NVML_ERROR_DRIVER_NOT_LOADED
// Load (GpuLoadSource): GPU 0 reads the lines "UTIL MHZ" of the file FAKE_NVML_LOAD, the next one
// at each nvmlDeviceGetUtilizationRates call and its clock until the following one; past the
// last line, and on the other GPUs, it is idle (0 %, 345 MHz). The enforced power limit is
// FAKE_NVML_POWER_LIMIT_MW (default 700000).
// Built twice: with FAKE_NVML_OLD it lacks nvmlDeviceGetNvLinkRemoteDeviceType (and the compute
// capability and driver version calls), like drivers before it existed, so the source must
// classify remotes by itself and leave those two unknown.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

struct PciInfo {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
struct Memory {
  unsigned long long total, free, used;
};

std::string Shape() {
  const char* shape = std::getenv("FAKE_NVML_SHAPE");
  return shape ? shape : "pairs";
}
unsigned Count() { return Shape() == "nolink" ? 2 : 4; }
int initialized = 0;

// NVML's 8-digit-domain, upper-case form, as the real library prints it.
const char* kBusIds[] = {"00000000:1A:00.0", "00000000:1B:00.0", "00000000:9A:00.0",
                         "00000000:9B:00.0"};

long Index(void* device) { return reinterpret_cast<long>(device) - 1; }

}  // namespace

extern "C" {

int nvmlInit_v2() {
  if (Shape() == "noinit") {
    return 9;  // NVML_ERROR_DRIVER_NOT_LOADED
  }
  ++initialized;
  return 0;
}
int nvmlShutdown() {
  --initialized;
  return 0;
}
const char* nvmlErrorString(int rc) { return rc == 9 ? "Driver Not Loaded" : "fake error"; }
// Tests read this to check every init was paired with a shutdown.
int fake_nvml_sessions() { return initialized; }

int nvmlDeviceGetCount_v2(unsigned* count) {
  *count = Count();
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned index, void** device) {
  if (index >= Count()) {
    return 2;
  }
  *device = reinterpret_cast<void*>(static_cast<long>(index) + 1);
  return 0;
}
int nvmlDeviceGetUUID(void* device, char* uuid, unsigned length) {
  std::snprintf(uuid, length, "GPU-fake-%ld", Index(device));
  return 0;
}
int nvmlDeviceGetName(void*, char* name, unsigned length) {
  std::snprintf(name, length, "NVIDIA Fake H200");
  return 0;
}
int nvmlDeviceGetMemoryInfo(void* device, Memory* memory) {
  memory->total = (140ull << 30) + static_cast<unsigned long long>(Index(device));
  memory->used = 0;
  memory->free = memory->total;
  return 0;
}
int nvmlDeviceGetPciInfo_v3(void* device, PciInfo* pci) {
  std::memset(pci, 0, sizeof(*pci));
  std::snprintf(pci->busId, sizeof(pci->busId), "%s", kBusIds[Index(device)]);
  return 0;
}
int nvmlDeviceGetCpuAffinity(void* device, unsigned size, unsigned long* set) {
  std::memset(set, 0, size * sizeof(unsigned long));
  set[0] = Index(device) < 2 ? 0x0fUL : 0xf0UL;  // CPUs 0-3 or 4-7
  set[1] = 1UL;                                  // and CPU 64
  return 0;
}
int nvmlDeviceGetNvLinkState(void*, unsigned link, int* active) {
  std::string shape = Shape();
  if (shape == "nolink") {
    return 3;  // NVML_ERROR_NOT_SUPPORTED
  }
  if (link >= 6) {
    return 2;  // NVML_ERROR_INVALID_ARGUMENT
  }
  *active = (shape == "pairs" && link >= 4) ? 0 : 1;
  return 0;
}
int nvmlDeviceGetNvLinkRemotePciInfo_v2(void* device, unsigned link, PciInfo* pci) {
  std::memset(pci, 0, sizeof(*pci));
  long self = Index(device);
  const char* remote = nullptr;
  if (Shape() == "switch") {
    remote = link < 3 ? "00000000:E0:00.0" : "00000000:E1:00.0";
  } else {
    remote = kBusIds[self ^ 1];  // 0<->1, 2<->3
  }
  std::snprintf(pci->busId, sizeof(pci->busId), "%s", remote);
  return 0;
}
struct Utilization {
  unsigned gpu, memory;
};
unsigned load_line = 0;  // lines of FAKE_NVML_LOAD read so far
unsigned load_mhz = 345;
int nvmlDeviceGetUtilizationRates(void* device, Utilization* u) {
  u->gpu = 0;
  u->memory = 0;
  load_mhz = 345;
  const char* path = std::getenv("FAKE_NVML_LOAD");
  if (Index(device) != 0 || path == nullptr) {
    return 0;
  }
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) {
    return 0;
  }
  unsigned util = 0, mhz = 0;
  for (unsigned i = 0; i <= load_line; i++) {
    if (std::fscanf(f, "%u %u", &util, &mhz) != 2) {
      std::fclose(f);
      return 0;  // past the last line: idle
    }
  }
  std::fclose(f);
  load_line++;
  u->gpu = util;
  load_mhz = mhz;
  return 0;
}
int nvmlDeviceGetClockInfo(void* device, int type, unsigned* mhz) {
  if (type != 1) {  // NVML_CLOCK_SM
    return 2;
  }
  *mhz = Index(device) == 0 ? load_mhz : 345;
  return 0;
}
int nvmlDeviceGetEnforcedPowerLimit(void*, unsigned* mw) {
  const char* limit = std::getenv("FAKE_NVML_POWER_LIMIT_MW");
  *mw = limit != nullptr ? static_cast<unsigned>(std::atoi(limit)) : 700000;
  return 0;
}
// Tests read this: how many load lines GPU 0 has read.
unsigned fake_nvml_load_lines() { return load_line; }

#ifndef FAKE_NVML_OLD
int nvmlDeviceGetCudaComputeCapability(void*, int* major, int* minor) {
  *major = 9;
  *minor = 0;
  return 0;
}
// A real version string with a zero-led component, which semantic versions do not allow.
int nvmlSystemGetDriverVersion(char* version, unsigned length) {
  std::snprintf(version, length, "535.104.05");
  return 0;
}
int nvmlDeviceGetNvLinkRemoteDeviceType(void*, unsigned, unsigned* type) {
  *type = Shape() == "switch" ? 2 : 0;
  return 0;
}
#endif

}  // extern "C"
