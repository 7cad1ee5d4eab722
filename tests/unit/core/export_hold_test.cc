// Export fds keep their objects' charge (issue 17 F3, kmod/core/export.c): the driver's export
// object, held by the export fd, keeps the memory after the tenant frees its handle, so the slot
// stays charged until the export file's last close; an import is a dup of the export and takes
// the charge over when the exporter's object and the export file are gone.
#include <gtest/gtest.h>

#include <memory>

#include "tests/unit/core/core_fixture.h"

namespace vgpu::core_test {
namespace {

constexpr uint64_t kQuota = 64 * kMiB;
constexpr int32_t kExportFd = 41;
constexpr uint32_t kMem = 0xe1000001, kImported = 0xe2000001;

class ExportHoldTest : public CoreTest {
 protected:
  void SetUp() override {
    MakeSlot(kQuota);
    Session(&client_, &device_, &subdevice_);
    export_file_ = vcore_file_open(slot_, VCORE_FILE_CTL, nullptr);
    ASSERT_NE(export_file_, nullptr);
    fd_files_[kExportFd] = export_file_;
  }
  // Closes the export file once (the test may close it itself).
  void CloseExport() {
    vcore_file_close(export_file_);
    export_file_ = nullptr;
    fd_files_.erase(kExportFd);
  }
  void TearDown() override {
    if (export_file_) CloseExport();
    CoreTest::TearDown();
  }
  Outcome Export(uint32_t h_object, uint16_t index = 0) {
    auto p = std::make_unique<NV0000_CTRL_OS_UNIX_EXPORT_OBJECTS_TO_FD_PARAMS>();
    p->fd = kExportFd;
    p->hDevice = device_;
    p->maxObjects = 4;
    p->objects[0] = h_object;
    p->numObjects = 1;
    p->index = index;
    return Control(client_, client_, NV0000_CTRL_CMD_OS_UNIX_EXPORT_OBJECTS_TO_FD, Bytes(*p));
  }
  Outcome Import(uint32_t h_new) {
    auto p = std::make_unique<NV0000_CTRL_OS_UNIX_IMPORT_OBJECTS_FROM_FD_PARAMS>();
    p->fd = kExportFd;
    p->hParent = device_;
    p->objects[0] = h_new;
    p->numObjects = 1;
    return Control(client_, client_, NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECTS_FROM_FD, Bytes(*p));
  }

  uint32_t client_ = 0, device_ = 0, subdevice_ = 0;
  vcore_file* export_file_ = nullptr;
};

TEST_F(ExportHoldTest, FreedHandleStaysChargedWhileTheExportFileLives) {
  ASSERT_EQ(AllocVidmem(client_, device_, kMem, kQuota).ret, 0);
  ASSERT_EQ(Charged(), kQuota);
  ASSERT_TRUE(Export(kMem).forwarded);
  ASSERT_EQ(Free(client_, device_, kMem).ret, 0);
  EXPECT_EQ(Charged(), kQuota) << "the export object holds the memory: the charge stays";
  // The quota still counts it: another 64 MiB is refused.
  EXPECT_EQ(AllocVidmem(client_, device_, kMem + 1, kQuota).verdict, VCORE_REFUSE_STATUS);
  EXPECT_EQ(Get<uint32_t>(mem_, kArg + 40), NV_ERR_NO_MEMORY);
  EXPECT_EQ(Charged(), kQuota);
  CloseExport();
  EXPECT_EQ(Charged(), 0u) << "the export file's close refunds it";
}

TEST_F(ExportHoldTest, ClosingTheExportFileFirstLeavesTheObjectCharged) {
  ASSERT_EQ(AllocVidmem(client_, device_, kMem, kQuota).ret, 0);
  ASSERT_TRUE(Export(kMem).forwarded);
  CloseExport();
  EXPECT_EQ(Charged(), kQuota) << "the object itself still holds it";
  ASSERT_EQ(Free(client_, device_, kMem).ret, 0);
  EXPECT_EQ(Charged(), 0u);
}

TEST_F(ExportHoldTest, ReExportAtTheSameIndexReleasesTheEarlierHold) {
  ASSERT_EQ(AllocVidmem(client_, device_, kMem, 32 * kMiB).ret, 0);
  ASSERT_TRUE(Export(kMem).forwarded);
  ASSERT_EQ(Free(client_, device_, kMem).ret, 0);
  ASSERT_EQ(Charged(), 32 * kMiB);
  // The driver replaces (and so frees) the export object at index 0.
  ASSERT_TRUE(Export(0).forwarded);
  EXPECT_EQ(Charged(), 0u);
}

TEST_F(ExportHoldTest, ImportTakesTheChargeOverFromTheExportFile) {
  ASSERT_EQ(AllocVidmem(client_, device_, kMem, kQuota).ret, 0);
  ASSERT_TRUE(Export(kMem).forwarded);
  ASSERT_TRUE(Import(kImported).forwarded);
  ASSERT_EQ(Free(client_, device_, kMem).ret, 0);
  CloseExport();
  EXPECT_EQ(Charged(), kQuota) << "the imported handle still holds the memory";
  ASSERT_EQ(Free(client_, device_, kImported).ret, 0);
  EXPECT_EQ(Charged(), 0u);
}

TEST_F(ExportHoldTest, ImportOutlivesAnExportFileClosedBeforeTheObjectIsFreed) {
  ASSERT_EQ(AllocVidmem(client_, device_, kMem, kQuota).ret, 0);
  ASSERT_TRUE(Export(kMem).forwarded);
  ASSERT_TRUE(Import(kImported).forwarded);
  CloseExport();  // the import is now a dup of the object itself
  ASSERT_EQ(Free(client_, device_, kMem).ret, 0);
  EXPECT_EQ(Charged(), kQuota) << "the imported handle still holds the memory";
  ASSERT_EQ(Free(client_, device_, kImported).ret, 0);
  EXPECT_EQ(Charged(), 0u);
}

TEST_F(ExportHoldTest, AFileTheHostDidNotNameHoldsNothing) {
  fd_files_.clear();  // a host that cannot tell which file the fd is
  ASSERT_EQ(AllocVidmem(client_, device_, kMem, kQuota).ret, 0);
  ASSERT_TRUE(Export(kMem).forwarded);
  ASSERT_EQ(Free(client_, device_, kMem).ret, 0);
  EXPECT_EQ(Charged(), 0u);
}

}  // namespace
}  // namespace vgpu::core_test
