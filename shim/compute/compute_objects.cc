// ComputeHost's view of the tenant's RM objects (from the shim's hooks): TSGs, their channels
// and schedule, subdevices, and the snapshot the gate and the meter work from.
#include <iterator>
#include <mutex>

#include "kmod/core/abi/classes.h"
#include "kmod/core/abi/ctrl.h"
#include "shim/compute/compute_host.h"

namespace vgpu::shim::compute {

namespace {

constexpr uint32_t kEngineGr = NV2080_ENGINE_TYPE_GRAPHICS;  // the compute TSG

}  // namespace

void ComputeHost::OnTsg(uint32_t h_client, uint32_t h_device, uint32_t h_tsg,
                        uint32_t engine_type) {
  std::lock_guard<std::mutex> lock(objs_mu_);
  tsgs_[{h_client, h_tsg}] = Tsg{h_device, engine_type, false};
  generation_++;
}

// Scheduled TSGs only
// -------------------
// libcuda builds a context as TSG -> channels -> UVM_REGISTER_CHANNEL per channel ->
// GPFIFO_SCHEDULE(bEnable=1) per TSG (nvidia-rm-abi.md §6.1; RM refuses to schedule channels UVM
// has not bound). On the H200 a tenant capped from its first kernel froze for good when its GR
// TSG was gated early (docs/results/compute-h200.md, runs 5-9): gated as soon as it was
// allocated, its first PREEMPT(bWait=1) held RM for 4.0 s and the process never ran again;
// gated from the moment its schedule succeeded, it froze just the same (GPU idle, every later
// DISABLE_CHANNELS and PREEMPT status 0), with the standalone test preload as with the full shim;
// capped only after a while uncapped, every cap held. Those runs broke the gate's protocol
// (compute_gate.cc: enables of channels the gate had not disabled); with it kept, no tenant froze
// (runs 11-13). A TSG is still left alone until settle_ns after its schedule succeeded (libcuda
// finishes the context after the schedule: GR_SET_CTXSW_PREEMPTION_MODE, its own SET_TIMESLICE,
// §6.1), which the protocol runs were measured with: Snapshot() hides it from the gate, PREEMPT and
// SET_TIMESLICE until the control thread marks it settled (Reapply(): it is disabled and preempted
// at once if the slot is gated off, else at the next off edge). The settle of a process's first
// context is not measured either (MeasureOnce() starts with the first settled TSG): on the H200,
// 250 ms settles measured that way held caps 10-90 on both loops with no stall (run 8), while 500
// ms settles whose GPU time was measured and carried as debt held the new context off for ~3 s
// right away and froze it again (run 9). The price is that a context runs uncapped for its first
// settle_ns.
void ComputeHost::OnTsgScheduled(uint32_t h_client, uint32_t h_tsg, bool scheduled) {
  std::lock_guard<std::mutex> lock(objs_mu_);
  auto it = tsgs_.find({h_client, h_tsg});
  if (it != tsgs_.end() && it->second.scheduled != scheduled) {
    it->second.scheduled = scheduled;
    it->second.scheduled_ns = MonotonicNs();
    it->second.settled = scheduled && cfg_.settle_ns == 0;
    generation_++;
  }
}

void ComputeHost::OnTsgFreed(uint32_t h_client, uint32_t h_tsg) {
  std::lock_guard<std::mutex> lock(objs_mu_);
  tsgs_.erase({h_client, h_tsg});
  for (auto it = channels_.lower_bound({h_client, 0});
       it != channels_.end() && it->first.first == h_client;) {
    it = it->second.h_tsg == h_tsg ? channels_.erase(it) : std::next(it);
  }
  generation_++;
}

void ComputeHost::OnChannel(uint32_t h_client, uint32_t h_tsg, uint32_t h_channel) {
  std::lock_guard<std::mutex> lock(objs_mu_);
  channels_[{h_client, h_channel}] = Channel{h_tsg};
  generation_++;
}

void ComputeHost::OnChannelFreed(uint32_t h_client, uint32_t h_channel) {
  std::lock_guard<std::mutex> lock(objs_mu_);
  channels_.erase({h_client, h_channel});
  generation_++;
}

void ComputeHost::OnClientGone(uint32_t h_client) {
  std::lock_guard<std::mutex> lock(objs_mu_);
  for (auto* m : {&tsgs_}) {
    for (auto it = m->lower_bound({h_client, 0}); it != m->end() && it->first.first == h_client;) {
      it = m->erase(it);
    }
  }
  for (auto it = channels_.lower_bound({h_client, 0});
       it != channels_.end() && it->first.first == h_client;) {
    it = channels_.erase(it);
  }
  generation_++;
}

void ComputeHost::OnSubdevice(uint32_t h_client, uint32_t h_device, uint32_t h_subdevice) {
  std::lock_guard<std::mutex> lock(objs_mu_);
  subdevices_[{h_client, h_device}] = h_subdevice;
}

std::vector<ComputeHost::ClientObjs> ComputeHost::Snapshot(bool settled_only) {
  std::vector<ClientObjs> out;
  std::lock_guard<std::mutex> lock(objs_mu_);
  for (const auto& [key, tsg] : tsgs_) {
    if (tsg.engine_type != kEngineGr || !tsg.scheduled || (settled_only && !tsg.settled)) {
      continue;  // copy-engine TSGs are DMA, not compute; unscheduled ones are being set up
    }
    if (out.empty() || out.back().h_client != key.first) {
      out.push_back({key.first, tsg.h_device, {}, {}, {}, {}});
    }
    out.back().tsgs.push_back(key.second);
  }
  for (const auto& [key, ch] : channels_) {
    for (auto& c : out) {
      if (c.h_client != key.first) {
        continue;
      }
      for (uint32_t t : c.tsgs) {
        if (t == ch.h_tsg) {
          c.channels.push_back(key.second);
          if (ch.disabled) {
            c.disabled_channels.push_back(key.second);
          }
          if (!ch.disable_confirmed) {
            c.to_disable.push_back(key.second);
          }
        }
      }
    }
  }
  return out;
}

uint32_t ComputeHost::CachedSubdevice(uint32_t h_client, uint32_t h_device) {
  std::lock_guard<std::mutex> lock(objs_mu_);
  auto it = subdevices_.find({h_client, h_device});
  return it != subdevices_.end() ? it->second : 0;
}

uint32_t ComputeHost::Subdevice(uint32_t h_client, uint32_t h_device) {
  {
    std::lock_guard<std::mutex> lock(objs_mu_);
    auto it = subdevices_.find({h_client, h_device});
    if (it != subdevices_.end()) {
      return it->second;
    }
  }
  // NV0000_CTRL_CMD_CLIENT_GET_CHILD_HANDLE (ctrl0000client.h) finds the subdevice libcuda
  // allocated under the device. A second subdevice of the same instance cannot be allocated
  // (subdeviceConstruct: NV_ERR_INSUFFICIENT_RESOURCES), so we look up libcuda's.
  NV0000_CTRL_CMD_CLIENT_GET_CHILD_HANDLE_PARAMS p{h_device, NV20_SUBDEVICE_0, 0};
  uint32_t status = 0;
  const int rc = rm_(rm_ctx_, h_client, h_client, NV0000_CTRL_CMD_CLIENT_GET_CHILD_HANDLE, &p,
                     sizeof p, &status);
  const uint32_t h = rc == 0 && status == 0 ? p.hObject : 0;
  std::lock_guard<std::mutex> lock(objs_mu_);
  subdevices_[{h_client, h_device}] = h;
  return h;
}

}  // namespace vgpu::shim::compute
