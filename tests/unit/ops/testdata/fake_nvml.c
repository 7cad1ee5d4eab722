/* A stand-in libnvidia-ml.so.1 for the health tests: two GPUs, an event queue the test fills
 * through fake_nvml_push_xid(), and a per-GPU "lost" switch that makes queries fail. Only the
 * entry points NvmlXidSource resolves are provided, with NVML's documented return codes. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

typedef struct {
  int index;
} fake_device;
typedef struct {
  void* device;
  unsigned long long eventType, eventData;
  unsigned int gpuInstanceId, computeInstanceId;
} fake_event_data;

static fake_device devices[2] = {{0}, {1}};
static int lost[2];
static int initialized;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
  int device;
  unsigned long long xid;
} queue[64];
static int queue_len;
static int event_set_token;

void fake_nvml_push_xid(int device, unsigned long long xid) {
  pthread_mutex_lock(&mu);
  if (queue_len < 64) {
    queue[queue_len].device = device;
    queue[queue_len].xid = xid;
    queue_len++;
  }
  pthread_mutex_unlock(&mu);
}
void fake_nvml_set_lost(int device, int value) { lost[device] = value; }
int fake_nvml_initialized(void) { return initialized; }

int nvmlInit_v2(void) { initialized = 1; return 0; }
int nvmlShutdown(void) { initialized = 0; return 0; }
const char* nvmlErrorString(int rc) { return rc == 15 ? "GPU is lost" : "fake NVML error"; }
int nvmlDeviceGetCount_v2(unsigned* count) { *count = 2; return 0; }
int nvmlDeviceGetHandleByIndex_v2(unsigned i, void** dev) {
  if (i >= 2) return 2; /* NVML_ERROR_INVALID_ARGUMENT */
  *dev = &devices[i];
  return 0;
}
int nvmlDeviceGetUUID(void* dev, char* buf, unsigned len) {
  snprintf(buf, len, "GPU-fake-%d", ((fake_device*)dev)->index);
  return 0;
}
int nvmlDeviceGetHandleByUUID(const char* uuid, void** dev) {
  for (int i = 0; i < 2; i++) {
    char name[32];
    snprintf(name, sizeof(name), "GPU-fake-%d", i);
    if (strcmp(name, uuid) == 0) {
      if (lost[i]) return 15; /* NVML_ERROR_GPU_IS_LOST */
      *dev = &devices[i];
      return 0;
    }
  }
  return 6; /* NVML_ERROR_NOT_FOUND */
}
int nvmlDeviceGetMemoryInfo(void* dev, unsigned long long* mem) {
  if (lost[((fake_device*)dev)->index]) return 15;
  mem[0] = 80ull << 30;
  mem[1] = mem[0];
  mem[2] = 0;
  return 0;
}
int nvmlEventSetCreate(void** set) { *set = &event_set_token; return 0; }
int nvmlDeviceRegisterEvents(void* dev, unsigned long long types, void* set) {
  (void)dev;
  return (types == 0x8ULL && set == &event_set_token) ? 0 : 2;
}
int nvmlEventSetWait_v2(void* set, fake_event_data* data, unsigned timeout_ms) {
  (void)set;
  for (unsigned waited = 0;; waited++) {
    pthread_mutex_lock(&mu);
    if (queue_len > 0) {
      memset(data, 0, sizeof(*data));
      data->device = &devices[queue[0].device];
      data->eventType = 0x8ULL;
      data->eventData = queue[0].xid;
      memmove(queue, queue + 1, sizeof(queue[0]) * (size_t)--queue_len);
      pthread_mutex_unlock(&mu);
      return 0;
    }
    pthread_mutex_unlock(&mu);
    if (waited >= timeout_ms) return 10; /* NVML_ERROR_TIMEOUT */
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
}
int nvmlEventSetFree(void* set) { (void)set; return 0; }
