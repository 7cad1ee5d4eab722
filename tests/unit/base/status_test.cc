#include "vgpu/status.h"

#include <cerrno>

#include <gtest/gtest.h>

namespace vgpu {
namespace {

Result<int> ParsePositive(int v) {
  if (v <= 0) {
    return InvalidArgumentError("--value: must be positive, got " + std::to_string(v));
  }
  return v;
}

Status Chain(int v) {
  Result<int> r = ParsePositive(v);
  VGPU_RETURN_IF_ERROR(r.status().ok() ? OkStatus() : r.status().Annotate("config"));
  return OkStatus();
}

TEST(StatusTest, ResultCarriesValueOrError) {
  Result<int> good = ParsePositive(3);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 3);
  Result<int> bad = ParsePositive(-1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().ToString(), "INVALID_ARGUMENT: --value: must be positive, got -1");
}

TEST(StatusTest, OkStatusCannotMasqueradeAsValue) {
  Result<int> r(OkStatus());
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
}

TEST(StatusTest, ReturnIfErrorPropagatesWithContext) {
  EXPECT_TRUE(Chain(1).ok());
  Status s = Chain(0);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "config: --value: must be positive, got 0");
}

TEST(StatusTest, ErrnoMapsToCanonicalCodes) {
  EXPECT_EQ(ErrnoError("open x", ENOENT).code(), StatusCode::kNotFound);
  EXPECT_EQ(ErrnoError("open x", EACCES).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(ErrnoError("open x", EIO).code(), StatusCode::kInternal);
  EXPECT_NE(ErrnoError("open x", ENOENT).message().find("open x: "), std::string::npos);
}

}  // namespace
}  // namespace vgpu
