#include "topo_command.h"

#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "vgpu/nvidia_libraries.h"
#include "vgpu/text.h"
#include "vgpu/topology/discovery.h"
#include "vgpu/topology/fixture.h"
#include "vgpu/topology/matrix.h"

namespace vgpu::topology {
namespace {

// The usage text, in two parts around the --nvml default (nvidia_libraries.h).
constexpr const char* kUsage =
    "usage: topo [--fixture FILE] [--record FILE [--machine NAME] [--nvidia-smi-topo FILE]]\n"
    "            [--sysfs DIR] [--nvml LIBRARY] [--gpus] [--json]\n"
    "  (no flags)             discover this machine (NVML + sysfs) and print its link matrix\n"
    "  --fixture FILE         print the matrix of a recorded machine instead\n"
    "  --record FILE          write this machine as a fixture (vgpu-topology/1 JSON)\n"
    "  --machine NAME         machine name stored in the fixture (default: hostname)\n"
    "  --nvidia-smi-topo FILE store this `nvidia-smi topo -m` output in the fixture\n"
    "  --sysfs DIR            sysfs root (default /sys)\n"
    "  --nvml LIBRARY         NVML library to dlopen (default ";
constexpr const char* kUsageAfterNvml =
    ")\n"
    "  --gpus                 also list the GPUs (index, bus id, memory, UUID, name)\n"
    "  --json                 print the machine as fixture JSON instead of the matrix\n";

struct Options {
  std::string fixture;
  std::string record;
  std::string machine;
  std::string nvidia_smi_topo;
  std::string sysfs = "/sys";
  std::string nvml = kNvmlLibrary;
  bool list_gpus = false;
};

// The flags that take a value, and the option each sets.
struct ValueFlag {
  std::string_view name;
  std::string Options::*field;
};
constexpr ValueFlag kValueFlags[] = {
    {"--fixture", &Options::fixture}, {"--record", &Options::record},
    {"--machine", &Options::machine}, {"--nvidia-smi-topo", &Options::nvidia_smi_topo},
    {"--sysfs", &Options::sysfs},     {"--nvml", &Options::nvml},
};

int Usage(std::ostream& err, const std::string& problem) {
  err << "topo: " << problem << "\n" << kUsage << kNvmlLibrary << kUsageAfterNvml;
  return 2;
}

std::string FirstLine(const std::string& path) {
  std::string line;
  std::ifstream in(path);
  std::getline(in, line);
  return line;
}

std::string Describe(const std::string& machine) {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  std::time_t now = std::time(nullptr);
  char date[32] = {};
  std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  std::string driver = FirstLine("/proc/driver/nvidia/version");
  return "recorded by vgpu topo --record on " + (machine.empty() ? std::string(host) : machine) +
         " at " + date + (driver.empty() ? "" : "; driver: " + driver);
}

void ListGpus(const Topology& topology, std::ostream& out) {
  for (const Gpu& gpu : topology.gpus()) {
    out << "GPU" << gpu.index << "\t" << gpu.pci_bus_id << "\t" << (gpu.memory_bytes >> 20)
        << " MiB\t" << (gpu.uuid.empty() ? "-" : gpu.uuid) << "\t"
        << (gpu.name.empty() ? "-" : gpu.name) << "\n";
  }
}

int Run(const Options& options, bool json, std::ostream& out, std::ostream& err) {
  Fixture fixture;
  if (!options.fixture.empty()) {
#ifdef VGPU_TOPO_NO_FIXTURE_READ
    err << "topo: --fixture is not built into this binary (no JSON reader)\n";
    return 1;
#else
    Result<Fixture> read = ReadFixture(options.fixture);
    if (!read.ok()) {
      err << "topo: " << read.status().ToString() << "\n";
      return 1;
    }
    fixture = std::move(*read);
#endif
  } else {
    std::unique_ptr<GpuSource> nvml = MakeNvmlSource(options.nvml);
    std::unique_ptr<GpuSource> sysfs = MakeSysfsSource(options.sysfs);
    Result<Discovered> found = DiscoverGpus(*nvml, *sysfs);
    if (!found.ok()) {
      err << "topo: " << found.status().ToString() << "\n";
      return 1;
    }
    for (const std::string& note : found->notes) {
      err << "topo: " << note << "\n";
    }
    fixture.gpus = std::move(found->gpus);
    fixture.machine = options.machine;
    fixture.source = Describe(options.machine);
  }
  if (!options.nvidia_smi_topo.empty()) {
    Result<std::string> text = ReadFileToString(options.nvidia_smi_topo);
    if (!text.ok()) {
      err << "topo: " << text.status().ToString() << "\n";
      return 1;
    }
    fixture.nvidia_smi_topo = std::move(*text);
  }
  Fixture to_record = fixture;  // Topology::Create takes the GPUs
  Result<Topology> topology = Topology::Create(std::move(fixture.gpus));
  if (!topology.ok()) {
    err << "topo: " << topology.status().ToString() << "\n";
    return 1;
  }
  if (!options.record.empty()) {
    std::ofstream out(options.record);
    out << FixtureToJson(to_record);
    if (!out.flush()) {
      err << "topo: cannot write " << options.record << "\n";
      return 1;
    }
    err << "topo: recorded " << topology->size() << " GPU(s) to " << options.record << "\n";
  }
  if (json) {
    out << FixtureToJson(to_record);
    return 0;
  }
  if (topology->size() == 0) {
    out << "no NVIDIA GPUs found\n";
    return 0;
  }
  out << FormatTopoMatrix(*topology);
  if (options.list_gpus) {
    out << "\n";
    ListGpus(*topology, out);
  }
  return 0;
}

}  // namespace

int RunTopoCommand(std::span<const std::string> args, bool json, std::ostream& out,
                   std::ostream& err) {
  Options options;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& flag = args[i];
    if (flag == "-h" || flag == "--help") {
      out << kUsage << kNvmlLibrary << kUsageAfterNvml;
      return 0;
    }
    if (flag == "--gpus") {
      options.list_gpus = true;
      continue;
    }
    const ValueFlag* known = std::ranges::find(kValueFlags, flag, &ValueFlag::name);
    if (known == std::end(kValueFlags)) {
      return Usage(err, "unknown flag " + flag);
    }
    if (i + 1 >= args.size()) {
      return Usage(err, flag + " needs a value");
    }
    options.*known->field = args[++i];
  }
  if (!options.fixture.empty() && !options.record.empty()) {
    return Usage(err, "--fixture and --record exclude each other");
  }
  return Run(options, json, out, err);
}

int RunTopoCommand(int argc, char** argv) {
  std::vector<std::string> args(argv + (argc > 0 ? 1 : 0), argv + argc);
  bool json = false;
  std::erase_if(args, [&json](const std::string& arg) {
    bool is_json = arg == "--json";
    json = json || is_json;
    return is_json;
  });
  return RunTopoCommand(args, json, std::cout, std::cerr);
}

}  // namespace vgpu::topology
