// vgpuctl's pieces that need no kernel: argument parsing, sizes, and rendering of slots as a
// table or JSON. Kept apart from main so they are unit-tested (tests/unit/daemon/vgpuctl).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "vgpu/kmodclient.h"
#include "vgpu/status.h"

namespace vgpu::ctl {

// A flag a command accepts: "--memory" takes a value, "--defer" does not.
struct FlagSpec {
  std::string_view name;  // with the leading "--"
  bool takes_value;
};

struct ParsedArgs {
  std::map<std::string, std::string, std::less<>> flags;  // "--memory" -> "4Gi", "--defer" -> ""
  std::vector<std::string> positional;
  bool Has(std::string_view f) const { return flags.find(f) != flags.end(); }
};

// Parses @args against @known; an unknown flag or a missing value is an error naming it.
Result<ParsedArgs> ParseArgs(std::string_view command, std::span<const std::string> args,
                             std::span<const FlagSpec> known);

// "4Gi", "512Mi", "1G", "1048576", "0" -> bytes. Names @flag in the error.
Result<uint64_t> ParseSize(std::string_view flag, std::string_view text);
Result<uint32_t> ParseU32(std::string_view flag, std::string_view text, uint32_t min, uint32_t max);
// Reads --name/--memory/--share/--mode/--managed/--unknown from @args into a config.
Result<kmod::SlotConfig> ParseSlotConfig(const ParsedArgs& args);

std::string FormatBytes(uint64_t bytes);  // "4.0 GiB", "unlimited" for 0 is the caller's job
nlohmann::json SlotToJson(const kmod::SlotInfo& s);
nlohmann::json EventToJson(const kmod::Event& e);
// One header line and one line per slot, columns aligned.
std::string SlotTable(const std::vector<kmod::SlotInfo>& slots);
// Every field and counter of one slot, one per line.
std::string SlotDetail(const kmod::SlotInfo& s);
std::string EventLine(const kmod::Event& e);

}  // namespace vgpu::ctl
