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

Status LoadStateFile(const std::filesystem::path& path, std::string_view what, StateFileLoad* load,
                     const std::function<Status(std::string_view)>& parse) {
  Result<std::string> text = ReadFileToString(path.string());
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound || !std::filesystem::exists(path)) {
      return OkStatus();
    }
    return text.status().Annotate(what);
  }
  load->found = true;
  Status parsed = parse(*text);
  if (parsed.ok()) {
    return OkStatus();
  }
  load->corrupt_reason = parsed.message();
  auto aside = KeepCorruptFileAside(path);
  if (!aside.ok()) {
    return aside.status().Annotate(std::string(what) + " is corrupt (" + load->corrupt_reason +
                                   ")");
  }
  load->kept_aside = std::move(*aside);
  return OkStatus();
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
