// The vdriver mirror against a synthetic driver root built from real ELF objects (32- and
// 64-bit, with sonames), relative and absolute symlinks, blacklisted entries and binaries.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "vgpu/volumes/elf_info.h"
#include "vgpu/volumes/mirror.h"

namespace vgpu::volumes {
namespace {

namespace fs = std::filesystem;
const std::string kElfDir = VGPU_TEST_ELF_DIR;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

std::string LinkTarget(const std::string& path) {
  std::error_code ec;
  if (!fs::is_symlink(fs::symlink_status(path, ec))) return "<not a link>";
  return fs::read_symlink(path).string();
}

class MirrorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/vgpu-mirror-XXXXXX";
    tmp_ = mkdtemp(tmpl);
    root_ = tmp_ + "/host";
    base_ = tmp_ + "/vdriver";
    const std::string l64 = root_ + "/usr/lib/x86_64-linux-gnu";
    const std::string l32 = root_ + "/usr/lib/i386-linux-gnu";
    fs::create_directories(l64);
    fs::create_directories(l32);
    fs::create_directories(root_ + "/usr/bin");
    fs::copy_file(kElfDir + "/cuda64.so", l64 + "/libcuda.so.580.1");
    fs::create_symlink("libcuda.so.580.1", l64 + "/libcuda.so.1");
    fs::create_symlink("libcuda.so.1", l64 + "/libcuda.so");
    fs::copy_file(kElfDir + "/cuda32.so", l32 + "/libcuda.so.580.1");
    fs::create_symlink("libcuda.so.580.1", l32 + "/libcuda.so.1");
    fs::copy_file(kElfDir + "/nvml64.so", l64 + "/libnvidia-ml.so.580.1");
    fs::create_symlink("libnvidia-ml.so.580.1", l64 + "/libnvidia-ml.so.1");
    // Absolute, as the host sees it: must resolve inside the driver root, not in ours.
    fs::create_symlink("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", l64 + "/libnvidia-ml.so");
    fs::copy_file(kElfDir + "/gtk64.so", l64 + "/libnvidia-gtk3.so.580.1");
    std::ofstream(root_ + "/usr/bin/nvidia-smi") << "#!/bin/sh\necho smi\n";
    fs::permissions(root_ + "/usr/bin/nvidia-smi", fs::perms(0755));
    std::ofstream(root_ + "/usr/bin/nvidia-debugdump") << "#!/bin/sh\n";
    fs::permissions(root_ + "/usr/bin/nvidia-debugdump", fs::perms(0755));
    std::ofstream(root_ + "/usr/bin/nvidia-notexec") << "data\n";
    fs::copy_file(kElfDir + "/shim64.so", tmp_ + "/libvgpu-shim.so");

    // What `ldconfig -p` lists for such a host (paths as the host sees them).
    cache_ = {
        {"libnvidia-ml.so.1", "libc6,x86-64", "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"},
        {"libnvidia-ml.so", "libc6,x86-64", "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so"},
        {"libnvidia-gtk3.so.580.1", "libc6,x86-64",
         "/usr/lib/x86_64-linux-gnu/libnvidia-gtk3.so.580.1"},
        {"libcudart.so.12", "libc6,x86-64", "/usr/lib/x86_64-linux-gnu/libcudart.so.12"},
        {"libcuda.so.1", "libc6,x86-64", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"},
        {"libcuda.so.1", "libc6", "/usr/lib/i386-linux-gnu/libcuda.so.1"},
        {"libcuda.so", "libc6,x86-64", "/usr/lib/x86_64-linux-gnu/libcuda.so"},
    };
    spec_.name = "nvidia";
    spec_.base = base_;
    spec_.libraries = {"libcuda.so", "libnvidia-ml.so", "libnvidia-gtk3.so", "libnvidia-absent.so"};
    spec_.binaries = {"nvidia-smi", "nvidia-debugdump", "nvidia-notexec"};
    spec_.blacklist = {"libnvidia-gtk*", "nvidia-debugdump"};
    options_.driver_root = root_;
    options_.shim_library = tmp_ + "/libvgpu-shim.so";
  }
  void TearDown() override { fs::remove_all(tmp_); }

  std::string Vol(const std::string& rel) const { return base_ + "/nvidia/" + rel; }

