#include "vgpu/topology/matrix.h"

#include <cctype>
#include <sstream>

namespace vgpu::topology {
namespace {

constexpr std::string_view kLegend =
    "Legend:\n"
    "\n"
    "  X    = Self\n"
    "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes "
    "(e.g., QPI/UPI)\n"
    "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges "
    "within a NUMA node\n"
    "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)\n"
    "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host "
    "Bridge)\n"
    "  PIX  = Connection traversing at most a single PCIe bridge\n"
    "  NV#  = Connection traversing a bonded set of # NVLinks\n";

// nvidia-smi underlines the header with ANSI escapes ("\x1b[4m...\x1b[0m"), even when piped.
std::string StripEscapes(const std::string& line) {
  std::string out;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\x1b' && i + 1 < line.size() && line[i + 1] == '[') {
      i += 2;
      while (i < line.size() && !std::isalpha(static_cast<unsigned char>(line[i]))) {
        ++i;
      }
      continue;
    }
    out += line[i];
  }
  return out;
}

std::vector<std::string> SplitFields(const std::string& line) {
  std::vector<std::string> fields;
  std::string field;
  std::istringstream in(StripEscapes(line));
  // nvidia-smi separates cells with tabs and pads some (" X "); split on tabs, trim spaces.
  while (std::getline(in, field, '\t')) {
    size_t first = field.find_first_not_of(' ');
    size_t last = field.find_last_not_of(' ');
    fields.push_back(first == std::string::npos ? "" : field.substr(first, last - first + 1));
  }
  return fields;
}

bool IsGpuName(const std::string& cell) {
  return cell.size() > 3 && cell.compare(0, 3, "GPU") == 0 &&
         cell.find_first_not_of("0123456789", 3) == std::string::npos;
}

}  // namespace

std::string FormatTopoMatrix(const Topology& topology) {
  std::string out;
  for (int i = 0; i < topology.size(); ++i) {
    out += "\tGPU" + std::to_string(i);
  }
  out += "\tCPU Affinity\tNUMA Affinity\n";
  for (int a = 0; a < topology.size(); ++a) {
    // Cells are appended one by one: `"\t" + std::string` trips GCC 12's -Wrestrict false
    // positive at -O3 (GCC bug 105329).
    out += "GPU";
    out += std::to_string(a);
    for (int b = 0; b < topology.size(); ++b) {
      out += '\t';
      out += a == b ? std::string(" X ") : topology.LinkLabel(a, b);
    }
    const Gpu& gpu = topology.gpu(a);
    out += '\t';
    out += gpu.cpu_affinity.empty() ? std::string("N/A") : gpu.cpu_affinity;
    out += '\t';
    out += gpu.numa_node < 0 ? std::string("N/A") : std::to_string(gpu.numa_node);
    out += '\n';
  }
  out += "\n";
  out += kLegend;
  return out;
}

Result<std::vector<std::vector<std::string>>> ParseNvidiaSmiTopo(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::string line;
  std::vector<int> gpu_columns;  // field positions of GPUn columns in the header
  std::vector<std::vector<std::string>> rows;
  while (std::getline(in, line)) {
    std::vector<std::string> fields = SplitFields(line);
    if (gpu_columns.empty()) {
      for (size_t i = 0; i < fields.size(); ++i) {
        if (IsGpuName(fields[i])) {
          gpu_columns.push_back(static_cast<int>(i));
        }
      }
      continue;
    }
    if (fields.empty() || !IsGpuName(fields[0])) {
      if (!rows.empty()) {
        break;  // the legend or the NIC rows start
      }
      continue;
    }
    std::vector<std::string> row;
    for (int column : gpu_columns) {
      if (column >= static_cast<int>(fields.size())) {
        return InvalidArgumentError("nvidia-smi topo: row " + fields[0] + " is short");
      }
      row.push_back(fields[column]);
    }
    rows.push_back(std::move(row));
  }
  if (gpu_columns.empty()) {
    return InvalidArgumentError("nvidia-smi topo: no GPU header line");
  }
  if (rows.size() != gpu_columns.size()) {
    return InvalidArgumentError("nvidia-smi topo: " + std::to_string(gpu_columns.size()) +
                                " GPU columns but " + std::to_string(rows.size()) + " GPU rows");
  }
  return rows;
}

std::vector<std::vector<std::string>> LinkLabels(const Topology& topology) {
  std::vector<std::vector<std::string>> labels(topology.size());
  for (int a = 0; a < topology.size(); ++a) {
    for (int b = 0; b < topology.size(); ++b) {
      labels[a].push_back(topology.LinkLabel(a, b));
    }
  }
  return labels;
}

}  // namespace vgpu::topology
