// Fixture -> JSON. Written by hand rather than with nlohmann-json (which fixture.cc uses to
// parse) because the recorder is also built on the GPU machine by tests/gpu/extra.d/topology.sh,
// whose image has a compiler but not necessarily nlohmann-json; emitting this fixed shape needs
// only string escaping. Output is what nlohmann's dump(2) would give: sorted keys, 2-space indent.
#include <cstdio>
#include <string>
#include <vector>

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

// `items` (each JSON already, indented one level deeper than `level`) as an array whose bracket
// closes at `level`: "[]" when empty, else one item a line, as dump(2) writes it.
std::string JsonArray(const std::vector<std::string>& items, int level) {
  if (items.empty()) {
    return "[]";
  }
  std::string s = "[\n";
  for (size_t i = 0; i < items.size(); ++i) {
    s += items[i] + (i + 1 < items.size() ? ",\n" : "\n");
  }
  return s + Indent(level) + "]";
}

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
  std::vector<std::string> links;
  for (const NvLinkPeer& peer : gpu.nvlinks) {
    const char* kind = peer.kind == NvLinkPeer::Kind::kSwitch ? "switch" : "gpu";
    std::string item = Indent(4) + "{\n";
    item += Indent(5) + "\"kind\": " + Quote(kind) + ",\n";
    item += Indent(5) + "\"links\": " + std::to_string(peer.links) + ",\n";
    item += Indent(5) + "\"remote\": " + Quote(peer.remote_pci_bus_id) + "\n";
    links.push_back(item + Indent(4) + "}");
  }
  field("nvlinks", JsonArray(links, 3));
  field("pci_bus_id", Quote(gpu.pci_bus_id));
  std::vector<std::string> path;
  for (const std::string& bridge : gpu.pci_path) {
    path.push_back(Indent(4) + Quote(bridge));
  }
  field("pci_path", JsonArray(path, 3));
  field("pci_root", Quote(gpu.pci_root));
  field("uuid", Quote(gpu.uuid), /*last=*/true);
  return s + Indent(2) + "}";
}

}  // namespace

std::string FixtureToJson(const Fixture& fixture) {
  std::string s = "{\n";
  s += Indent(1) + "\"format\": " + Quote(kFixtureFormat) + ",\n";
  std::vector<std::string> gpus;
  for (const Gpu& gpu : fixture.gpus) {
    gpus.push_back(GpuToJson(gpu));
  }
  s += Indent(1) + "\"gpus\": " + JsonArray(gpus, 1) + ",\n";
  s += Indent(1) + "\"machine\": " + Quote(fixture.machine) + ",\n";
  if (!fixture.nvidia_smi_topo.empty()) {
    s += Indent(1) + "\"nvidia_smi_topo\": " + Quote(fixture.nvidia_smi_topo) + ",\n";
  }
  s += Indent(1) + "\"source\": " + Quote(fixture.source) + "\n";
  return s + "}\n";
}

}  // namespace vgpu::topology