  std::string tmp_, root_, base_;
  std::vector<LdCacheEntry> cache_;
  VolumeSpec spec_;
  MirrorOptions options_;
};

TEST_F(MirrorTest, BuildsTreeWithSonameLinksAndClassDirs) {
  auto r = MirrorVolume(spec_, cache_, options_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();

  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(Vol("lib64/libcuda.so.580.1"))));
  EXPECT_EQ(ReadAll(Vol("lib64/libcuda.so.580.1")), ReadAll(kElfDir + "/cuda64.so"));
  EXPECT_EQ(LinkTarget(Vol("lib64/libcuda.so.1")), "libcuda.so.580.1");
  EXPECT_EQ(LinkTarget(Vol("lib64/libcuda.so")), "libcuda.so.580.1");
  EXPECT_EQ(LinkTarget(Vol("lib64/libnvidia-ml.so.1")), "libnvidia-ml.so.580.1");
  EXPECT_EQ(LinkTarget(Vol("lib64/libnvidia-ml.so")), "libnvidia-ml.so.580.1");
  EXPECT_EQ(ReadAll(Vol("lib64/libnvidia-ml.so.580.1")), ReadAll(kElfDir + "/nvml64.so"));

  // The 32-bit libcuda lands in lib/, and is still a 32-bit object there.
  auto elf32 = ReadElfInfo(Vol("lib/libcuda.so.580.1"));
  ASSERT_TRUE(elf32.ok()) << elf32.status().ToString();
  EXPECT_EQ(elf32->bits, 32);
  EXPECT_EQ(LinkTarget(Vol("lib/libcuda.so.1")), "libcuda.so.580.1");
  EXPECT_FALSE(fs::exists(Vol("lib/libnvidia-ml.so.1")));

  EXPECT_FALSE(fs::exists(Vol("lib64/libnvidia-gtk3.so.580.1")));
  EXPECT_FALSE(fs::exists(Vol("lib64/libcudart.so.12")));
  EXPECT_EQ(ReadAll(Vol("bin/nvidia-smi")), "#!/bin/sh\necho smi\n");
  EXPECT_EQ(access(Vol("bin/nvidia-smi").c_str(), X_OK), 0);
  EXPECT_FALSE(fs::exists(Vol("bin/nvidia-debugdump")));
  EXPECT_FALSE(fs::exists(Vol("bin/nvidia-notexec")));

  EXPECT_EQ(r->files_written, 4);  // libcuda 64 and 32, libnvidia-ml, nvidia-smi
  EXPECT_EQ(r->blacklisted,
            (std::vector<std::string>{"libnvidia-gtk3.so.580.1", "nvidia-debugdump"}));
  EXPECT_EQ(r->missing, (std::vector<std::string>{"libnvidia-absent.so", "nvidia-notexec"}));
  // Nothing left over from the writes.
  for (const auto& e : fs::recursive_directory_iterator(base_ + "/nvidia")) {
    EXPECT_EQ(e.path().filename().string().rfind(".vgpu-tmp", 0), std::string::npos) << e.path();
  }
}

TEST_F(MirrorTest, RerunIsIdempotentAndKeepsInodes) {
  ASSERT_TRUE(MirrorVolume(spec_, cache_, options_).ok());
  const auto ino = fs::hard_link_count(Vol("lib64/libcuda.so.580.1"));
  struct stat before;
  ASSERT_EQ(stat(Vol("lib64/libcuda.so.580.1").c_str(), &before), 0);
  auto r = MirrorVolume(spec_, cache_, options_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->files_written, 0);
  EXPECT_EQ(r->links_written, 0);
  EXPECT_EQ(r->removed, 0);
  EXPECT_EQ(r->files_unchanged, 4);
  EXPECT_GT(r->links_unchanged, 0);
  struct stat after;
  ASSERT_EQ(stat(Vol("lib64/libcuda.so.580.1").c_str(), &after), 0);
  EXPECT_EQ(before.st_ino, after.st_ino);
  EXPECT_EQ(ino, fs::hard_link_count(Vol("lib64/libcuda.so.580.1")));
}

