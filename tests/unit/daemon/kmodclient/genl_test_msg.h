// Builds a generic-netlink message the way vgpu.ko starts its replies, for tests that feed the
// real libnl decoders of kmodclient (kmodclient_test.cc and
// tests/unit/daemon/vgpuctl/compute_ctl_test.cc).
#pragma once

#include <netlink/genl/genl.h>
#include <netlink/msg.h>

#include <cstdint>
#include <memory>

#include <gtest/gtest.h>

#include "vgpu/kmodclient.h"

namespace vgpu::kmod {

using MsgPtr = std::unique_ptr<nl_msg, void (*)(nl_msg*)>;

// A genl header for `cmd` at VGPU_GENL_VERSION (family id 42: the decoders do not look at it).
inline MsgPtr NewMsg(uint8_t cmd) {
  MsgPtr m(nlmsg_alloc(), nlmsg_free);
  EXPECT_NE(genlmsg_put(m.get(), NL_AUTO_PORT, NL_AUTO_SEQ, 42, 0, 0, cmd, VGPU_GENL_VERSION),
            nullptr);
  return m;
}

}  // namespace vgpu::kmod
