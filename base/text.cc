#include "vgpu/text.h"

#include <cerrno>
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
