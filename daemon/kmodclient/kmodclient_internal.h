// Shared between kmodclient's files (not installed): the client-side policy of the family's
// attributes, used to parse every reply and event.
#pragma once

#include <netlink/attr.h>

namespace vgpu::kmod::internal {

// Types and lengths of what the kernel sends (enum vgpu_attr), so a parser never reads past an
// attribute even against a newer module.
nla_policy* ReplyPolicy();

}  // namespace vgpu::kmod::internal
