// Fixture -> JSON. Written by hand rather than with nlohmann-json (which fixture.cc uses to
// parse) because the recorder is also built on the GPU machine by tests/gpu/extra.d/topology.sh,
// whose image has a compiler but not necessarily nlohmann-json; emitting this fixed shape needs
// only string escaping. Output is what nlohmann's dump(2) would give: sorted keys, 2-space indent.
#include <cstdio>
#include <string>

#include "vgpu/topology/fixture.h"

namespace vgpu::topology {
namespace {

std::string Quote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof(escaped), "\\u%04x", static_cast<unsigned char>(c));
          out += escaped;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string Indent(int level) { return std::string(2 * level, ' '); }

std::string GpuToJson(const Gpu& gpu) {
  std::string s = Indent(2) + "{\n";
  auto field = [&s](std::string_view key, const std::string& value, bool last = false) {
    s += Indent(3) + Quote(key) + ": " + value + (last ? "\n" : ",\n");
  };
  // Written only when known: fixtures recorded before NVML was asked for them stay as they are.
  if (!gpu.compute_capability.empty()) {
    field("compute_capability", Quote(gpu.compute_capability));
  }
  field("cpu_affinity", Quote(gpu.cpu_affinity));
  if (!gpu.driver_version.empty()) {
    field("driver_version", Quote(gpu.driver_version));
  }
  field("index", std::to_string(gpu.index));
  field("memory_bytes", std::to_string(gpu.memory_bytes));
  field("name", Quote(gpu.name));
  field("numa_node", std::to_string(gpu.numa_node));
  std::string links;
  if (gpu.nvlinks.empty()) {
    links = "[]";
  } else {
    links = "[\n";
    for (size_t i = 0; i < gpu.nvlinks.size(); ++i) {
      const NvLinkPeer& peer = gpu.nvlinks[i];
      links += Indent(4) + "{\n";
      links += Indent(5) +
               "\"kind\": " + Quote(peer.kind == NvLinkPeer::Kind::kSwitch ? "switch" : "gpu") +
               ",\n";
      links += Indent(5) + "\"links\": " + std::to_string(peer.links) + ",\n";
      links += Indent(5) + "\"remote\": " + Quote(peer.remote_pci_bus_id) + "\n";
      links += Indent(4) + (i + 1 < gpu.nvlinks.size() ? "},\n" : "}\n");
    }
    links += Indent(3) + "]";
  }
  field("nvlinks", links);
  field("pci_bus_id", Quote(gpu.pci_bus_id));
  std::string path;
  if (gpu.pci_path.empty()) {
    path = "[]";
  } else {
    path = "[\n";
    for (size_t i = 0; i < gpu.pci_path.size(); ++i) {
      path += Indent(4) + Quote(gpu.pci_path[i]) + (i + 1 < gpu.pci_path.size() ? ",\n" : "\n");
    }
    path += Indent(3) + "]";
  }
  field("pci_path", path);
  field("pci_root", Quote(gpu.pci_root));
  field("uuid", Quote(gpu.uuid), /*last=*/true);
  return s + Indent(2) + "}";
}

}  // namespace

std::string FixtureToJson(const Fixture& fixture) {
  std::string s = "{\n";
  s += Indent(1) + "\"format\": " + Quote(kFixtureFormat) + ",\n";
  if (fixture.gpus.empty()) {
    s += Indent(1) + "\"gpus\": [],\n";
  } else {
    s += Indent(1) + "\"gpus\": [\n";
    for (size_t i = 0; i < fixture.gpus.size(); ++i) {
      s += GpuToJson(fixture.gpus[i]) + (i + 1 < fixture.gpus.size() ? ",\n" : "\n");
    }
    s += Indent(1) + "],\n";
  }
  s += Indent(1) + "\"machine\": " + Quote(fixture.machine) + ",\n";
  if (!fixture.nvidia_smi_topo.empty()) {
    s += Indent(1) + "\"nvidia_smi_topo\": " + Quote(fixture.nvidia_smi_topo) + ",\n";
  }
  s += Indent(1) + "\"source\": " + Quote(fixture.source) + "\n";
  return s + "}\n";
}

}  // namespace vgpu::topology
