// The sysfs PCI walk. Every PCI function has a link /sys/bus/pci/devices/<bdf> pointing into
// /sys/devices/pci<domain>:<bus>/<root port>/<bridge>.../<bdf>: the chain of directories is the
// PCI tree, the first "pciDDDD:BB" directory is the host bridge (Documentation/ABI/testing/
// sysfs-bus-pci; drivers/pci/probe.c names the root "pci%04x:%02x"). NVIDIA GPUs have vendor
// 0x10de and base class 0x03 (display: 0x0300 VGA, 0x0302 3D controller).
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include "vgpu/topology/discovery.h"

namespace vgpu::topology {
namespace {

namespace fs = std::filesystem;

constexpr unsigned kNvidiaVendor = 0x10de;
constexpr unsigned kDisplayClass = 0x03;

bool ReadLine(const fs::path& path, std::string& out) {
  std::ifstream in(path);
  if (!in) {
    return false;
  }
  std::getline(in, out);
  while (!out.empty() && std::isspace(static_cast<unsigned char>(out.back()))) {
    out.pop_back();
  }
  return true;
}

bool ReadHex(const fs::path& path, unsigned long& out) {
  std::string text;
  if (!ReadLine(path, text)) {
    return false;
  }
  try {
    size_t used = 0;
    out = std::stoul(text, &used, 16);
    return used == text.size();
  } catch (const std::exception&) {
    return false;
  }
}

bool IsHex(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isxdigit(static_cast<unsigned char>(c));
  });
}

// "0000:00:01.0": domain:bus:device.function.
bool IsBdf(std::string_view name) {
  if (name.size() != 12 || name[4] != ':' || name[7] != ':' || name[10] != '.') {
    return false;
  }
  return IsHex(name.substr(0, 4)) && IsHex(name.substr(5, 2)) && IsHex(name.substr(8, 2)) &&
         IsHex(name.substr(11, 1));
}

// "pci0000:00" (domains beyond 0xffff print with more digits).
bool IsHostBridge(std::string_view name) {
  if (name.substr(0, 3) != "pci") {
    return false;
  }
  size_t colon = name.find(':');
  return colon != std::string_view::npos && colon > 3 && IsHex(name.substr(3, colon - 3)) &&
         IsHex(name.substr(colon + 1));
}

class SysfsSource final : public GpuSource {
 public:
  explicit SysfsSource(std::string root) : root_(std::move(root)) {}
  std::string_view Name() const override { return "sysfs"; }

  Result<std::vector<Gpu>> Discover() const override {
    fs::path devices = fs::path(root_) / "bus/pci/devices";
    std::error_code error;
    fs::directory_iterator it(devices, error);
    if (error) {
      return UnavailableError("sysfs: cannot list " + devices.string() + ": " + error.message());
    }
    std::vector<Gpu> gpus;
    for (const fs::directory_entry& entry : it) {
      std::string bdf = entry.path().filename().string();
      unsigned long vendor = 0;
      unsigned long pci_class = 0;
      if (!ReadHex(entry.path() / "vendor", vendor) ||
          !ReadHex(entry.path() / "class", pci_class)) {
        continue;  // a function without readable ids is not one we can place on
      }
      if (vendor != kNvidiaVendor || (pci_class >> 16) != kDisplayClass) {
        continue;
      }
      Gpu gpu;
      gpu.pci_bus_id = CanonicalBusId(bdf);
      fs::path real = fs::canonical(entry.path(), error);
      if (!error) {
        FillTreePosition(real, gpu);
      }
      std::string numa;
      if (ReadLine(entry.path() / "numa_node", numa)) {
        try {
          gpu.numa_node = std::stoi(numa);
        } catch (const std::exception&) {
          gpu.numa_node = -1;
        }
      }
      std::string cpus;
      if (ReadLine(entry.path() / "local_cpulist", cpus)) {
        gpu.cpu_affinity = cpus;
      }
      gpus.push_back(std::move(gpu));
    }
    std::sort(gpus.begin(), gpus.end(),
              [](const Gpu& a, const Gpu& b) { return a.pci_bus_id < b.pci_bus_id; });
    for (size_t i = 0; i < gpus.size(); ++i) {
      gpus[i].index = static_cast<int>(i);
    }
    return gpus;
  }

 private:
  // From /sys/devices/.../pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:00.0/0000:18:00.0: the
  // last host bridge component, then every BDF below it except the GPU itself. Components above
  // the host bridge (ACPI or VMBus nodes in VMs) are not part of the PCI tree.
  static void FillTreePosition(const fs::path& real, Gpu& gpu) {
    std::vector<std::string> parts;
    for (const fs::path& part : real) {
      parts.push_back(part.string());
    }
    size_t root = parts.size();
    for (size_t i = 0; i < parts.size(); ++i) {
      if (IsHostBridge(parts[i])) {
        root = i;
      }
    }
    if (root == parts.size()) {
      return;
    }
    gpu.pci_root = parts[root];
    for (size_t i = root + 1; i + 1 < parts.size(); ++i) {
      if (IsBdf(parts[i])) {
        gpu.pci_path.push_back(CanonicalBusId(parts[i]));
      }
    }
  }

  std::string root_;
};

}  // namespace

std::unique_ptr<GpuSource> MakeSysfsSource(std::string sysfs_root) {
  return std::make_unique<SysfsSource>(std::move(sysfs_root));
}

std::string CanonicalBusId(std::string_view bus_id) {
  std::string id(bus_id);
  std::transform(id.begin(), id.end(), id.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  // NVML prints an 8-digit domain ("00000000:18:00.0"); sysfs at least 4 digits.
  size_t colon = id.find(':');
  if (colon != std::string::npos && colon > 4) {
    // Keep at least 4 domain digits; domains past 0xffff (Intel VMD: "10000:e0:00.0") print
    // unpadded in sysfs. Erasing in place (rather than concatenating substrings) also keeps
    // GCC 12's -O3 -Wrestrict false positive (GCC bug 105329) away.
    size_t zeros = 0;
    while (zeros < colon - 4 && id[zeros] == '0') {
      ++zeros;
    }
    id.erase(0, zeros);
  }
  return id;
}

std::string CpuListFromMask(const std::vector<uint64_t>& words) {
  std::string list;
  int total = static_cast<int>(words.size()) * 64;
  int cpu = 0;
  while (cpu < total) {
    if (!((words[cpu / 64] >> (cpu % 64)) & 1)) {
      ++cpu;
      continue;
    }
    int last = cpu;
    while (last + 1 < total && ((words[(last + 1) / 64] >> ((last + 1) % 64)) & 1)) {
      ++last;
    }
    list += list.empty() ? "" : ",";
    list += std::to_string(cpu);
    if (last > cpu) {
      list += '-';  // appended apart: "-" + std::string trips GCC 12's -Wrestrict at -O3
      list += std::to_string(last);
    }
    cpu = last + 1;
  }
  return list;
}

}  // namespace vgpu::topology
