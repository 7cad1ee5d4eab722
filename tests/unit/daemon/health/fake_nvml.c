/* A stand-in libnvidia-ml.so.1 for the health tests: two GPUs, an event queue the test fills
 * through fake_nvml_push_xid() (in-process) or by appending "INDEX XID" lines to the file named
 * by VGPU_FAKE_NVML_EVENTS (another process, e.g. the real vgpu-manager), and a per-GPU "lost"
 * switch that makes queries fail. VGPU_FAKE_NVML_UUIDS="uuid0,uuid1" renames the GPUs. Only the
 * entry points NvmlXidSource resolves are provided, with NVML's documented return codes. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
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

int nvmlInit_v2(void) {
  initialized = 1;
  return 0;
}
int nvmlShutdown(void) {
  initialized = 0;
  return 0;
}
const char* nvmlErrorString(int rc) { return rc == 15 ? "GPU is lost" : "fake NVML error"; }
int nvmlDeviceGetCount_v2(unsigned* count) {
  *count = 2;
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned i, void** dev) {
  if (i >= 2) return 2; /* NVML_ERROR_INVALID_ARGUMENT */
  *dev = &devices[i];
  return 0;
}
/* GPU i's UUID: field i of VGPU_FAKE_NVML_UUIDS, else GPU-fake-i. */
static void uuid_of(int i, char* buf, unsigned len) {
  const char* list = getenv("VGPU_FAKE_NVML_UUIDS");
  snprintf(buf, len, "GPU-fake-%d", i);
  if (list == NULL) return;
  for (int field = 0; *list; field++) {
    const char* end = strchr(list, ',');
    size_t n = end ? (size_t)(end - list) : strlen(list);
    if (field == i && n < len) {
      memcpy(buf, list, n);
      buf[n] = 0;
      return;
    }
    if (!end) return;
    list = end + 1;
  }
}

/* Moves complete new lines of the VGPU_FAKE_NVML_EVENTS file into the queue. */
static long events_offset;
static void read_event_file(void) {
  const char* path = getenv("VGPU_FAKE_NVML_EVENTS");
  if (path == NULL) return;
  FILE* f = fopen(path, "r");
  if (f == NULL) return;
  char line[64];
  if (fseek(f, events_offset, SEEK_SET) == 0) {
    while (fgets(line, sizeof(line), f) && strchr(line, '\n')) {
      int device;
      unsigned long long xid;
      events_offset = ftell(f);
      if (sscanf(line, "%d %llu", &device, &xid) == 2 && device >= 0 && device < 2) {
        fake_nvml_push_xid(device, xid);
      }
    }
  }
  fclose(f);
}

int nvmlDeviceGetUUID(void* dev, char* buf, unsigned len) {
  uuid_of(((fake_device*)dev)->index, buf, len);
  return 0;
}
int nvmlDeviceGetHandleByUUID(const char* uuid, void** dev) {
  for (int i = 0; i < 2; i++) {
    char name[96];
    uuid_of(i, name, sizeof(name));
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
int nvmlEventSetCreate(void** set) {
  *set = &event_set_token;
  return 0;
}
int nvmlDeviceRegisterEvents(void* dev, unsigned long long types, void* set) {
  (void)dev;
  return (types == 0x8ULL && set == &event_set_token) ? 0 : 2;
}
int nvmlEventSetWait_v2(void* set, fake_event_data* data, unsigned timeout_ms) {
  (void)set;
  for (unsigned waited = 0;; waited++) {
    if (waited % 10 == 0) read_event_file();
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
int nvmlEventSetFree(void* set) {
  (void)set;
  return 0;
}
