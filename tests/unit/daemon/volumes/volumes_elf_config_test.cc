#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "vgpu/volumes/elf_info.h"
#include "vgpu/volumes/ld_cache.h"
#include "vgpu/volumes/volume_config.h"

namespace vgpu::volumes {
namespace {

const std::string kElfDir = VGPU_TEST_ELF_DIR;

TEST(ElfInfoTest, Reads64BitSoname) {
  auto info = ReadElfInfo(kElfDir + "/cuda64.so");
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->bits, 64);
  EXPECT_EQ(info->soname, "libcuda.so.1");
}

TEST(ElfInfoTest, Reads32BitSoname) {
  auto info = ReadElfInfo(kElfDir + "/cuda32.so");
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->bits, 32);
  EXPECT_EQ(info->soname, "libcuda.so.1");
}

TEST(ElfInfoTest, NoSonameIsNotAnError) {
  auto info = ReadElfInfo(kElfDir + "/nosoname64.so");
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->bits, 64);
  EXPECT_FALSE(info->soname.has_value());
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/vgpu-ops-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(ElfInfoTest, MalformedFilesAreClearErrors) {
  TempDir dir;
  const std::string text = dir.path() + "/text";
  std::ofstream(text) << "#!/bin/sh\necho not elf\n";
  auto r = ReadElfInfo(text);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("not an ELF file"), std::string::npos);

  // Every truncation of a real library must fail cleanly (never read past the end).
  std::ifstream in(kElfDir + "/cuda64.so", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  ASSERT_GT(bytes.size(), 512u);
  for (size_t len : {size_t{4}, size_t{20}, size_t{64}, size_t{100}, size_t{400}}) {
    const std::string cut = dir.path() + "/cut";
    std::ofstream(cut, std::ios::binary | std::ios::trunc).write(bytes.data(), len);
    auto c = ReadElfInfo(cut);
    EXPECT_FALSE(c.ok()) << "len " << len;
  }
  // A corrupt DT_SONAME offset: patch e_phoff to point past the end.
  std::string bad = bytes;
  bad[0x20] = '\xff';
  bad[0x21] = '\xff';
  bad[0x22] = '\xff';
  const std::string bad_path = dir.path() + "/bad";
  std::ofstream(bad_path, std::ios::binary).write(bad.data(), bad.size());
  EXPECT_EQ(ReadElfInfo(bad_path).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadElfInfo(dir.path() + "/absent").status().code(), StatusCode::kNotFound);
}

TEST(LdCacheTest, ParsesLdconfigPrint) {
  auto entries = ParseLdconfigPrint(
      "3 libs found in cache `/etc/ld.so.cache'\n"
      "\tlibcuda.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so.1\n"
      "\tlibcuda.so.1 (libc6) => /usr/lib/i386-linux-gnu/libcuda.so.1\n"
      "\tlibfoo.so (libc6,x86-64, OS ABI: Linux 3.2.0) => /opt/x (y)/libfoo.so\n");
  ASSERT_TRUE(entries.ok()) << entries.status().ToString();
  ASSERT_EQ(entries->size(), 3u);
  EXPECT_EQ((*entries)[0].name, "libcuda.so.1");
  EXPECT_EQ((*entries)[0].flags, "libc6,x86-64");
  EXPECT_EQ((*entries)[1].flags, "libc6");
  EXPECT_EQ((*entries)[1].path, "/usr/lib/i386-linux-gnu/libcuda.so.1");
  EXPECT_EQ((*entries)[2].flags, "libc6,x86-64, OS ABI: Linux 3.2.0");
  EXPECT_EQ((*entries)[2].path, "/opt/x (y)/libfoo.so");
}

TEST(LdCacheTest, RejectsLinesItDoesNotUnderstand) {
  auto r = ParseLdconfigPrint("1 libs found\n\tgarbage line\n");
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("line 2"), std::string::npos);
}

