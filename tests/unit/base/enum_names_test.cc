#include "vgpu/enum_names.h"

#include <gtest/gtest.h>

namespace vgpu {
namespace {

enum class Color { kRed, kGreen, kBlue };

constexpr EnumName<Color> kColorNames[] = {
    {Color::kRed, "red"},
    {Color::kGreen, "green"},
    {Color::kBlue, "blue"},
};

TEST(EnumNamesTest, NameOfAndValueOfReadOneTableBothWays) {
  EXPECT_EQ(NameOf(Color::kGreen, kColorNames, "?"), "green");
  EXPECT_EQ(ValueOf("blue", kColorNames), Color::kBlue);
  for (const EnumName<Color>& entry : kColorNames) {
    EXPECT_EQ(ValueOf(NameOf(entry.value, kColorNames, "?"), kColorNames), entry.value);
  }
}

TEST(EnumNamesTest, UnlistedValueGetsTheFallbackAndUnknownNameNothing) {
  EXPECT_EQ(NameOf(static_cast<Color>(7), kColorNames, "unknown"), "unknown");
  EXPECT_EQ(ValueOf("Red", kColorNames), std::nullopt);  // exact match only
  EXPECT_EQ(ValueOf("", kColorNames), std::nullopt);
}

TEST(EnumNamesTest, NameIsACString) {
  // Callers that log with printf take .data(): the names are literals, so NUL-terminated.
  EXPECT_STREQ(NameOf(Color::kRed, kColorNames, "?").data(), "red");
  EXPECT_STREQ(NameOf(static_cast<Color>(9), kColorNames, "?").data(), "?");
}

TEST(EnumNamesTest, ListsEachRefusesASkippedRepeatedOrMissingValue) {
  static_assert(ListsEach(kColorNames, Color::kRed, Color::kBlue));
  constexpr EnumName<Color> skipped[] = {{Color::kRed, "red"}, {Color::kBlue, "blue"}};
  constexpr EnumName<Color> repeated[] = {
      {Color::kRed, "red"}, {Color::kRed, "red"}, {Color::kBlue, "blue"}};
  constexpr EnumName<Color> short_table[] = {{Color::kRed, "red"}, {Color::kGreen, "green"}};
  static_assert(!ListsEach(skipped, Color::kRed, Color::kBlue));
  static_assert(!ListsEach(repeated, Color::kRed, Color::kBlue));
  static_assert(!ListsEach(short_table, Color::kRed, Color::kBlue));
  EXPECT_FALSE(ListsEach(skipped, Color::kRed, Color::kBlue));  // and at run time
}

}  // namespace
}  // namespace vgpu
