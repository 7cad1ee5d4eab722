// The compute-share thread's view of the process (vshim_hooks.h): which ctl fd owns which RM
// client, which TSGs and channels exist, and a way to issue controls that bypass the filter.
#include <cstring>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "hooks_internal.h"
#include "shim/base/real_calls.h"
#include "shim/base/rm_abi.h"
#include "shim/include/vshim_hooks.h"
#include "state.h"

namespace vgpu::shim {
namespace {

struct Obj {
  uint32_t h_class;
  uint32_t h_parent;
  uint32_t engine_type;
  int fd;
};

std::mutex mu;  // guards everything below
std::map<uint32_t, int> client_fd;
std::map<std::pair<uint32_t, uint32_t>, Obj> objs;  // (client, handle) -> TSG or channel
vshim_obj_hook_fn hook_fn = nullptr;
void* hook_arg = nullptr;

uint32_t Load32(const void* base, size_t off) {
  uint32_t v;
  memcpy(&v, static_cast<const uint8_t*>(base) + off, sizeof v);
  return v;
}
uint64_t Load64(const void* base, size_t off) {
  uint64_t v;
  memcpy(&v, static_cast<const uint8_t*>(base) + off, sizeof v);
  return v;
}

// KEPLER_CHANNEL_GROUP_A (nvidia-rm-abi.md §6.1)
bool IsTsgClass(uint32_t c) { return c == 0xa06c; }
bool IsChannelClass(uint32_t c) {
  // GPFIFO channels (nvidia-rm-abi.md §6.3)
  return (c & 0xff) == 0x6f && c >= 0xc36f && c <= 0xcfff;
}
bool IsClientClass(uint32_t c) { return c == 0x0 || c == 0x1 || c == 0x41; }
constexpr uint32_t kCtrlTsgGpfifoSchedule = 0xa06c0101;  // NVA06C_CTRL_CMD_GPFIFO_SCHEDULE
// NV20_SUBDEVICE_0: the compute host's FIFO_DISABLE_CHANNELS, perfmon and GID controls go to
// libcuda's subdevice. It is reported as allocated because looking it up afterwards
// (NV0000_CTRL_CMD_CLIENT_GET_CHILD_HANDLE) found nothing on the H200 (compute-h200.md, run 5).
bool IsSubdeviceClass(uint32_t c) { return c == 0x2080; }

// Removes the client's objects (lock held), appending events.
void DropClientLocked(uint32_t h_client, std::vector<vshim_obj_info>& ev) {
  for (auto it = objs.lower_bound({h_client, 0});
       it != objs.end() && it->first.first == h_client;) {
    it = objs.erase(it);
  }
  auto c = client_fd.find(h_client);
  int fd = c != client_fd.end() ? c->second : -1;
  if (c != client_fd.end()) {
    client_fd.erase(c);
  }
  ev.push_back({VSHIM_CLIENT_GONE, h_client, 0, h_client, 0, 0, fd});
}

void Emit(const std::vector<vshim_obj_info>& ev) {
  vshim_obj_hook_fn fn;
  void* arg;
  {
    std::lock_guard<std::mutex> lock(mu);
    fn = hook_fn;
    arg = hook_arg;
  }
  if (fn == nullptr) {
    return;
  }
  for (const auto& e : ev) {
    fn(arg, &e);
  }
}

}  // namespace

void HooksAfterCall(int fd, uint32_t nr, unsigned long req, const void* arg) {
  if (arg == nullptr || rm::IocNr(req) != nr) {
    return;  // XFER-wrapped calls: the top-level struct is the wrapper, not the RM params
  }
  uint32_t size = rm::IocSize(req);
  std::vector<vshim_obj_info> ev;
  if (nr == rm::kEscRmAlloc && (size == 48 || size == 32)) {
    if (Load32(arg, size == 48 ? 40 : 28) != 0) {
      return;  // RM status: not allocated
    }
    uint32_t h_root = Load32(arg, 0);
    uint32_t h_parent = Load32(arg, 4);
    uint32_t h_new = Load32(arg, 8);
    uint32_t cls = Load32(arg, 12);
    if (IsClientClass(cls)) {
      std::lock_guard<std::mutex> lock(mu);
      client_fd[h_new] = fd;
      return;
    }
    if (IsSubdeviceClass(cls)) {
      ev.push_back({VSHIM_SUBDEVICE_CREATED, h_root, h_parent, h_new, cls, 0, fd});
      Emit(ev);
      return;
    }
    if (!IsTsgClass(cls) && !IsChannelClass(cls)) {
      return;
    }
    uint32_t engine = 0;
    uint64_t params = Load64(arg, 16);
    if (IsTsgClass(cls) && params >= 4096) {
      engine = Load32(reinterpret_cast<const void*>(params), 12);
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      objs[{h_root, h_new}] = Obj{cls, h_parent, engine, fd};
    }
    ev.push_back({IsTsgClass(cls) ? VSHIM_TSG_CREATED : VSHIM_CHANNEL_CREATED, h_root, h_parent,
                  h_new, cls, engine, fd});
  } else if (nr == rm::kEscRmControl && size == 32) {
    // NVOS54: hClient@0 hObject@4 cmd@8 params@16 paramsSize@24 status@28.
    if (Load32(arg, 8) != kCtrlTsgGpfifoSchedule || Load32(arg, 28) != 0 || Load32(arg, 24) < 1) {
      return;
    }
    const uint64_t params = Load64(arg, 16);
    if (params < 4096) {
      return;
    }
    const uint32_t h_root = Load32(arg, 0);
    const uint32_t h_tsg = Load32(arg, 4);
    const bool enable = *reinterpret_cast<const uint8_t*>(params) != 0;  // bEnable@0
    {
      std::lock_guard<std::mutex> lock(mu);
      auto it = objs.find({h_root, h_tsg});
      if (it == objs.end() || !IsTsgClass(it->second.h_class)) {
        return;
      }
      ev.push_back({enable ? VSHIM_TSG_SCHEDULED : VSHIM_TSG_UNSCHEDULED, h_root,
                    it->second.h_parent, h_tsg, it->second.h_class, it->second.engine_type, fd});
    }
  } else if (nr == rm::kEscRmFree && size == 16) {
    if (Load32(arg, 12) != 0) {
      return;
    }
    uint32_t h_root = Load32(arg, 0);
    uint32_t h_old = Load32(arg, 8);
    std::lock_guard<std::mutex> lock(mu);
    if (h_old == h_root) {
      DropClientLocked(h_root, ev);
    } else {
      auto it = objs.find({h_root, h_old});
      if (it == objs.end()) {
        return;
      }
      bool tsg = IsTsgClass(it->second.h_class);
      ev.push_back({tsg ? VSHIM_TSG_FREED : VSHIM_CHANNEL_FREED, h_root, it->second.h_parent, h_old,
                    it->second.h_class, it->second.engine_type, fd});
      objs.erase(it);
      if (tsg) {  // its channels go with it
        for (auto c = objs.lower_bound({h_root, 0}); c != objs.end() && c->first.first == h_root;) {
          if (c->second.h_parent == h_old) {
            ev.push_back(
                {VSHIM_CHANNEL_FREED, h_root, h_old, c->first.second, c->second.h_class, 0, fd});
            c = objs.erase(c);
          } else {
            ++c;
          }
        }
      }
    }
  } else {
    return;
  }
  Emit(ev);
}

void HooksCtlClosed(int ctl_fd) {
  std::vector<vshim_obj_info> ev;
  {
    std::lock_guard<std::mutex> lock(mu);
    std::vector<uint32_t> gone;
    for (const auto& [client, fd] : client_fd) {
      if (fd == ctl_fd) {
        gone.push_back(client);
      }
    }
    for (uint32_t c : gone) {
      DropClientLocked(c, ev);
    }
  }
  if (!ev.empty()) {
    Emit(ev);
  }
}

}  // namespace vgpu::shim

