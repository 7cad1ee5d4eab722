// Library lookup through the dynamic loader's cache, the way the loader itself finds the
// driver's libraries. We parse `ldconfig -p` (glibc's printer of /etc/ld.so.cache) rather than
// the binary cache: glibc has changed that format (old, compat, new "glibc-ld.so.cache1.1") and
// ldconfig reads every one of them; `-C` lets us read the host's cache from inside a container.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "vgpu/status.h"

namespace vgpu::volumes {

struct LdCacheEntry {
  std::string name;   // the name the loader matches, e.g. "libcuda.so.1"
  std::string flags;  // "libc6,x86-64" (64-bit) or "libc6" (32-bit x86), possibly with hwcap/OS ABI
  std::string path;   // absolute path on the host the cache describes
};

// Parses `ldconfig -p` output: one header line, then "\tNAME (FLAGS) => PATH" per entry.
// Lines that do not fit are an error naming the line, so a format change is noticed.
Result<std::vector<LdCacheEntry>> ParseLdconfigPrint(std::string_view text);

// Runs `<ldconfig> -p -C <cache_file>` (no shell) and parses its output.
Result<std::vector<LdCacheEntry>> ReadLdCache(const std::string& ldconfig,
                                              const std::string& cache_file);

// Runs argv[0] with argv (no shell, PATH lookup), returns stdout; non-zero exit is an error
// that carries stderr.
Result<std::string> RunCapture(const std::vector<std::string>& argv);

}  // namespace vgpu::volumes
