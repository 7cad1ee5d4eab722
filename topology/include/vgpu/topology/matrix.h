// The link matrix as `nvidia-smi topo -m` prints it, and a reader for that output (to compare
// our levels with the driver's on a recorded machine).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "vgpu/status.h"
#include "vgpu/topology/topology.h"

namespace vgpu::topology {

// Tab-separated like nvidia-smi: a header "\tGPU0\tGPU1...\tCPU Affinity\tNUMA Affinity", one
// row per GPU (" X " on the diagonal, NV#/PIX/PXB/PHB/NODE/SYS elsewhere, then its CPU list and
// NUMA node or N/A), then the legend.
std::string FormatTopoMatrix(const Topology& topology);

// The GPU-by-GPU labels of `nvidia-smi topo -m` output ("X", "NV18", "PIX", ...), rows and
// columns in GPU order; NIC and other columns are dropped. Fails when there is no GPU header.
Result<std::vector<std::vector<std::string>>> ParseNvidiaSmiTopo(std::string_view text);

// The same labels from our own topology, for comparison with ParseNvidiaSmiTopo.
std::vector<std::vector<std::string>> LinkLabels(const Topology& topology);

}  // namespace vgpu::topology
