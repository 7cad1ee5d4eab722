// Small text and file helpers that several parsers share: a file read whole, a buffer written
// whole, a corrupt file kept aside, a state file loaded (missing, parsed or kept aside), text cut
// into numbered lines, a decimal number that must fill its field.
#pragma once

#include <charconv>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "vgpu/status.h"

namespace vgpu {

// The whole file as bytes. Failure is ErrnoError("read <path>", errno): NotFound for a missing
// file, PermissionDenied, ...; callers that word their own error annotate or replace it.
Result<std::string> ReadFileToString(const std::string& path);

// Writes all of `data` to `fd`, going on after short writes and EINTR. Failure is
// ErrnoError("write <what>", errno).
Status WriteAll(int fd, std::string_view data, const std::string& what);

// Moves a file found corrupt to <path>.corrupt-<unix seconds> (".<n>" added when that exists:
// older evidence is never overwritten) and returns where it went; the caller rebuilds the file.
// Failure is InternalError naming the path and why it could not be moved.
Result<std::filesystem::path> KeepCorruptFileAside(const std::filesystem::path& path);

// How LoadStateFile found a file the manager keeps across restarts; the loaded files' result
// structs derive from it.
struct StateFileLoad {
  bool found = false;                // the file existed
  std::string corrupt_reason;        // non-empty when the file was corrupt
  std::filesystem::path kept_aside;  // where the corrupt file went (KeepCorruptFileAside)
};

// Reads the file at `path` whole and hands its text to `parse`. A missing file is found = false,
// and `parse` is not called. A text that `parse` rejects is kept aside with the reason in `load`,
// for the caller to rebuild what the file held. An unreadable file, or a corrupt one that cannot
// be moved aside, is an error annotated with `what` ("checkpoint").
Status LoadStateFile(const std::filesystem::path& path, std::string_view what, StateFileLoad* load,
                     const std::function<Status(std::string_view)>& parse);

// The same with a parser that returns Result<T>: what it parsed goes to `*value`.
template <typename T, typename Parse>
Status LoadStateFile(const std::filesystem::path& path, std::string_view what, StateFileLoad* load,
                     T* value, Parse parse) {
  return LoadStateFile(path, what, load, [&](std::string_view text) {
    Result<T> parsed = parse(text);
    if (!parsed.ok()) {
      return parsed.status();
    }
    *value = std::move(*parsed);
    return OkStatus();
  });
}

// `text` cut at each '\n', without the '\n'. A final line needs no '\n', and "a\n" is one line,
// not two: the index + 1 is the line number an error message gives.
std::vector<std::string_view> SplitLines(std::string_view text);

// `text` as a number of type T when the whole of it is one (std::from_chars: no sign for
// unsigned types, no blanks, no suffix, in range); nullopt otherwise.
template <typename T>
std::optional<T> ParseNumber(std::string_view text) {
  T value{};
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) {
    return std::nullopt;
  }
  return value;
}

}  // namespace vgpu
