#include "vgpu/text.h"

#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

namespace vgpu {
namespace {

using Lines = std::vector<std::string_view>;

TEST(SplitLinesTest, CutsAtNewlinesAndAFinalNewlineEndsTheLastLine) {
  EXPECT_EQ(SplitLines(""), Lines{});
  EXPECT_EQ(SplitLines("a"), Lines{"a"});
  EXPECT_EQ(SplitLines("a\n"), Lines{"a"});
  EXPECT_EQ(SplitLines("a\n\nb"), (Lines{"a", "", "b"}));
  EXPECT_EQ(SplitLines("\n"), Lines{""});
  EXPECT_EQ(SplitLines("a\r\nb\n"), (Lines{"a\r", "b"}));  // no other byte is special
}

TEST(ParseNumberTest, TakesOnlyAWholeNumberInRange) {
  EXPECT_EQ(ParseNumber<uint32_t>("42"), 42u);
  EXPECT_EQ(ParseNumber<int>("-7"), -7);
  EXPECT_EQ(ParseNumber<uint32_t>("4294967295"), 4294967295u);
  EXPECT_EQ(ParseNumber<uint32_t>("4294967296"), std::nullopt);  // out of range
  EXPECT_EQ(ParseNumber<uint32_t>("-1"), std::nullopt);
  EXPECT_EQ(ParseNumber<int>(""), std::nullopt);
  EXPECT_EQ(ParseNumber<int>("12ab"), std::nullopt);
  EXPECT_EQ(ParseNumber<int>(" 12"), std::nullopt);
  EXPECT_EQ(ParseNumber<int>("12 "), std::nullopt);
  EXPECT_EQ(ParseNumber<int>("+12"), std::nullopt);
}

// A path of this test process's own under gtest's temporary directory.
std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "vgpu-text-test-" + std::to_string(::getpid()) + "-" + name;
}

TEST(ReadFileToStringTest, ReturnsEveryByte) {
  const std::string path = TempPath("bytes");
  const std::string bytes("line one\n\0binary\xff\n", 18);
  std::ofstream(path, std::ios::binary) << bytes;
  Result<std::string> text = ReadFileToString(path);
  ::unlink(path.c_str());
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(*text, bytes);
}

TEST(ReadFileToStringTest, EmptyFileIsAnEmptyString) {
  const std::string path = TempPath("empty");
  std::ofstream{path};
  Result<std::string> text = ReadFileToString(path);
  ::unlink(path.c_str());
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(*text, "");
}

TEST(ReadFileToStringTest, MissingFileIsNotFoundAndNamesThePath) {
  const std::string path = TempPath("absent");
  Result<std::string> text = ReadFileToString(path);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(text.status().message(), "read " + path + ": No such file or directory");
}

}  // namespace
}  // namespace vgpu