TEST(LdCacheTest, ReadsThisMachinesCacheThroughLdconfig) {
  if (access("/etc/ld.so.cache", R_OK) != 0) GTEST_SKIP() << "no /etc/ld.so.cache";
  auto entries = ReadLdCache("ldconfig", "/etc/ld.so.cache");
  ASSERT_TRUE(entries.ok()) << entries.status().ToString();
  bool libc = false;
  for (const auto& e : *entries) libc |= e.name == "libc.so.6";
  EXPECT_TRUE(libc);
  EXPECT_FALSE(ReadLdCache("ldconfig", "/nonexistent/ld.so.cache").ok());
}

TEST(VolumeConfigTest, ParsesGpuManagerFormatWithOurKeys) {
  auto c = ParseVolumeConfig(R"({"volume": [
    {"name": "nvidia", "base": "/etc/vgpu/vdriver", "mode": "ro",
     "components": {"binaries": ["nvidia-smi"], "libraries": ["libcuda.so", "libnvidia-ml.so"]},
     "blacklist": ["libnvidia-gtk*"]},
    {"name": "origin", "base": "/etc/vgpu/vdriver", "mount_path": "/usr/local/origin",
     "components": {"libraries": ["libcuda.so"]}, "cuda_shim": false}]})");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->volumes.size(), 2u);
  EXPECT_EQ(c->volumes[0].mount_path, "/usr/local/nvidia");
  EXPECT_EQ(c->volumes[0].libraries.size(), 2u);
  EXPECT_TRUE(c->volumes[0].cuda_shim);
  EXPECT_FALSE(c->volumes[1].cuda_shim);
  EXPECT_TRUE(Blacklisted(c->volumes[0], "libnvidia-gtk3.so.580.1"));
  EXPECT_FALSE(Blacklisted(c->volumes[0], "libnvidia-ml.so.1"));
}

TEST(VolumeConfigTest, ErrorsNameTheKey) {
  struct Case {
    const char* json;
    const char* expect;
  } cases[] = {
      {"not json", "not valid JSON"},
      {R"({"volumes": []})", "expected {\"volume\""},
      {R"({"volume": [{"base": "/x"}]})", "volume[0].name: missing"},
      {R"({"volume": [{"name": "a", "base": "rel"}]})", "volume[0].base: not an absolute"},
      {R"({"volume": [{"name": "a", "base": "/x", "components": {"libraries": [3]}}]})",
       "volume[0].components.libraries[0]"},
      {R"({"volume": [{"name": "a", "base": "/x", "components": {"binaries": ["../sh"]}}]})",
       "volume[0].components.binaries[0]"},
      {R"({"volume": [{"name": "a", "base": "/x", "mode": "wo"}]})", "volume[0].mode"},
      {R"({"volume": [{"name": "a", "base": "/x"}, {"name": "a", "base": "/y"}]})",
       "volume[1].name: duplicate"},
  };
  for (const Case& c : cases) {
    auto r = ParseVolumeConfig(c.json);
    ASSERT_FALSE(r.ok()) << c.json;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(c.expect), std::string::npos) << r.status().ToString();
    EXPECT_EQ(r.status().message().rfind("--volume-config", 0), 0u);
  }
}

TEST(VolumeConfigTest, LibraryItemsMatchWholeDottedComponents) {
  EXPECT_TRUE(LibraryItemMatches("libcuda.so", "libcuda.so"));
  EXPECT_TRUE(LibraryItemMatches("libcuda.so", "libcuda.so.1"));
  EXPECT_TRUE(LibraryItemMatches("libcuda", "libcuda.so.1"));
  EXPECT_FALSE(LibraryItemMatches("libcuda.so", "libcudart.so.12"));
  EXPECT_FALSE(LibraryItemMatches("libGL.so", "libGLX.so.0"));
  EXPECT_FALSE(LibraryItemMatches("libcuda", "libcuda-control.so"));
}

}  // namespace
}  // namespace vgpu::volumes
