// Just enough ELF to mirror a driver library: its class (32/64-bit, which decides lib/ vs
// lib64/) and its DT_SONAME (the name the dynamic loader looks for, kept as a link).
#pragma once

#include <optional>
#include <string>

#include "vgpu/status.h"

namespace vgpu::volumes {

struct ElfInfo {
  int bits = 0;                       // 32 or 64
  std::optional<std::string> soname;  // absent when the object has no DT_SONAME
};

// Reads the header, program headers and dynamic section of `path` (System V ABI, "Dynamic
// Section": DT_SONAME is an offset into the DT_STRTAB string table, whose address is a virtual
// address mapped to a file offset through the PT_LOAD segments). Little-endian only (x86-64,
// aarch64, i386); anything malformed is INVALID_ARGUMENT naming the file.
Result<ElfInfo> ReadElfInfo(const std::string& path);
Result<ElfInfo> ReadElfInfoFd(int fd, const std::string& name_for_errors);

}  // namespace vgpu::volumes
