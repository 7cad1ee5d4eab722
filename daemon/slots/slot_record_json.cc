#include "vgpu/slots/slot_record_json.h"

#include <nlohmann/json.hpp>

#include "vgpu/slot_settings.h"

namespace vgpu::slots {

nlohmann::json SlotRecordToJson(const SlotRecord& record) {
  const SlotConfig& c = record.config;
  nlohmann::json j{{"id", c.id},
                   {"name", c.name},
                   {"gpu", c.gpu},
                   {"gpu_uuid", c.gpu_uuid},
                   {"exclusive", c.exclusive},
                   {"memory_ids", record.memory_ids},
                   {"core_ids", record.core_ids},
                   {"gpu_ids", record.gpu_ids},
                   {"pod_namespace", record.pod_namespace},
                   {"pod_name", record.pod_name},
                   {"container", record.container},
                   {"linked", record.linked},
                   {"manual", record.manual}};
  SettingsToJson(c, j);
  return j;
}

}  // namespace vgpu::slots
