// The compute-share thread's view of the process (vshim_hooks.h): which ctl fd owns which RM
// client, which TSGs and channels exist, and a way to issue controls that bypass the filter.
#include <cstring>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "hooks_internal.h"
#include "kmod/core/abi/classes.h"
#include "kmod/core/abi/ctrl.h"
#include "kmod/core/abi/nvstatus.h"
#include "kmod/core/vcore.h"
#include "shim/base/real_calls.h"
#include "shim/base/rm_abi.h"
#include "shim/include/vshim_hooks.h"
#include "state.h"

namespace vgpu::shim {
namespace {

struct Obj {
  uint32_t h_class;
  vcore_class_role role;  // VCORE_CLASS_TSG or VCORE_CLASS_CHANNEL
  uint32_t h_parent;
  uint32_t engine_type;
  int fd;
};

std::mutex mu;  // guards everything below
std::map<uint32_t, int> client_fd;
std::map<std::pair<uint32_t, uint32_t>, Obj> objs;  // (client, handle) -> TSG or channel
vshim_obj_hook_fn hook_fn = nullptr;
void* hook_arg = nullptr;

// A field of a driver struct in user memory the call just used, by its offset in that struct.
template <typename T>
T Field(const void* base, size_t off) {
  T v;
  memcpy(&v, static_cast<const uint8_t*>(base) + off, sizeof v);
  return v;
}

// NVOS21 and NVOS64 (the two RM_ALLOC forms) share the fields read here.
static_assert(offsetof(NVOS21_PARAMETERS, hClass) == offsetof(NVOS64_PARAMETERS, hClass));
static_assert(offsetof(NVOS21_PARAMETERS, pAllocParms) == offsetof(NVOS64_PARAMETERS, pAllocParms));

// What the class is, from the core's tables for this process's slot (kmod/core/vcore.h). The
// subdevice is reported as allocated: the compute host's FIFO_DISABLE_CHANNELS, perfmon and GID
// controls go to libcuda's, and looking it up afterwards (NV0000_CTRL_CMD_CLIENT_GET_CHILD_HANDLE)
// found nothing on the H200 (compute-h200.md, run 5).
vcore_class_role RoleOf(uint32_t cls) {
  ShimState* st = CurrentState();
  return vcore_class_role_of(st != nullptr ? st->slot : nullptr, cls);
}

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

void HooksAfterCall(int fd, uint32_t nr, unsigned long req, const void* arg, vcore_uptr_t status) {
  if (arg == nullptr || status == 0 || rm::IocNr(req) != nr) {
    return;  // XFER-wrapped calls: the top-level struct is the wrapper, not the RM params
  }
  if (Field<uint32_t>(reinterpret_cast<const void*>(status), 0) != NV_OK) {
    return;  // the driver refused it: nothing was made or freed
  }
  uint32_t size = rm::IocSize(req);
  std::vector<vshim_obj_info> ev;
  if (nr == NV_ESC_RM_ALLOC &&
      (size == sizeof(NVOS64_PARAMETERS) || size == sizeof(NVOS21_PARAMETERS))) {
    using A = NVOS64_PARAMETERS;
    uint32_t h_root = Field<uint32_t>(arg, offsetof(A, hRoot));
    uint32_t h_parent = Field<uint32_t>(arg, offsetof(A, hObjectParent));
    uint32_t h_new = Field<uint32_t>(arg, offsetof(A, hObjectNew));
    uint32_t cls = Field<uint32_t>(arg, offsetof(A, hClass));
    const vcore_class_role role = RoleOf(cls);
    if (role == VCORE_CLASS_CLIENT) {
      std::lock_guard<std::mutex> lock(mu);
      client_fd[h_new] = fd;
      return;
    }
    if (role == VCORE_CLASS_SUBDEVICE) {
      ev.push_back({VSHIM_SUBDEVICE_CREATED, h_root, h_parent, h_new, cls, 0, fd});
      Emit(ev);
      return;
    }
    if (role != VCORE_CLASS_TSG && role != VCORE_CLASS_CHANNEL) {
      return;
    }
    uint32_t engine = 0;
    uint64_t params = Field<uint64_t>(arg, offsetof(A, pAllocParms));
    if (role == VCORE_CLASS_TSG && params >= 4096) {
      engine = Field<uint32_t>(reinterpret_cast<const void*>(params),
                               offsetof(NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS, engineType));
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      objs[{h_root, h_new}] = Obj{cls, role, h_parent, engine, fd};
    }
    ev.push_back({role == VCORE_CLASS_TSG ? VSHIM_TSG_CREATED : VSHIM_CHANNEL_CREATED, h_root,
                  h_parent, h_new, cls, engine, fd});
  } else if (nr == NV_ESC_RM_CONTROL && size == sizeof(NVOS54_PARAMETERS)) {
    using C = NVOS54_PARAMETERS;
    if (Field<uint32_t>(arg, offsetof(C, cmd)) != NVA06C_CTRL_CMD_GPFIFO_SCHEDULE ||
        Field<uint32_t>(arg, offsetof(C, paramsSize)) < 1) {
      return;
    }
    const uint64_t params = Field<uint64_t>(arg, offsetof(C, params));
    if (params < 4096) {
      return;
    }
    const uint32_t h_root = Field<uint32_t>(arg, offsetof(C, hClient));
    const uint32_t h_tsg = Field<uint32_t>(arg, offsetof(C, hObject));
    const bool enable = Field<uint8_t>(reinterpret_cast<const void*>(params),
                                       offsetof(NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS, bEnable)) != 0;
    {
      std::lock_guard<std::mutex> lock(mu);
      auto it = objs.find({h_root, h_tsg});
      if (it == objs.end() || it->second.role != VCORE_CLASS_TSG) {
        return;
      }
      ev.push_back({enable ? VSHIM_TSG_SCHEDULED : VSHIM_TSG_UNSCHEDULED, h_root,
                    it->second.h_parent, h_tsg, it->second.h_class, it->second.engine_type, fd});
    }
  } else if (nr == NV_ESC_RM_FREE && size == sizeof(NVOS00_PARAMETERS)) {
    uint32_t h_root = Field<uint32_t>(arg, offsetof(NVOS00_PARAMETERS, hRoot));
    uint32_t h_old = Field<uint32_t>(arg, offsetof(NVOS00_PARAMETERS, hObjectOld));
    std::lock_guard<std::mutex> lock(mu);
    if (h_old == h_root) {
      DropClientLocked(h_root, ev);
    } else {
      auto it = objs.find({h_root, h_old});
      if (it == objs.end()) {
        return;
      }
      bool tsg = it->second.role == VCORE_CLASS_TSG;
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
  NVOS54_PARAMETERS p{h_client,    h_object, cmd, 0, reinterpret_cast<uint64_t>(params),
                      params_size, 0};
  int rc = vs::real::Ioctl(fd, vs::rm::IocEscape(NV_ESC_RM_CONTROL, sizeof p), &p);
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
