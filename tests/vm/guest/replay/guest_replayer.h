// The guest-side replayer: issues every recorded ioctl of one corpus trace through a slot's
// nodes (/dev/vgpuctlN, /dev/vgpuN, /dev/vgpu-uvmN) with its pointers rebuilt, and compares each
// call with the offline replay of the same trace (shim/trace/replay.cc run in this process over
// the same lines: the same filter core, with the recording as the driver). README.md in this
// folder states the comparison rules.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace replay_guest {

// One line of a recording, parsed.
struct Ptr {
  uint64_t off = 0;
  int64_t parent = -1;  // -1: the pointer is in the top-level argument
  std::vector<uint8_t> in, out;
};

struct Line {
  std::string raw;  // fed to the offline replayer as is
  bool event = false;
  std::string ev;  // "open" / "close"
  uint32_t pid = 0;
  int fd = -1;
  std::string dev;
  uint64_t seq = 0;
  uint32_t req = 0;
  int64_t rc = 0;
  int64_t err = 0;
  std::vector<uint8_t> in, out;
  std::vector<Ptr> ptrs;
};

// Reads a recording (plain or gzip). False with *err on a line that is not a record.
bool LoadTrace(const std::string& path, std::vector<Line>* lines, std::string* err);

// What the offline replay says after each line.
struct Expected {
  std::vector<uint64_t> denied_after;   // the core's refusals so far
  std::vector<uint64_t> charged_after;  // bytes charged after the line
  std::vector<uint8_t> denied_here;     // this line was refused
  uint64_t ioctls = 0, denied = 0, peak = 0, end = 0, views = 0;
};
Expected RunOffline(const std::vector<Line>& lines, uint64_t quota, std::string* err);

// A divergence of nvsim's answer from the recorded one, by kind (README: rules).
struct DivergenceKey {
  bool uvm = false;             // nr is a UVM command
  bool refused_object = false;  // the call names an object whose allocation the quota refused
  uint32_t nr = 0;
  uint32_t cmd = 0;      // control cmd / alloc class (0 otherwise)
  int64_t recorded = 0;  // RM status, or -errno when the ioctl itself failed
  int64_t got = 0;
  bool operator<(const DivergenceKey& o) const;
};

struct Mismatch {
  uint64_t seq = 0;
  std::string what;
};

struct Outcome {
  uint64_t lines = 0, calls = 0, events = 0;
  uint64_t issued = 0;                  // ioctls issued on a slot node
  uint64_t fds_translated = 0;          // fd fields rewritten to the replay's own files
  uint64_t fds_received = 0;            // export fds a process got over SCM_RIGHTS (not recorded)
  uint64_t handles_pinned = 0;          // driver-chosen object handles requested as recorded
  uint64_t clients_remapped = 0;        // client handles nvsim chose differently from the recording
  uint64_t handle_fields_remapped = 0;  // fields rewritten from a recorded client handle
  uint64_t ptrs_rebuilt = 0;            // nested buffers rebuilt
  uint64_t uvm_synthesized = 0;         // UVM calls issued with a built parameter block
  uint64_t not_rm_opens = 0;     // opens of nodes that are not RM nodes (caps): nothing to open
  uint64_t dev_files_added = 0;  // /dev/vgpuN opened for a process whose recording opened none
  uint64_t nvsim_checks = 0;     // free-memory agreements checked
  uint64_t denied = 0, end = 0, ioctls = 0, views = 0;
  // Views of perfmon samples (nvsim's live ring, not the recording's): not in `views`.
  uint64_t views_live = 0;
  uint64_t peak = 0;         // highest charge seen after a call (what the offline peak measures)
  uint64_t ledger_peak = 0;  // vgpu.ko's stats/mem_peak (settled charges only)
  double seconds = 0;
  uint64_t heap = 0, reserved = 0;                // nvsim's sizes (bytes)
  std::map<DivergenceKey, uint64_t> divergences;  // allowed by a README rule
  std::vector<Mismatch> mismatches;               // failures
};

struct RunConfig {
  uint64_t quota = 0;  // 0 = unlimited
  std::string name;    // slot name
};

// Creates a slot (VGPU_SLOT_F_UVM) over netlink, replays, closes everything, destroys the slot.
Outcome RunGuest(const std::vector<Line>& lines, const Expected& exp, const RunConfig& cfg);

std::string DescribeDivergence(const DivergenceKey& k);
// A divergence the README allows (the simulator does not model the call).
bool DivergenceAllowed(const DivergenceKey& k);

}  // namespace replay_guest
