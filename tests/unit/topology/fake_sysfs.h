// A fake /sys for discovery tests: a temp dir holding devices/<pci tree> with vendor, class,
// numa_node and local_cpulist files, and bus/pci/devices/<bdf> links into it, as the kernel lays
// them out (Documentation/ABI/testing/sysfs-bus-pci). Removed when the object goes away.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace vgpu::topology::testing {

class FakeSysfs {
 public:
  FakeSysfs() {
    std::string templ = (std::filesystem::temp_directory_path() / "vgpu-sysfs-XXXXXX").string();
    root_ = mkdtemp(templ.data());
    std::filesystem::create_directories(std::filesystem::path(root_) / "bus/pci/devices");
  }
  ~FakeSysfs() {
    std::error_code ignored;
    std::filesystem::remove_all(root_, ignored);
  }
  FakeSysfs(const FakeSysfs&) = delete;
  FakeSysfs& operator=(const FakeSysfs&) = delete;

  const std::string& root() const { return root_; }

  // path: directories under devices/, ending in the function's bdf, e.g.
  // "pci0000:00/0000:00:01.0/0000:01:00.0".
  void AddFunction(const std::string& path, const std::string& vendor, const std::string& pci_class,
                   int numa_node = -1, const std::string& cpulist = "") {
    namespace fs = std::filesystem;
    fs::path dir = fs::path(root_) / "devices" / path;
    fs::create_directories(dir);
    Write(dir / "vendor", vendor);
    Write(dir / "class", pci_class);
    Write(dir / "numa_node", std::to_string(numa_node));
    if (!cpulist.empty()) {
      Write(dir / "local_cpulist", cpulist);
    }
    fs::path link = fs::path(root_) / "bus/pci/devices" / dir.filename();
    fs::create_symlink(fs::path("../../../devices") / path, link);
  }
  void AddBridge(const std::string& path) { AddFunction(path, "0x8086", "0x060400"); }
  void AddGpu(const std::string& path, int numa_node, const std::string& cpulist) {
    AddFunction(path, "0x10de", "0x030200", numa_node, cpulist);
  }

 private:
  static void Write(const std::filesystem::path& path, const std::string& text) {
    std::ofstream(path) << text << "\n";
  }
  std::string root_;
};

}  // namespace vgpu::topology::testing
