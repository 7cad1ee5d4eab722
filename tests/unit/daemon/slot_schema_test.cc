// The slot schema end to end (uapi/vgpu_slot_fields.h): a slot written by the manager's own
// writer is read back by the shim's own parser and by the module client's message encoding and
// decoding, and every setting takes effect. The settings come from the schema's rows, so a new
// row is tested without touching this file.
//
// On the tree before the schema (c2d5471) the manager wrote `compute_share_percent=30`, the shim
// read `compute_share`, the compute mode was not written at all: this test failed there with
// extra["compute_share"] == "" and extra["compute_mode"] == "" (a share of 30 ran uncapped).
#include <gtest/gtest.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>

#include <nlohmann/json.hpp>

#include "shim/preload/config.h"
#include "vgpu/kmodclient.h"
#include "vgpu/slots/kmod_backend.h"
#include "vgpu/slots/slot_config_file.h"

namespace vgpu {
namespace {

// A value of every setting other than its default, from the row: the default's neighbour in
// range for a number, the last listed value (or the first, if that is the default) for an enum.
uint64_t OtherNumber(uint64_t def, uint64_t min, uint64_t max) {
  return def < max ? (def > min ? def - 1 : def + 1) : def - 1;
}
template <typename E>
E OtherEnum(uint32_t def, std::initializer_list<uint32_t> values) {
  return static_cast<E>(*(values.end() - 1) != def ? *(values.end() - 1) : *values.begin());
}
#define VGPU_VALUE_OF(v, name) v,

slots::SlotConfig NonDefaultSlot() {
  slots::SlotConfig c;
  c.id = 3;
  c.name = "g0-m17-n8";
  c.gpu = 1;
  c.gpu_uuid = "GPU-abc";
#define VGPU_SET_NUMBER(field, wire, unit, def, min, max, attr, env) \
  c.field = static_cast<slot_schema::wire>(OtherNumber(def, min, max));
  VGPU_SLOT_NUMBERS(VGPU_SET_NUMBER)
#undef VGPU_SET_NUMBER
#define VGPU_SET_ENUM(field, type, values, def, max, attr, env) \
  c.field = OtherEnum<type>(def, {values(VGPU_VALUE_OF)});
  VGPU_SLOT_ENUMS(VGPU_SET_ENUM)
#undef VGPU_SET_ENUM
  return c;
}

TEST(SlotSchemaRoundTrip, EverySettingDiffersFromItsDefault) {
  slots::SlotConfig c = NonDefaultSlot();
  SlotSettings defaults;
#define VGPU_DIFFERS(field, ...) EXPECT_NE(c.field, defaults.field) << #field;
  VGPU_SLOT_NUMBERS(VGPU_DIFFERS)
  VGPU_SLOT_ENUMS(VGPU_DIFFERS)
#undef VGPU_DIFFERS
}

// The slot: 4 GiB, a cap of 30 %; and the same in weight mode.
TEST(SlotSchemaRoundTrip, TheComputeShareReachesTheShim) {
  for (ComputeMode mode : {ComputeMode::kCap, ComputeMode::kWeight}) {
    slots::SlotConfig c;
    c.mem_quota = 4ull << 30;
    c.compute_share = 30;
    c.compute_mode = mode;
    shim::SlotConfig s;
    ASSERT_EQ(shim::ParseConfigText(s, slots::FormatSlotConfigFile(c)), "");
    shim::PublishSettings(s);
    // What shim/compute reads through vshim_config_get.
    EXPECT_EQ(s.extra["compute_share"], "30");
    EXPECT_EQ(s.extra["compute_mode"], mode == ComputeMode::kCap ? "cap" : "weight");
    EXPECT_EQ(s.mem_quota, 4ull << 30);
  }
}

// The GPU's reference clock, as the manager writes it into a new slot (daemon/reference_clock),
// is what the shim's compute host reads (shim/compute/compute_shim.cc): no probe needed for it.
TEST(SlotSchemaRoundTrip, TheReferenceClockReachesTheShim) {
  slots::SlotConfig c;
  c.compute_share = 70;
  c.compute_ref_clock_mhz = 1483;
  shim::SlotConfig s;
  ASSERT_EQ(shim::ParseConfigText(s, slots::FormatSlotConfigFile(c)), "");
  shim::PublishSettings(s);
  EXPECT_EQ(s.extra["compute_ref_clock_mhz"], "1483");
  shim::SlotConfig unknown;
  ASSERT_EQ(shim::ParseConfigText(unknown, slots::FormatSlotConfigFile(slots::SlotConfig{})), "");
  shim::PublishSettings(unknown);
  EXPECT_EQ(unknown.extra["compute_ref_clock_mhz"], "0") << "unknown: the shim probes";
  shim::SlotConfig bad;
  EXPECT_NE(shim::ParseConfigText(bad, "compute_ref_clock_mhz=20000\n"), "") << "out of range";
}

// The GPU the manager granted is the GPU the shim confines the slot to (docs/security.md F11.3):
// the file's gpu_index, the minor of its /dev/nvidiaN, which the shim resolves to the driver's id.
TEST(SlotSchemaRoundTrip, TheSlotsGpuReachesTheShim) {
  slots::SlotConfig c;
  c.gpu = 3;
  c.gpu_uuid = "GPU-3";
  shim::SlotConfig s;
  ASSERT_EQ(shim::ParseConfigText(s, slots::FormatSlotConfigFile(c)), "");
  EXPECT_EQ(s.gpu_index, std::optional<uint32_t>{3});
}

TEST(SlotSchemaRoundTrip, ManagerWriterToShimParser) {
  const slots::SlotConfig c = NonDefaultSlot();
  const std::string text = slots::FormatSlotConfigFile(c);
  shim::SlotConfig s;
  ASSERT_EQ(shim::ParseConfigText(s, text), "") << text;
  shim::PublishSettings(s);
#define VGPU_SHIM_NUMBER(field, ...)     \
  EXPECT_EQ(s.field, c.field) << #field; \
  EXPECT_EQ(s.extra[#field], std::to_string(c.field)) << #field;
  VGPU_SLOT_NUMBERS(VGPU_SHIM_NUMBER)
#undef VGPU_SHIM_NUMBER
#define VGPU_SHIM_ENUM(field, ...)                              \
  EXPECT_EQ(s.field, static_cast<uint32_t>(c.field)) << #field; \
  EXPECT_EQ(s.extra[#field], SettingValueName(c.field)) << #field;
  VGPU_SLOT_ENUMS(VGPU_SHIM_ENUM)
#undef VGPU_SHIM_ENUM
  EXPECT_EQ(s.slot_id, c.id);
  EXPECT_EQ(s.ledger_path, "/run/vgpu/ledger") << "the ledger's own directory, not the config's";
  // And the manager's own reader (restart, reconciliation) gets the same slot back.
  auto back = slots::ParseSlotConfigFile(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, c);
}

TEST(SlotSchemaRoundTrip, ManagerToModuleClientMessageAndBack) {
  const slots::SlotConfig c = NonDefaultSlot();
  std::unique_ptr<nl_msg, void (*)(nl_msg*)> msg(nlmsg_alloc(), nlmsg_free);
  ASSERT_NE(genlmsg_put(msg.get(), NL_AUTO_PORT, NL_AUTO_SEQ, 42, 0, 0, VGPU_CMD_SLOT_GET,
                        VGPU_GENL_VERSION),
            nullptr);
  ASSERT_EQ(nla_put_u32(msg.get(), VGPU_A_SLOT_ID, c.id), 0);
  ASSERT_EQ(nla_put_u32(msg.get(), VGPU_A_SLOT_GPU, c.gpu), 0);
  ASSERT_TRUE(kmod::PutSlotConfig(msg.get(), slots::ToKmodConfig(c)));
  auto info = kmod::ParseSlotMessage(msg.get());
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  slots::SlotConfig back = slots::FromKmodInfo(*info);
  back.gpu_uuid = c.gpu_uuid;  // the module does not keep it
#define VGPU_MODULE_SETTING(field, ...) EXPECT_EQ(back.field, c.field) << #field;
  VGPU_SLOT_NUMBERS(VGPU_MODULE_SETTING)
  VGPU_SLOT_ENUMS(VGPU_MODULE_SETTING)
#undef VGPU_MODULE_SETTING
  EXPECT_EQ(back, c);
}

TEST(SlotSchemaRoundTrip, JsonCodecKeepsEverySetting) {
  const slots::SlotConfig c = NonDefaultSlot();
  nlohmann::json j = nlohmann::json::object();
  SettingsToJson(c, j);
  EXPECT_EQ(j.size(), SettingKeys().size());
  SlotSettings back;
  ASSERT_TRUE(SettingsFromJson(j, back, true).ok());
  EXPECT_EQ(back, static_cast<const SlotSettings&>(c));
  j.erase("compute_mode");
  EXPECT_FALSE(SettingsFromJson(j, back, true).ok()) << "a missing setting is named";
  j["compute_share"] = 101;
  auto s = SettingsFromJson(j, back, false);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("compute_share"), std::string::npos) << s.message();
}

// A setting the shim does not know must never be silently dropped: the old spellings are refused.
TEST(SlotSchemaRoundTrip, TheShimRefusesRetiredKeys) {
  for (const char* line : {"compute_share_percent=30\n", "memory_quota_bytes=1\n",
                           "memory_quota=4G\n", "managed=refuse\n", "policy=permissive\n"}) {
    shim::SlotConfig s;
    std::string err = shim::ParseConfigText(s, line);
    EXPECT_NE(err.find("is now"), std::string::npos) << line << ": " << err;
  }
  shim::SlotConfig s;
  EXPECT_NE(shim::ParseConfigText(s, "version=1\n"), "") << "a version-1 file is refused";
}

}  // namespace
}  // namespace vgpu
