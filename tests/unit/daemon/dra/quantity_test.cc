#include "vgpu/dra/quantity.h"

#include <gtest/gtest.h>

#include "vgpu/dra/device_model.h"

namespace vgpu::dra {
namespace {

TEST(Quantity, ParsesTheForms) {
  EXPECT_EQ(*ParseQuantity("8Gi"), 8ull << 30);
  EXPECT_EQ(*ParseQuantity("30"), 30u);
  EXPECT_EQ(*ParseQuantity("1.5Gi"), 3ull << 29);
  EXPECT_EQ(*ParseQuantity("2k"), 2000u);
  EXPECT_EQ(*ParseQuantity("1G"), 1000000000u);
  EXPECT_EQ(*ParseQuantity("1e3"), 1000u);
  EXPECT_EQ(*ParseQuantity("17179869184"), 17179869184u);
  EXPECT_EQ(*ParseQuantity("+4Mi"), 4u << 20);
}

TEST(Quantity, FractionsRoundUp) {
  EXPECT_EQ(*ParseQuantity("500m"), 1u);
  EXPECT_EQ(*ParseQuantity("0.1"), 1u);
  EXPECT_EQ(*ParseQuantity("1001m"), 2u);
  EXPECT_EQ(*ParseQuantity("0"), 0u);
}

TEST(Quantity, RejectsWhatIsNotAQuantity) {
  for (const char* bad : {"", "-1", "Gi", "8GB", "1.2.3", "1e", "1e9999", "99999999999Ei"}) {
    EXPECT_FALSE(ParseQuantity(bad).ok()) << bad;
  }
  EXPECT_NE(ParseQuantity("8GB").status().message().find("unknown suffix 'GB'"), std::string::npos);
}

TEST(DeviceModel, NamesRoundTrip) {
  for (uint32_t g : {0u, 7u, 63u}) {
    auto whole = ParseDeviceName(WholeDeviceName(g));
    auto share = ParseDeviceName(ShareDeviceName(g));
    ASSERT_TRUE(whole && share);
    EXPECT_EQ(whole->gpu, g);
    EXPECT_FALSE(whole->share);
    EXPECT_EQ(share->gpu, g);
    EXPECT_TRUE(share->share);
  }
  for (const char* bad : {"gpu-", "gpu-01", "gpu-x", "gpu-1-sharex", "cpu-1", "gpu--share"}) {
    EXPECT_FALSE(ParseDeviceName(bad)) << bad;
  }
}

}  // namespace
}  // namespace vgpu::dra
