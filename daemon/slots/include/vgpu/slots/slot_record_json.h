// A slot record as JSON, spelled once: the checkpoint stores it (daemon/checkpoint) and the
// control API lists it (daemon/manager/control_api.cc). The slot's settings go under their schema
// names (uapi/vgpu_slot_fields.h), beside the slot's identity and the kubelet's grant.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "vgpu/slots/slot_record.h"

namespace vgpu::slots {

nlohmann::json SlotRecordToJson(const SlotRecord& record);

}  // namespace vgpu::slots
