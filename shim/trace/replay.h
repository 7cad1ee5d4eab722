// `vgpu-trace replay`: runs the filter core over recorded RM ioctl traffic (format in
// uapi/vgpu_trace.h) with the recording standing in for the driver: a call the core forwards
// gets the recorded reply; a call it refuses never reaches the "driver", so what it would have
// created never exists. The end of each recording is its processes' exit: every file still
// open is closed then, freeing what the driver frees on close.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "shim/trace/replay_host.h"

namespace vgpu::trace {

struct ReplayOptions {
  uint64_t quota_bytes = 0;  // 0 = unlimited
  vcore_unknown_policy policy = VCORE_UNKNOWN_STRICT;
  std::string driver_version = "580.159.04";
  bool verbose = false;  // echo the core's log lines on stderr
};

struct Denial {
  uint64_t seq = 0;
  uint32_t nr = 0;
  uint32_t cmd = 0;  // control cmd or class
  std::string reason;
};

struct ReplayResult {
  uint64_t ioctls = 0;
  uint64_t charged_peak_bytes = 0;
  uint64_t charged_end_bytes = 0;
  uint64_t denied = 0;
  uint64_t views_rewritten = 0;
  std::vector<uint32_t> unknown_escapes;
  std::vector<uint32_t> unknown_controls;
  std::vector<uint32_t> unknown_classes;
  // Not in the JSON summary: for tests and --verbose.
  uint64_t lines = 0;
  uint64_t events = 0;
  uint64_t max_charged_after_call = 0;
  std::vector<Denial> denials;
};

class Replayer {
 public:
  explicit Replayer(ReplayOptions opts);
  ~Replayer();
  Replayer(const Replayer&) = delete;
  Replayer& operator=(const Replayer&) = delete;

  // Creates the slot. False with *err on failure (e.g. an unsupported driver version).
  [[nodiscard]] bool Init(std::string* err);
  // One JSON line of a recording. False with *err for a line that is not a record.
  [[nodiscard]] bool FeedLine(const std::string& line, std::string* err);
  // A whole recording (plain or gzip), then its end: Finish().
  [[nodiscard]] bool FeedFile(const std::string& path, std::string* err);
  // The recorded processes exited: close every open file.
  void Finish();
  ReplayResult Result() const;
  vcore_slot* slot() { return slot_; }
  SimHost& host() { return host_; }

 private:
  struct FileKey {
    uint32_t pid;
    int fd;
    bool operator<(const FileKey& o) const { return pid != o.pid ? pid < o.pid : fd < o.fd; }
  };
  vcore_file* FileFor(uint32_t pid, int fd, const std::string& dev);
  void Close(uint32_t pid, int fd);
  // Files are shared like the kernel's: an fd received over SCM_RIGHTS is another reference.
  void Unref(vcore_file* f);
  // Names the files behind the call's fd fields to the core (vcore_call_set_fd_file).
  void NameFdFiles(vcore_call* call, uint32_t pid);

  ReplayOptions opts_;
  SimHost host_;
  vcore_slot* slot_ = nullptr;
  std::map<FileKey, vcore_file*> files_;
  std::map<vcore_file*, int> refs_;  // references per file: fds of files_, in_flight_
  // The file of the last EXPORT_OBJECTS_TO_FD, in flight to its receiver (a reference), and the
  // file it was taken from; the same inference as the guest replay
  // (tests/vm/guest/replay/README.md, "Export fds received over SCM_RIGHTS").
  vcore_file* in_flight_ = nullptr;
  vcore_file* in_flight_src_ = nullptr;
  uint64_t lines_ = 0;
  uint64_t events_ = 0;
  uint64_t max_charged_ = 0;
  std::vector<Denial> denials_;
};

// The one-line JSON summary vgpu-trace replay prints.
std::string ResultJson(const ReplayResult& r);

// argv[0] is "replay". Returns the process exit status.
int RunReplay(int argc, char** argv);

}  // namespace vgpu::trace
