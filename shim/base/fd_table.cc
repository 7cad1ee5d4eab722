#include "fd_table.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "vgpu/enum_names.h"

namespace vgpu::shim {

const char* DevDir() {
  static const char* dir = [] {
    const char* env = getenv("VGPU_DEV_DIR");
    return (env != nullptr && env[0] == '/') ? env : "/dev";
  }();
  return dir;
}

DevKind ClassifyPath(const char* path, const char* dev_dir) {
  if (path == nullptr) {
    return DevKind::kNone;
  }
  size_t dir_len = strlen(dev_dir);
  if (strncmp(path, dev_dir, dir_len) != 0 || path[dir_len] != '/') {
    return DevKind::kNone;
  }
  const char* name = path + dir_len + 1;
  if (strncmp(name, "nvidia", 6) != 0) {
    return DevKind::kNone;
  }
  const char* rest = name + 6;
  if (strcmp(rest, "ctl") == 0) {
    return DevKind::kCtl;
  }
  if (strcmp(rest, "-uvm") == 0) {
    return DevKind::kUvm;
  }
  if (strcmp(rest, "-uvm-tools") == 0) {
    return DevKind::kUvmTools;
  }
  if (*rest >= '0' && *rest <= '9') {
    const char* p = rest;
    while (*p >= '0' && *p <= '9') {
      ++p;
    }
    return *p == '\0' ? DevKind::kGpu : DevKind::kNone;
  }
  if (*rest == '-') {
    return DevKind::kOther;  // nvidia-caps/..., nvidia-modeset, nvidia-nvswitchN, nvidia-nvlink
  }
  return DevKind::kNone;
}

const char* DevKindName(DevKind k) {
  using enum DevKind;
  static constexpr EnumName<DevKind> kNames[] = {
      {kUnknown, "unknown"}, {kNone, "none"},          {kCtl, "ctl"},     {kGpu, "gpu"},
      {kUvm, "uvm"},         {kUvmTools, "uvm-tools"}, {kOther, "other"},
  };
  static_assert(ListsEach(kNames, kUnknown, kOther));
  return NameOf(k, kNames, "unknown").data();
}

namespace {

DevKind ClassifyFd(int fd) {
  char link[32];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  char target[256];
  ssize_t n = readlink(link, target, sizeof target - 1);
  if (n <= 0) {
    return DevKind::kNone;
  }
  target[n] = '\0';
  return ClassifyPath(target);
}

}  // namespace

DevKind FdTable::Get(int fd) {
  if (fd < 0) {
    return DevKind::kNone;
  }
  if (fd >= kMaxTracked) {
    return ClassifyFd(fd);
  }
  auto k = static_cast<DevKind>(__atomic_load_n(&kinds_[fd], __ATOMIC_RELAXED));
  if (k != DevKind::kUnknown) {
    return k;
  }
  k = ClassifyFd(fd);
  __atomic_store_n(&kinds_[fd], static_cast<uint8_t>(k), __ATOMIC_RELAXED);
  return k;
}

void FdTable::Set(int fd, DevKind kind) {
  if (fd >= 0 && fd < kMaxTracked) {
    __atomic_store_n(&kinds_[fd], static_cast<uint8_t>(kind), __ATOMIC_RELAXED);
  }
}

DevKind FdTable::Clear(int fd) {
  if (fd < 0 || fd >= kMaxTracked) {
    return DevKind::kUnknown;
  }
  return static_cast<DevKind>(
      __atomic_exchange_n(&kinds_[fd], static_cast<uint8_t>(DevKind::kUnknown), __ATOMIC_RELAXED));
}

void FdTable::Reset() {
  for (auto& k : kinds_) {
    __atomic_store_n(&k, static_cast<uint8_t>(DevKind::kUnknown), __ATOMIC_RELAXED);
  }
}

FdTable& ProcessFdTable() {
  static FdTable table;  // constant-initialized (.bss): usable before any constructor runs
  return table;
}

}  // namespace vgpu::shim