TEST_F(MirrorTest, DriverUpgradeReplacesFilesWhileOldOnesStayReadable) {
  ASSERT_TRUE(MirrorVolume(spec_, cache_, options_).ok());
  // A "running container" holds the old library open.
  std::ifstream held(Vol("lib64/libnvidia-ml.so.580.1"), std::ios::binary);
  const std::string old_bytes = ReadAll(kElfDir + "/nvml64.so");
  // Upgrade: a new libnvidia-ml (different content and name), old one gone; a stale extra file.
  const std::string l64 = root_ + "/usr/lib/x86_64-linux-gnu";
  fs::remove(l64 + "/libnvidia-ml.so.580.1");
  fs::remove(l64 + "/libnvidia-ml.so.1");
  fs::copy_file(kElfDir + "/nvml64-new.so", l64 + "/libnvidia-ml.so.590.2");
  fs::create_symlink("libnvidia-ml.so.590.2", l64 + "/libnvidia-ml.so.1");
  std::ofstream(Vol("lib64/leftover.so")) << "x";
  auto r = MirrorVolume(spec_, cache_, options_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(LinkTarget(Vol("lib64/libnvidia-ml.so.1")), "libnvidia-ml.so.590.2");
  EXPECT_EQ(ReadAll(Vol("lib64/libnvidia-ml.so.590.2")), ReadAll(kElfDir + "/nvml64-new.so"));
  EXPECT_FALSE(fs::exists(Vol("lib64/libnvidia-ml.so.580.1")));
  EXPECT_FALSE(fs::exists(Vol("lib64/leftover.so")));
  EXPECT_EQ(r->removed, 2);
  std::string still((std::istreambuf_iterator<char>(held)), {});
  EXPECT_EQ(still, old_bytes);
}

TEST_F(MirrorTest, ShimModeRoutesLibcudaToTheShimAndKeepsTheOriginal) {
  options_.shim_mode = true;
  auto r = MirrorVolume(spec_, cache_, options_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  for (const char* name : {"libcuda.so", "libcuda.so.1", "libcuda.so.580.1"}) {
    EXPECT_EQ(LinkTarget(Vol(std::string("lib64/") + name)), "libvgpu-shim.so") << name;
  }
  EXPECT_EQ(ReadAll(Vol("lib64/libvgpu-shim.so")), ReadAll(kElfDir + "/shim64.so"));
  EXPECT_EQ(ReadAll(Vol(std::string("lib64/") + kShimOriginalName)),
            ReadAll(kElfDir + "/cuda64.so"));
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(Vol("lib64/libcuda.so.orig"))));
  // 32-bit stays the original; other libraries are untouched.
  EXPECT_EQ(LinkTarget(Vol("lib/libcuda.so.1")), "libcuda.so.580.1");
  EXPECT_EQ(LinkTarget(Vol("lib64/libnvidia-ml.so.1")), "libnvidia-ml.so.580.1");

  // Back to module mode: the shim and the .orig copy disappear, libcuda is the driver's again.
  options_.shim_mode = false;
  ASSERT_TRUE(MirrorVolume(spec_, cache_, options_).ok());
  EXPECT_EQ(LinkTarget(Vol("lib64/libcuda.so.1")), "libcuda.so.580.1");
  EXPECT_FALSE(fs::exists(Vol("lib64/libvgpu-shim.so")));
  EXPECT_FALSE(fs::exists(Vol("lib64/libcuda.so.orig")));
}

TEST_F(MirrorTest, ShimModeOptOutPerVolume) {
  options_.shim_mode = true;
  spec_.cuda_shim = false;
  ASSERT_TRUE(MirrorVolume(spec_, cache_, options_).ok());
  EXPECT_EQ(LinkTarget(Vol("lib64/libcuda.so.1")), "libcuda.so.580.1");
}

TEST_F(MirrorTest, ShimModeErrorsAreClear) {
  options_.shim_mode = true;
  spec_.libraries = {"libnvidia-ml.so"};
  auto r = MirrorVolume(spec_, cache_, options_);
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("libcuda.so.1"), std::string::npos);
  spec_.libraries = {"libcuda.so"};
  options_.shim_library = tmp_ + "/missing-shim.so";
  EXPECT_EQ(MirrorVolume(spec_, cache_, options_).status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(fs::exists(base_ + "/nvidia/lib64/libcuda.so.1"));  // nothing half-built
}

TEST_F(MirrorTest, ReadsARealLdCacheBuiltForTheDriverRoot) {
  if (geteuid() != 0) GTEST_SKIP() << "ldconfig -r needs root (chroot)";
  fs::create_directories(root_ + "/etc");
  std::ofstream(root_ + "/etc/ld.so.conf")
      << "/usr/lib/x86_64-linux-gnu\n/usr/lib/i386-linux-gnu\n";
  auto built = RunCapture({"ldconfig", "-X", "-r", root_});
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  VolumeConfig config;
  config.volumes = {spec_};
  auto reports = MirrorVolumes(config, options_);
  ASSERT_TRUE(reports.ok()) << reports.status().ToString();
  EXPECT_EQ(LinkTarget(Vol("lib64/libcuda.so.1")), "libcuda.so.580.1");
  EXPECT_EQ(LinkTarget(Vol("lib/libcuda.so.1")), "libcuda.so.580.1");
  EXPECT_EQ(ReadElfInfo(Vol("lib/libcuda.so.580.1"))->bits, 32);
  EXPECT_EQ(LinkTarget(Vol("lib64/libnvidia-ml.so.1")), "libnvidia-ml.so.580.1");
  EXPECT_FALSE(fs::exists(Vol("lib64/libnvidia-gtk3.so.580.1")));
}

}  // namespace
}  // namespace vgpu::volumes