namespace vs = vgpu::shim;

extern "C" {

__attribute__((visibility("default"))) int vshim_set_obj_hook(vshim_obj_hook_fn fn, void* arg) {
  std::lock_guard<std::mutex> lock(vs::mu);
  vs::hook_fn = fn;
  vs::hook_arg = arg;
  return 0;
}

__attribute__((visibility("default"))) int vshim_ctl_fd_for_client(uint32_t h_client) {
  std::lock_guard<std::mutex> lock(vs::mu);
  auto it = vs::client_fd.find(h_client);
  return it != vs::client_fd.end() ? it->second : -1;
}

__attribute__((visibility("default"))) int vshim_rm_control(uint32_t h_client, uint32_t h_object,
                                                            uint32_t cmd, void* params,
                                                            uint32_t params_size,
                                                            uint32_t* status) {
  int fd = vshim_ctl_fd_for_client(h_client);
  if (fd < 0) {
    return -EBADF;
  }
  // NVOS54 (nvidia-rm-abi.md §3): hClient@0 hObject@4 cmd@8 flags@12 params@16 paramsSize@24
  // status@28.
  struct {
    uint32_t h_client, h_object, cmd, flags;
    uint64_t params;
    uint32_t params_size, status;
  } p{h_client, h_object, cmd, 0, reinterpret_cast<uint64_t>(params), params_size, 0};
  static_assert(sizeof p == 32);
  int rc = vs::real::Ioctl(fd, 0xC020462Aul, &p);
  if (rc < 0) {
    return -errno;
  }
  if (status != nullptr) {
    *status = p.status;
  }
  return 0;
}

__attribute__((visibility("default"))) struct vcore_slot* vshim_core_slot(void) {
  vs::ShimState* st = vs::CurrentState();
  return st != nullptr ? st->slot : nullptr;
}

__attribute__((visibility("default"))) const char* vshim_config_get(const char* key) {
  vs::ShimState* st = vs::CurrentState();
  if (st == nullptr || key == nullptr) {
    return nullptr;
  }
  auto it = st->cfg.extra.find(key);
  return it != st->cfg.extra.end() ? it->second.c_str() : nullptr;
}

__attribute__((visibility("default"))) int vshim_slot_member(uint32_t pid) {
  vs::ShimState* st = vs::CurrentState();
  if (st == nullptr || !st->ledger) {
    return -1;
  }
  return st->ledger->IsMember(static_cast<pid_t>(pid)) ? 1 : 0;
}

__attribute__((visibility("default"))) int vshim_publish_compute(
    const struct vshim_compute_counters* c) {
  vs::ShimState* st = vs::CurrentState();
  if (st == nullptr || !st->ledger || c == nullptr) {
    return -1;
  }
  std::vector<vs::LedgerBusySample> samples;  // ~5 a second
  for (uint32_t i = 0; c->unattributed != nullptr && i < c->n_unattributed; i++) {
    samples.push_back({c->unattributed[i].ts, c->unattributed[i].busy_ns});
  }
  st->ledger->PublishCompute(c->busy_ns, c->throttled_ns, c->achieved_share_1s_pm,
                             c->achieved_share_10s_pm, samples.data(), samples.size());
  return 0;
}

}  // extern "C"
