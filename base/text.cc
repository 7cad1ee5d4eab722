#include "vgpu/text.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <sstream>

namespace vgpu {

Result<std::string> ReadFileToString(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return ErrnoError("read " + path, errno);
  }
  std::ostringstream text;
  text << in.rdbuf();
  return std::move(text).str();
}

Status WriteAll(int fd, std::string_view data, const std::string& what) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return ErrnoError("write " + what, errno);
    }
    off += static_cast<size_t>(n);
  }
  return OkStatus();
}

Result<std::filesystem::path> KeepCorruptFileAside(const std::filesystem::path& path) {
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count();
  std::filesystem::path aside = path;
  aside += ".corrupt-" + std::to_string(secs);
  std::error_code ec;
  for (int n = 1; std::filesystem::exists(aside, ec); ++n) {
    aside = path;
    aside += ".corrupt-" + std::to_string(secs) + "." + std::to_string(n);
  }
  std::filesystem::rename(path, aside, ec);
  if (ec) {
    return InternalError(path.string() + " cannot be moved aside: " + ec.message());
  }
  return aside;
}

std::vector<std::string_view> SplitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    lines.push_back(text.substr(0, eol));
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
  }
  return lines;
}

}  // namespace vgpu
