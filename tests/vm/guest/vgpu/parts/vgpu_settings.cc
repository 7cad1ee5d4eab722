// Every slot setting of the schema (uapi/vgpu_slot_fields.h) reaches vgpu.ko and comes back:
// set at creation and by SLOT_SET over netlink, read back in the netlink reply, by SLOT_GET and
// from the setting's sysfs file; values outside the row's range are refused. The rows are walked
// here as the module walks them, so a setting added to the schema that the module does not
// serve (no policy entry: strict validation refuses the attribute; no reply attribute; no sysfs
// file) fails this test. Linked into vgpu_gtest (guest.cmake).
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "vgpu_rm.h"

namespace vgpu_test {
namespace {

using vgpu::StatusCode;
using vgpu::kmod::SlotConfig;
using vgpu::kmod::SlotInfo;

struct SettingValue {
  uint64_t wire;
  std::string text;  // what sysfs shows
};

// One schema row as the test uses it.
struct SettingRow {
  std::string name;
  void (*set)(SlotConfig&, uint64_t);
  uint64_t (*get)(const SlotInfo&);
  std::vector<SettingValue> valid;
  std::vector<uint64_t> invalid;  // values the policy must refuse
};

SettingValue Number(uint64_t v) { return {v, std::to_string(v)}; }

std::vector<SettingRow> SchemaRows() {
  std::vector<SettingRow> rows;
#define VGPU_TEST_NUMBER_ROW(field, wire, unit, def, lo, hi, attr, env)                           \
  {                                                                                               \
    using T = vgpu::slot_schema::wire;                                                            \
    SettingRow r{#field,                                                                          \
                 [](SlotConfig& c, uint64_t v) { c.field = static_cast<T>(v); },                  \
                 [](const SlotInfo& i) { return static_cast<uint64_t>(i.field); },                \
                 {Number(lo), Number((lo) + ((hi) - (lo)) / 2), Number(hi)},                      \
                 {}};                                                                             \
    if ((lo) > 0) r.invalid.push_back((lo)-1);                                                    \
    if (static_cast<uint64_t>(hi) < std::numeric_limits<T>::max()) r.invalid.push_back((hi) + 1); \
    rows.push_back(r);                                                                            \
  }
  VGPU_SLOT_NUMBERS(VGPU_TEST_NUMBER_ROW)
#undef VGPU_TEST_NUMBER_ROW
#define VGPU_TEST_ENUM_VALUE(value, text) {value, text},
#define VGPU_TEST_ENUM_ROW(field, cxx_type, values, def, sentinel, attr, env)                     \
  rows.push_back(SettingRow{                                                                      \
      #field,                                                                                     \
      [](SlotConfig& c, uint64_t v) { c.field = static_cast<decltype(c.field)::value_type>(v); }, \
      [](const SlotInfo& i) { return static_cast<uint64_t>(i.field); },                           \
      {values(VGPU_TEST_ENUM_VALUE)},                                                             \
      {sentinel}});
  VGPU_SLOT_ENUMS(VGPU_TEST_ENUM_ROW)
#undef VGPU_TEST_ENUM_ROW
#undef VGPU_TEST_ENUM_VALUE
  return rows;
}

std::string SysfsSetting(uint32_t id, const std::string& name) {
  std::ifstream f("/sys/class/vgpu/vgpuctl" + std::to_string(id) + "/" + name);
  std::string v;
  if (!std::getline(f, v)) return "<no sysfs file " + name + ">";
  return v;
}

// The slot shows `v` for `row` in `reply`, in SLOT_GET and in sysfs.
void ExpectShows(vgpu::kmod::Client& nl, const SlotInfo& reply, const SettingRow& row,
                 const SettingValue& v, const char* how) {
  SCOPED_TRACE(row.name + " = " + v.text + " (" + how + ")");
  EXPECT_EQ(row.get(reply), v.wire) << "netlink reply";
  auto got = nl.GetSlot(reply.id);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(row.get(*got), v.wire) << "SLOT_GET";
  EXPECT_EQ(SysfsSetting(reply.id, row.name), v.text) << "sysfs";
}

TEST(Settings, EverySchemaSettingRoundTripsThroughNetlinkAndSysfs) {
  auto nl = Netlink();
  ASSERT_TRUE(nl);
  const auto rows = SchemaRows();
  ASSERT_GE(rows.size(), 5u) << "the schema's rows";
  for (const auto& row : rows) {
    for (const auto& v : row.valid) {
      // Set at creation.
      vgpu::kmod::SlotSpec spec;
      spec.gpu = 0;
      spec.config.name = "settings";
      row.set(spec.config, v.wire);
      auto created = nl->CreateSlot(spec);
      ASSERT_TRUE(created.ok()) << row.name << " = " << v.text << ": "
                                << created.status().ToString();
      ExpectShows(*nl, *created, row, v, "SLOT_NEW");
      ASSERT_TRUE(nl->DestroySlot(created->id, VGPU_DEL_F_DEFER).ok());

      // Changed by SLOT_SET on a slot created with the defaults.
      ScopedSlot slot(0, "settings");
      ASSERT_TRUE(slot.ok());
      SlotConfig cfg;
      row.set(cfg, v.wire);
      auto set = slot.nl().UpdateSlot(slot.id(), cfg);
      ASSERT_TRUE(set.ok()) << row.name << " = " << v.text << ": " << set.status().ToString();
      ExpectShows(slot.nl(), *set, row, v, "SLOT_SET");
    }
    for (uint64_t bad : row.invalid) {
      SCOPED_TRACE(row.name + " = " + std::to_string(bad) + " (outside the schema's range)");
      ScopedSlot slot(0, "settings");
      ASSERT_TRUE(slot.ok());
      const uint64_t before = row.get(slot.Get());
      SlotConfig cfg;
      row.set(cfg, bad);
      auto set = slot.nl().UpdateSlot(slot.id(), cfg);
      ASSERT_FALSE(set.ok());
      EXPECT_EQ(set.status().code(), StatusCode::kInvalidArgument) << set.status().ToString();
      EXPECT_EQ(row.get(slot.Get()), before) << "a refused SET changes nothing";
      vgpu::kmod::SlotSpec spec;
      spec.gpu = 0;
      row.set(spec.config, bad);
      auto created = nl->CreateSlot(spec);
      EXPECT_EQ(created.status().code(), StatusCode::kInvalidArgument)
          << created.status().ToString();
    }
  }
  EXPECT_EQ(nl->ListSlots()->size(), 0u) << "the test leaves no slot behind";
}

}  // namespace
}  // namespace vgpu_test
