// Fixture JSON -> Fixture. nlohmann-json (Debian nlohmann-json3-dev) does the parsing; its
// exceptions stay inside this file and come out as Status. Writing is in fixture_write.cc.
#include "vgpu/topology/fixture.h"

#include <utility>

#include <nlohmann/json.hpp>

#include "vgpu/text.h"
#include "vgpu/topology/discovery.h"

namespace vgpu::topology {
namespace {

using nlohmann::json;

Status FieldError(std::string_view where, std::string_view field, std::string_view problem) {
  return InvalidArgumentError("fixture: " + std::string(where) + ": field '" + std::string(field) +
                              "' " + std::string(problem));
}

// Reads an optional field of the given JSON kind into out; a field of the wrong kind is an
// error rather than silently defaulted.
template <typename T>
Status Read(const json& object, std::string_view where, const char* field, bool required, T& out) {
  auto it = object.find(field);
  if (it == object.end() || it->is_null()) {
    return required ? FieldError(where, field, "is missing") : OkStatus();
  }
  try {
    out = it->get<T>();
  } catch (const json::exception& e) {
    return FieldError(where, field, std::string("has the wrong type: ") + e.what());
  }
  return OkStatus();
}

Result<NvLinkPeer> ParsePeer(const json& entry, const std::string& where) {
  if (!entry.is_object()) {
    return FieldError(where, "nvlinks", "entries must be objects");
  }
  NvLinkPeer peer;
  std::string kind = "gpu";
  VGPU_RETURN_IF_ERROR(Read(entry, where, "remote", true, peer.remote_pci_bus_id));
  VGPU_RETURN_IF_ERROR(Read(entry, where, "kind", false, kind));
  VGPU_RETURN_IF_ERROR(Read(entry, where, "links", true, peer.links));
  if (kind == "gpu") {
    peer.kind = NvLinkPeer::Kind::kGpu;
  } else if (kind == "switch") {
    peer.kind = NvLinkPeer::Kind::kSwitch;
  } else {
    return FieldError(where, "kind", "must be \"gpu\" or \"switch\", not \"" + kind + "\"");
  }
  if (peer.links <= 0) {
    return FieldError(where, "links", "must be positive");
  }
  return peer;
}

Result<Gpu> ParseGpu(const json& entry, size_t position) {
  std::string where = "gpus[" + std::to_string(position) + "]";
  if (!entry.is_object()) {
    return InvalidArgumentError("fixture: " + where + " is not an object");
  }
  Gpu gpu;
  VGPU_RETURN_IF_ERROR(Read(entry, where, "index", true, gpu.index));
  VGPU_RETURN_IF_ERROR(Read(entry, where, "uuid", false, gpu.uuid));
  VGPU_RETURN_IF_ERROR(Read(entry, where, "name", false, gpu.name));
  VGPU_RETURN_IF_ERROR(Read(entry, where, "compute_capability", false, gpu.compute_capability));
  VGPU_RETURN_IF_ERROR(Read(entry, where, "driver_version", false, gpu.driver_version));
  if (auto it = entry.find("memory_bytes");
      it != entry.end() && it->is_number_integer() && !it->is_number_unsigned()) {
    return FieldError(where, "memory_bytes", "must not be negative");  // get<> would wrap it
  }
  VGPU_RETURN_IF_ERROR(Read(entry, where, "memory_bytes", true, gpu.memory_bytes));
  VGPU_RETURN_IF_ERROR(Read(entry, where, "numa_node", false, gpu.numa_node));
  VGPU_RETURN_IF_ERROR(Read(entry, where, "pci_bus_id", true, gpu.pci_bus_id));
  VGPU_RETURN_IF_ERROR(Read(entry, where, "cpu_affinity", false, gpu.cpu_affinity));
  VGPU_RETURN_IF_ERROR(Read(entry, where, "pci_root", false, gpu.pci_root));
  VGPU_RETURN_IF_ERROR(Read(entry, where, "pci_path", false, gpu.pci_path));
  if (auto it = entry.find("nvlinks"); it != entry.end() && !it->is_null()) {
    if (!it->is_array()) {
      return FieldError(where, "nvlinks", "must be an array");
    }
    for (const json& peer_entry : *it) {
      Result<NvLinkPeer> peer = ParsePeer(peer_entry, where);
      if (!peer.ok()) {
        return peer.status();
      }
      gpu.nvlinks.push_back(std::move(*peer));
    }
  }
  return gpu;
}

}  // namespace

Result<Fixture> ParseFixture(std::string_view json_text) {
  json root = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) {
    return InvalidArgumentError("fixture: not valid JSON");
  }
  if (!root.is_object()) {
    return InvalidArgumentError("fixture: top level must be an object");
  }
  std::string format;
  VGPU_RETURN_IF_ERROR(Read(root, "top level", "format", true, format));
  if (format != kFixtureFormat) {
    return InvalidArgumentError("fixture: format \"" + format + "\", expected \"" +
                                std::string(kFixtureFormat) + "\"");
  }
  Fixture fixture;
  VGPU_RETURN_IF_ERROR(Read(root, "top level", "machine", false, fixture.machine));
  VGPU_RETURN_IF_ERROR(Read(root, "top level", "source", false, fixture.source));
  VGPU_RETURN_IF_ERROR(Read(root, "top level", "nvidia_smi_topo", false, fixture.nvidia_smi_topo));
  auto gpus = root.find("gpus");
  if (gpus == root.end() || !gpus->is_array()) {
    return InvalidArgumentError("fixture: field 'gpus' must be an array");
  }
  for (size_t i = 0; i < gpus->size(); ++i) {
    Result<Gpu> gpu = ParseGpu((*gpus)[i], i);
    if (!gpu.ok()) {
      return gpu.status();
    }
    fixture.gpus.push_back(std::move(*gpu));
  }
  return fixture;
}

Result<Fixture> ReadFixture(const std::string& path) {
  Result<std::string> text = ReadFileToString(path);
  if (!text.ok()) {
    return text.status().Annotate("fixture");
  }
  Result<Fixture> fixture = ParseFixture(*text);
  if (!fixture.ok()) {
    return fixture.status().Annotate(path);
  }
  return fixture;
}

Result<Topology> LoadFixture(const std::string& path) {
  Result<Fixture> fixture = ReadFixture(path);
  if (!fixture.ok()) {
    return fixture.status();
  }
  Result<Topology> topology = Topology::Create(std::move(fixture->gpus));
  if (!topology.ok()) {
    return topology.status().Annotate(path);
  }
  return topology;
}

namespace {

class FixtureSource final : public GpuSource {
 public:
  explicit FixtureSource(std::string path) : path_(std::move(path)) {}
  std::string_view Name() const override { return "fixture"; }
  Result<std::vector<Gpu>> Discover() const override {
    Result<Fixture> fixture = ReadFixture(path_);
    if (!fixture.ok()) {
      return fixture.status();
    }
    return std::move(fixture->gpus);
  }

 private:
  std::string path_;
};

}  // namespace

std::unique_ptr<GpuSource> MakeFixtureSource(std::string path) {
  return std::make_unique<FixtureSource>(std::move(path));
}

}  // namespace vgpu::topology
