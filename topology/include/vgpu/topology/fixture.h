// Recorded machines: a JSON file that holds what discovery found, so a machine shape can be
// replayed in tests and in the placement simulator without its GPUs.
//
//   {
//     "format": "vgpu-topology/1",
//     "machine": "dgx-h100-like",            // free text
//     "source": "hand-written from ...",     // how it was made (recorded: host, driver, date)
//     "gpus": [ { "index": 0, "uuid": "GPU-...", "name": "...", "memory_bytes": 85520809984,
//                 "numa_node": 0, "pci_bus_id": "0000:18:00.0", "cpu_affinity": "0-55,112-167",
//                 "pci_root": "pci0000:15", "pci_path": ["0000:15:01.0", "0000:16:00.0"],
//                 "nvlinks": [ { "remote": "0000:05:00.0", "kind": "switch", "links": 5 } ] } ],
//     "nvidia_smi_topo": "..."               // optional: `nvidia-smi topo -m` seen at record time
//   }
// memory_bytes is required; 0 means unknown (a sysfs-only recording).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "vgpu/status.h"
#include "vgpu/topology/topology.h"

namespace vgpu::topology {

inline constexpr std::string_view kFixtureFormat = "vgpu-topology/1";

struct Fixture {
  std::string machine;
  std::string source;
  std::vector<Gpu> gpus;
  std::string nvidia_smi_topo;  // empty when not recorded
};

// Parses fixture JSON; errors name the field (and GPU index) that is wrong.
Result<Fixture> ParseFixture(std::string_view json_text);
// Reads and parses a fixture file, then builds its Topology.
Result<Topology> LoadFixture(const std::string& path);
Result<Fixture> ReadFixture(const std::string& path);
// Serialises a fixture (stable key order, 2-space indent, trailing newline).
std::string FixtureToJson(const Fixture& fixture);

}  // namespace vgpu::topology
