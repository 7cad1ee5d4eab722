// The guest-side replayer (guest_replayer.h; rules in README.md).
#include "guest_replayer.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "shim/trace/replay.h"
#include "tests/vm/guest/nvsim/nvsim_rm.h"
#include "vgpu/kmodclient.h"

namespace replay_guest {
namespace {

using json = nlohmann::json;

// Escapes (nv_escape.h) and UVM commands (uvm.h) the replayer treats specially.
constexpr uint32_t kEscAllocMemory = 0x27, kEscFree = 0x29, kEscControl = 0x2a, kEscAlloc = 0x2b;
constexpr uint32_t kEscMap = 0x4e, kEscUnmap = 0x4f, kEscUpdateMapping = 0x5e;
constexpr uint32_t kEscDupObject = 0x34, kEscShare = 0x35;
constexpr uint32_t kUvmMmInitialize = 75, kUvmInitialize = 0x30000001;
constexpr size_t kUvmBlock =
    16384;  // every UVM parameter struct of 580 fits (MAP_EXTERNAL_ALLOCATION: 9264 B)

int Nibble(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool HexDecode(const std::string& hex, std::vector<uint8_t>* out) {
  if (hex.size() % 2) return false;
  out->resize(hex.size() / 2);
  for (size_t i = 0; i < out->size(); ++i) {
    int hi = Nibble(hex[2 * i]), lo = Nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    (*out)[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return true;
}

bool ParseU64(const json& j, uint64_t* out) {
  if (j.is_number_unsigned() || j.is_number_integer()) {
    *out = j.is_number_unsigned() ? j.get<uint64_t>() : static_cast<uint64_t>(j.get<int64_t>());
    return true;
  }
  if (!j.is_string()) return false;
  const std::string& s = j.get_ref<const std::string&>();
  char* end = nullptr;
  errno = 0;
  *out = strtoull(s.c_str(), &end, 0);
  return errno == 0 && end != s.c_str() && *end == '\0';
}

template <typename T>
T Get(const std::vector<uint8_t>& b, size_t off) {
  T v{};
  if (off + sizeof(T) <= b.size()) memcpy(&v, b.data() + off, sizeof(T));
  return v;
}
template <typename T>
void Put(std::vector<uint8_t>* b, size_t off, T v) {
  if (off + sizeof(T) <= b->size()) memcpy(b->data() + off, &v, sizeof(T));
}

bool IsUvmReq(uint32_t req) { return (req >> 8 & 0xff) != 'F'; }  // UVM: plain numbers (§7)
uint32_t Nr(uint32_t req) { return IsUvmReq(req) ? req : (req & 0xff); }
uint32_t Size(uint32_t req) { return (req >> 16) & 0x3fff; }

// Offset of the RM status in the top-level struct, or -1 (escape without one).
int StatusOffset(uint32_t nr, uint32_t size) {
  switch (nr) {
    case kEscAlloc:
      return size == 48 ? 40 : size == 32 ? 28 : -1;
    case kEscFree:
      return size == 16 ? 12 : -1;
    case kEscControl:
      return size == 32 ? 28 : -1;
    case kEscMap:
      return size == 56 ? 40 : -1;
    case kEscUnmap:
      return size == 32 ? 24 : -1;
    case kEscUpdateMapping:
      return size == 40 ? 32 : -1;
    case kEscDupObject:
      return size == 28 ? 24 : -1;
    case kEscShare:
      return size == 24 ? 20 : -1;
    case kEscAllocMemory:
      return size == 56 ? 40 : -1;
    default:
      return -1;
  }
}

// The NV0000 OS_UNIX controls that name an export fd another process made
// (ctrl0000unix.h: the importer's side of cuMemImportFromShareableHandle).
constexpr uint32_t kCtrlGetExportObjectInfo = 0x3d08, kCtrlExportObjectsToFd = 0x3d0b,
                   kCtrlImportObjectsFromFd = 0x3d0c;
// NV2080_CTRL_CMD_PERF_GET_GPUMON_PERFMON_UTIL_SAMPLES_V2: nvsim answers from its live sample ring.
constexpr uint32_t kCtrlPerfmonSamplesV2 = NV2080_CTRL_CMD_PERF_GET_GPUMON_PERFMON_UTIL_SAMPLES_V2;
constexpr uint32_t kCtrlGetSurfaceInfo = 0x410110;  // NV0041_CTRL_CMD_GET_SURFACE_INFO
bool ReceivesExportFd(uint32_t cmd) {
  return cmd == kCtrlGetExportObjectInfo || cmd == kCtrlImportObjectsFromFd;
}

uint32_t CmdOf(uint32_t nr, const std::vector<uint8_t>& in) {
  if (nr == kEscControl) return Get<uint32_t>(in, 8);
  if (nr == kEscAlloc || nr == kEscAllocMemory) return Get<uint32_t>(in, 12);
  return 0;
}

enum class Node { kCtl, kDev, kUvm, kNone };

Node NodeOf(const std::string& dev, std::string* why) {
  const std::string p = "/dev/nvidia";
  if (dev.compare(0, p.size(), p) != 0) return Node::kNone;
  std::string rest = dev.substr(p.size());
  if (rest == "ctl") return Node::kCtl;
  if (rest == "-uvm" || rest == "-uvm-tools") return Node::kUvm;  // as the offline replay
  if (!rest.empty() && rest.find_first_not_of("0123456789") == std::string::npos) {
    if (rest != "0") *why = dev + ": the slot stands in for GPU 0 only";
    return Node::kDev;
  }
  return Node::kNone;
}

// nvsim's own view: a client straight on nvsim's nodes (no vgpu.ko in between). Its dev file is
// closed once the subdevice exists, so the replay's fd-table checks see only what vgpu.ko
// installs.
class NvsimView {
 public:
  std::string Open() {
    using namespace nvsim_test;
    ctl_ = open("/dev/nvidiactl", O_RDWR | O_CLOEXEC);
    if (ctl_ < 0) return std::string("open /dev/nvidiactl: ") + strerror(errno);
    int dev = open("/dev/nvidia0", O_RDWR | O_CLOEXEC);
    if (dev < 0) return std::string("open /dev/nvidia0: ") + strerror(errno);
    int64_t st = AllocClient(ctl_, &client_);
    nv0080_alloc_params dp{};
    if (st == NV_OK) st = Alloc(ctl_, client_, client_, &device_, NV01_DEVICE_0, &dp);
    uint32_t sub_params[1] = {0};
    if (st == NV_OK) st = Alloc(ctl_, client_, device_, &subdevice_, NV20_SUBDEVICE_0, sub_params);
    close(dev);
    if (st != NV_OK) return "nvsim direct client: status " + std::to_string(st);
    return "";
  }
  ~NvsimView() {
    if (ctl_ >= 0) close(ctl_);
  }
  // FB_GET_INFO_V2 index in bytes; UINT64_MAX on failure.
  uint64_t Bytes(uint32_t index) const {
    uint32_t kib = nvsim_test::FbInfo(ctl_, client_, subdevice_, index);
    return kib == ~0u ? UINT64_MAX : uint64_t{kib} << 10;
  }

 private:
  int ctl_ = -1;
  uint32_t client_ = 0, device_ = 0xd1000001, subdevice_ = 0xd1000002;
};

// The slot's counters under sysfs, read with pread (each read re-runs show()).
class SlotStats {
 public:
  bool Open(uint32_t id) {
    std::string dir = "/sys/class/vgpu/vgpuctl" + std::to_string(id) + "/stats/";
    for (const char* n : {"mem_charged", "internal_charged_bytes", "denied", "ioctls", "mem_peak",
                          "views_rewritten", "fd_refused", "malformed"}) {
      int fd = open((dir + n).c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) return false;
      fds_[n] = fd;
    }
    return true;
  }
  ~SlotStats() {
    for (auto& [n, fd] : fds_) close(fd);
  }
  uint64_t Read(const char* name) const {
    char buf[64] = {};
    ssize_t n = pread(fds_.at(name), buf, sizeof buf - 1, 0);
    return n > 0 ? strtoull(buf, nullptr, 0) : UINT64_MAX;
  }

 private:
  std::map<std::string, int> fds_;
};

// Runs the filter core over the rebuilt call only to learn where its fd fields are
// (vcore_call_fd): the core's ABI tables are the one list of fd fields (§9.3), so the replayer
// does not keep a second one. The probe never forwards: vcore_post(-EINVAL) records nothing.
class FdProbe {
 public:
  bool Init() {
    vcore_slot_config cfg{};
    cfg.unknown_policy = VCORE_UNKNOWN_STRICT;
    cfg.managed_policy = VCORE_MANAGED_DEFAULT;
    snprintf(cfg.driver_version, sizeof cfg.driver_version, "580.159.04");
    int e = 0;
    slot_ = vcore_slot_create(&vgpu::trace::SimHost::kOps, &host_, &cfg, nullptr, &e);
    if (!slot_) return false;
    for (auto k : {VCORE_FILE_CTL, VCORE_FILE_DEV, VCORE_FILE_UVM})
      files_[k] = vcore_file_open(slot_, k, nullptr);
    return true;
  }
  ~FdProbe() {
    for (auto& [k, f] : files_) vcore_file_close(f);
    vcore_slot_destroy(slot_);
  }
  // (user address, value) of every fd field of the call whose buffers are @bufs (real addresses).
  std::vector<std::pair<uint64_t, int32_t>> Fds(Node node, uint32_t req,
                                                const std::vector<std::vector<uint8_t>*>& bufs) {
    vgpu::trace::SimMemory mem;
    for (auto* b : bufs)
      if (!b->empty()) mem.Map(reinterpret_cast<uintptr_t>(b->data()), *b);
    auto kind = node == Node::kCtl   ? VCORE_FILE_CTL
                : node == Node::kDev ? VCORE_FILE_DEV
                                     : VCORE_FILE_UVM;
    vcore_call_ctx ctx{&mem, 1, 1};
    vcore_call* call = nullptr;
    vcore_pre(files_[kind], req, reinterpret_cast<uintptr_t>(bufs[0]->data()), &ctx, &call);
    std::vector<std::pair<uint64_t, int32_t>> out;
    for (unsigned i = 0; call && i < vcore_call_fd_count(call); ++i) {
      const vcore_fd_field* f = vcore_call_fd(call, i);
      if (f && f->value >= 0) out.emplace_back(f->uaddr, f->value);
    }
    vcore_post(call, -VCORE_EINVAL);
    return out;
  }

 private:
  vgpu::trace::SimHost host_;
  vcore_slot* slot_ = nullptr;
  std::map<int, vcore_file*> files_;
};

}  // namespace

bool DivergenceKey::operator<(const DivergenceKey& o) const {
  return std::tie(uvm, refused_object, nr, cmd, recorded, got) <
         std::tie(o.uvm, o.refused_object, o.nr, o.cmd, o.recorded, o.got);
}

bool LoadTrace(const std::string& path, std::vector<Line>* lines, std::string* err) {
  gzFile gz = gzopen(path.c_str(), "rb");
  if (!gz) {
    *err = path + ": cannot open";
    return false;
  }
  std::string all;
  char buf[1 << 16];
  int n;
  while ((n = gzread(gz, buf, sizeof buf)) > 0) all.append(buf, static_cast<size_t>(n));
  gzclose(gz);
  if (n < 0) {
    *err = path + ": read error";
    return false;
  }
  size_t start = 0;
  uint64_t lineno = 0;
  while (start < all.size()) {
    size_t nl = all.find('\n', start);
    if (nl == std::string::npos) nl = all.size();
    Line l;
    l.raw = all.substr(start, nl - start);
    start = nl + 1;
    ++lineno;
    if (l.raw.empty()) continue;
    auto bad = [&](const std::string& what) {
      *err = path + ":" + std::to_string(lineno) + ": " + what;
      return false;
    };
    json j = json::parse(l.raw, nullptr, false);
    uint64_t v = 0;
    if (!j.is_object() || !j.contains("fd") || !ParseU64(j["fd"], &v)) return bad("not a record");
    l.fd = static_cast<int>(v);
    if (ParseU64(j.value("pid", json(0)), &v)) l.pid = static_cast<uint32_t>(v);
    if (ParseU64(j.value("seq", json(0)), &v)) l.seq = v;
    l.dev = j.value("dev", std::string());
    if (j.contains("ev")) {
      l.event = true;
      l.ev = j.value("ev", std::string());
    } else {
      if (!j.contains("req") || !ParseU64(j["req"], &v) || v > 0xffffffffu) return bad("no req");
      l.req = static_cast<uint32_t>(v);
      l.rc = j.value("rc", int64_t{0});
      l.err = j.value("errno", int64_t{0});
      if (!HexDecode(j.value("in", std::string()), &l.in) ||
          !HexDecode(j.value("out", std::string()), &l.out))
        return bad("bad hex");
      for (const json& p : j.value("ptrs", json::array())) {
        Ptr q;
        uint64_t parent = 0;
        if (!p.is_object() || !ParseU64(p.value("off", json(-1)), &q.off) ||
            !HexDecode(p.value("in", std::string()), &q.in) ||
            !HexDecode(p.value("out", std::string()), &q.out))
          return bad("bad ptrs entry");
        // An absolute address names no field to rebuild: the corpus has none; refuse loudly.
        if (p.contains("addr")) return bad("ptrs entry with an absolute addr: cannot rebuild");
        if (p.contains("parent")) {
          if (!ParseU64(p["parent"], &parent) || parent >= l.ptrs.size())
            return bad("ptrs entry with a bad parent");
          q.parent = static_cast<int64_t>(parent);
        }
        l.ptrs.push_back(std::move(q));
      }
    }
    lines->push_back(std::move(l));
  }
  return true;
}

Expected RunOffline(const std::vector<Line>& lines, uint64_t quota, std::string* err) {
  Expected e;
  vgpu::trace::ReplayOptions opts;
  opts.quota_bytes = quota;
  vgpu::trace::Replayer r(opts);
  if (!r.Init(err)) return e;
  vcore_stats st{};
  for (const Line& l : lines) {
    std::string le;
    if (!r.FeedLine(l.raw, &le)) {
      *err = "seq " + std::to_string(l.seq) + ": " + le;
      return e;
    }
    uint64_t before = st.denied;
    vcore_slot_get_stats(r.slot(), &st);
    e.denied_after.push_back(st.denied);
    e.charged_after.push_back(st.charged_bytes);
    e.denied_here.push_back(st.denied != before);
  }
  r.Finish();  // the recorded processes exit
  vcore_slot_get_stats(r.slot(), &st);
  e.ioctls = st.ioctls;
  e.denied = st.denied;
  e.peak = st.charged_peak_bytes;
  e.end = st.charged_bytes;
  e.views = st.views_rewritten;
  return e;
}

std::string DescribeDivergence(const DivergenceKey& k) {
  char b[160];
  snprintf(b, sizeof b, "%s%s 0x%x cmd/class 0x%x: recorded %s0x%" PRIx64 ", nvsim %s0x%" PRIx64,
           k.refused_object ? "(object refused by the quota) " : "", k.uvm ? "uvm" : "nr", k.nr,
           k.cmd, k.recorded < 0 ? "-errno " : "status ",
           static_cast<uint64_t>(k.recorded < 0 ? -k.recorded : k.recorded),
           k.got < 0 ? "-errno " : "status ", static_cast<uint64_t>(k.got < 0 ? -k.got : k.got));
  return b;
}

// README.md "Where nvsim answers differently": every rule is one line here.
bool DivergenceAllowed(const DivergenceKey& k) {
  constexpr int64_t kNotSupported = 0x56;
  // A call naming an object the quota refused: the object never existed in nvsim, while the
  // recording (and the offline replay) had it.
  if (k.refused_object) return true;
  // Controls nvsim does not simulate (GSP, perf, NVLink, ...): NV_ERR_NOT_SUPPORTED whatever the
  // H200 answered. The memory-info controls are simulated, so this never hides one of them.
  if (k.nr == kEscControl && k.got == kNotSupported) return true;
  // UVM: recorded without payload; nvsim models INITIALIZE/REGISTER_GPU only (README).
  if (k.uvm && k.nr != kUvmInitialize) return true;
  // GET_SURFACE_INFO's list is a pointer inside the control's params, two levels below the
  // ioctl argument; the recorder keeps one level, so the list is not in the trace and nvsim
  // faults on the recorded address (README rule 4).
  constexpr int64_t kInvalidPointer = 0x3d;
  if (k.nr == kEscControl && k.cmd == kCtrlGetSurfaceInfo && k.got == kInvalidPointer) return true;
  return false;
}

Outcome RunGuest(const std::vector<Line>& lines, const Expected& exp, const RunConfig& cfg) {
  Outcome o;
  auto fail = [&](uint64_t seq, const std::string& what) {
    if (o.mismatches.size() < 200) o.mismatches.push_back({seq, what});
  };
  NvsimView nv;
  if (std::string e = nv.Open(); !e.empty()) {
    fail(0, e);
    return o;
  }
  o.heap = nv.Bytes(NV2080_CTRL_FB_INFO_INDEX_HEAP_SIZE);
  o.reserved = nv.Bytes(NV2080_CTRL_FB_INFO_INDEX_TOTAL_RAM_SIZE) - o.heap;
  if (nv.Bytes(NV2080_CTRL_FB_INFO_INDEX_HEAP_FREE) != o.heap) {
    fail(0, "nvsim has video memory in use before the replay");
    return o;
  }

  auto nl = vgpu::kmod::Client::Open();
  if (!nl.ok()) {
    fail(0, "netlink: " + nl.status().ToString());
    return o;
  }
  vgpu::kmod::SlotSpec spec;
  spec.gpu = 0;
  spec.flags = VGPU_SLOT_F_UVM;
  spec.config.name = cfg.name;
  spec.config.unknown_policy = vgpu::kmod::UnknownPolicy::kRefuse;  // the offline replay is strict
  if (cfg.quota) spec.config.mem_quota = cfg.quota;
  auto slot = (*nl)->CreateSlot(spec);
  if (!slot.ok()) {
    fail(0, "create slot: " + slot.status().ToString());
    return o;
  }
  const std::string node_path[] = {"/dev/" + slot->node_ctl, "/dev/" + slot->node_dev,
                                   "/dev/" + slot->node_uvm};
  SlotStats stats;
  FdProbe probe;
  if (!stats.Open(slot->id) || !probe.Init()) {
    fail(0, "slot stats under /sys/class/vgpu or the fd probe unavailable");
    (void)(*nl)->DestroySlot(slot->id, VGPU_DEL_F_DEFER);
    return o;
  }

  std::map<std::pair<uint32_t, int>, int> fds;  // (pid, recorded fd) -> replay fd
  // The last export fd (EXPORT_OBJECTS_TO_FD) as a file in flight: a dup of the exporter's file,
  // as a socket holds one between sendmsg(SCM_RIGHTS) and recvmsg. The recording shows neither,
  // only the importer's fd number in its GET_EXPORT_OBJECT_INFO / IMPORT_OBJECTS_FROM_FD, a
  // number it never opened: that number gets the file in flight (what the receiver got).
  int in_flight = -1, in_flight_src = -1;
  std::map<uint32_t, int> uvm_initialized;  // pid -> replay fd of its UVM_INITIALIZE file
  auto close_file = [&](uint32_t pid, int rfd) {
    auto it = fds.find({pid, rfd});
    if (it == fds.end()) return;
    close(it->second);
    fds.erase(it);
  };
  auto open_file = [&](const Line& l) -> int {
    std::string why;
    Node n = NodeOf(l.dev, &why);
    if (!why.empty()) fail(l.seq, why);
    if (n == Node::kNone) return -1;
    int fd = open(node_path[static_cast<int>(n)].c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) {
      fail(l.seq, "open " + node_path[static_cast<int>(n)] + ": " + strerror(errno));
      return -1;
    }
    fds[{l.pid, l.fd}] = fd;
    return fd;
  };
  // nvsim models no memory of its own behind TSGs, channels and VA spaces: the slot's charge for
  // them (a fixed estimate of what the real driver uses, issue 17 F11.1) is not in its heap.
  auto check_nvsim = [&](uint64_t seq, uint64_t charged) {
    ++o.nvsim_checks;
    uint64_t free_bytes = nv.Bytes(NV2080_CTRL_FB_INFO_INDEX_HEAP_FREE);
    uint64_t internal = stats.Read("internal_charged_bytes");
    if (free_bytes != o.heap - (charged - internal))
      fail(seq, "nvsim heap free " + std::to_string(free_bytes) + " != heap " +
                    std::to_string(o.heap) + " - slot charge " + std::to_string(charged) +
                    " + its TSG, channel and VA space estimate " + std::to_string(internal));
  };

  // A process whose recording never opens /dev/nvidiaN (the synthetic traces) gets the slot's
  // dev node opened before its first call, as libcuda always does: the real driver's fd-table
  // check for device allocation (nvidia-rm-abi.md §9.3.2) would refuse its device otherwise.
  std::map<uint32_t, bool> pid_has_dev;
  for (const Line& l : lines) {
    std::string why;
    pid_has_dev[l.pid] |= l.event && l.ev == "open" && NodeOf(l.dev, &why) == Node::kDev;
  }
  std::vector<int> added_dev_files;
  std::set<std::pair<uint32_t, uint32_t>> refused_objects;  // (client, handle) the quota refused
  std::map<uint32_t, uint32_t> client_map;  // recorded client handle -> the one nvsim gave
  uint64_t denied_seen = stats.Read("denied");
  auto t0 = std::chrono::steady_clock::now();
  std::vector<uint8_t> uvm_block(kUvmBlock);
  for (size_t i = 0; i < lines.size(); ++i) {
    const Line& l = lines[i];
    ++o.lines;
    bool memory_changing = false;
    if (l.event) {
      ++o.events;
      if (l.ev == "open") {
        close_file(l.pid, l.fd);  // a missed close, as the offline replay does
        std::string why;
        if (NodeOf(l.dev, &why) == Node::kNone)
          ++o.not_rm_opens;  // caps/modeset nodes: the core never sees them, neither offline
        else
          open_file(l);
      } else if (l.ev == "close") {
        memory_changing = fds.count({l.pid, l.fd}) != 0;
        close_file(l.pid, l.fd);
      }
    } else {
      ++o.calls;
      if (!pid_has_dev[l.pid]) {
        pid_has_dev[l.pid] = true;
        int d = open(node_path[1].c_str(), O_RDWR | O_CLOEXEC);
        if (d < 0)
          fail(l.seq, "open " + node_path[1] + ": " + strerror(errno));
        else
          added_dev_files.push_back(d);
        ++o.dev_files_added;
      }
      auto it = fds.find({l.pid, l.fd});
      int fd = it != fds.end() ? it->second : open_file(l);  // no open event: as offline
      std::string why;
      Node node = NodeOf(l.dev, &why);
      if (fd < 0) {
        if (node != Node::kNone) continue;  // open failed: already a mismatch
        fail(l.seq, "ioctl on " + l.dev + ", which is not an RM node: nothing stands in for it");
        continue;
      }
      ++o.issued;
      uint32_t nr = Nr(l.req);
      // Buffers at their new addresses: [0] the argument, then one per recorded pointer.
      std::vector<std::vector<uint8_t>> bufs(1 + l.ptrs.size());
      bool uvm = node == Node::kUvm;
      if (uvm) {
        // UVM calls were recorded without payload (traces/README.md): a zeroed block of the
        // largest parameter size, with the one fd field the core translates filled in.
        bufs[0].assign(kUvmBlock, 0);
        ++o.uvm_synthesized;
        if (l.req == kUvmMmInitialize) {
          auto u = uvm_initialized.find(l.pid);
          Put<int32_t>(&bufs[0], 0, u != uvm_initialized.end() ? u->second : -1);
        }
      } else {
        bufs[0] = l.in;
        if (bufs[0].size() < Size(l.req)) bufs[0].resize(Size(l.req));
      }
      for (size_t k = 0; k < l.ptrs.size(); ++k) {
        const Ptr& p = l.ptrs[k];
        bufs[k + 1] = p.in.empty() ? std::vector<uint8_t>(p.out.size()) : p.in;
      }
      // Client handles the driver gave this replay stand in for the recorded ones wherever they
      // appear (every handle field is a 4-byte-aligned u32; before pointers are written).
      if (!client_map.empty())
        for (auto& b : bufs)
          for (size_t off = 0; off + 4 <= b.size(); off += 4)
            if (auto c = client_map.find(Get<uint32_t>(b, off)); c != client_map.end()) {
              Put<uint32_t>(&b, off, c->second);
              ++o.handle_fields_remapped;
            }
      for (size_t k = 0; k < l.ptrs.size(); ++k) {  // data() is stable from here on
        const Ptr& p = l.ptrs[k];
        std::vector<uint8_t>& holder = bufs[p.parent < 0 ? 0 : p.parent + 1];
        Put<uint64_t>(&holder, p.off,
                      bufs[k + 1].empty() ? 0 : reinterpret_cast<uintptr_t>(bufs[k + 1].data()));
        ++o.ptrs_rebuilt;
      }
      // Object handles the driver chose are requested as recorded (the driver honours a
      // caller's handle; objects live in their client's namespace, so nothing else can hold
      // it), keeping every later reference valid. Client handles are one namespace for the
      // whole driver (nvsim's own clients, vgpu.ko's in-kernel one): those are issued as
      // recorded and remapped from the reply.
      bool rec_ok = l.rc == 0 && StatusOffset(nr, Size(l.req)) >= 0 &&
                    Get<uint32_t>(l.out, StatusOffset(nr, Size(l.req))) == 0;
      uint32_t cls = Get<uint32_t>(l.in, 12);
      bool root_alloc = nr == kEscAlloc && !uvm && (cls == 0x0 || cls == 0x1 || cls == 0x41);
      if ((nr == kEscAlloc || nr == kEscAllocMemory) && !uvm && rec_ok && !root_alloc &&
          Get<uint32_t>(bufs[0], 8) == 0 && Get<uint32_t>(l.out, 8) != 0) {
        Put<uint32_t>(&bufs[0], 8, Get<uint32_t>(l.out, 8));
        ++o.handles_pinned;
      }
      // fd fields: the recorded process's fd numbers -> this replay's files.
      std::vector<std::vector<uint8_t>*> views;
      for (auto& b : bufs) views.push_back(&b);
      // (UVM blocks are built here with this replay's own fds already.)
      const uint32_t cmd = nr == kEscControl && !uvm ? CmdOf(nr, l.in) : 0;
      for (auto [uaddr, value] :
           uvm ? std::vector<std::pair<uint64_t, int32_t>>{} : probe.Fds(node, l.req, views)) {
        auto f = fds.find({l.pid, value});
        if (f == fds.end() && in_flight >= 0 && ReceivesExportFd(cmd)) {
          f = fds.emplace(std::make_pair(l.pid, value), in_flight).first;
          in_flight = in_flight_src = -1;
          ++o.fds_received;
        }
        if (f == fds.end()) {
          fail(l.seq, "fd field " + std::to_string(value) + " names no file the trace opened");
          continue;
        }
        memcpy(reinterpret_cast<void*>(static_cast<uintptr_t>(uaddr)), &f->second, sizeof(int32_t));
        ++o.fds_translated;
        if (cmd == kCtrlExportObjectsToFd && f->second != in_flight_src) {
          if (in_flight >= 0) close(in_flight);
          in_flight = dup(f->second);
          in_flight_src = in_flight < 0 ? -1 : f->second;
        }
      }
      // nvsim's perfmon ring names whoever ran on its GPU lately (other traces' processes
      // included), not what the H200 recorded: the view of that reply is counted apart.
      const bool live_samples = cmd == kCtrlPerfmonSamplesV2;
      const uint64_t views_before = live_samples ? stats.Read("views_rewritten") : 0;
      errno = 0;
      int ret = ioctl(fd, l.req, bufs[0].data());
      int64_t got = ret < 0 ? -errno : 0;
      if (live_samples) o.views_live += stats.Read("views_rewritten") - views_before;
      if (uvm && l.req == kUvmInitialize && ret == 0) uvm_initialized[l.pid] = fd;
      if (root_alloc && rec_ok && ret == 0 &&
          Get<uint32_t>(bufs[0], StatusOffset(nr, Size(l.req))) == 0) {
        uint32_t recorded = Get<uint32_t>(l.out, 8), given = Get<uint32_t>(bufs[0], 8);
        if (recorded != given) {
          client_map[recorded] = given;
          ++o.clients_remapped;
        }
      }
      // (A dup, an export and an import take a reference to memory nvsim already holds.)
      memory_changing = nr == kEscAlloc || nr == kEscFree || nr == kEscAllocMemory ||
                        nr == kEscDupObject || cmd == kCtrlExportObjectsToFd ||
                        cmd == kCtrlImportObjectsFromFd;
      // The verdict: refused by the core online exactly when offline.
      uint64_t denied_now = stats.Read("denied");
      bool denied_online = denied_now != denied_seen;
      denied_seen = denied_now;
      if (denied_online && (nr == kEscAlloc || nr == kEscAllocMemory) && !uvm)
        refused_objects.insert({Get<uint32_t>(bufs[0], 0), Get<uint32_t>(bufs[0], 8)});
      if (denied_online != static_cast<bool>(exp.denied_here[i]))
        fail(l.seq, std::string("core verdict differs: offline ") +
                        (exp.denied_here[i] ? "refused" : "forwarded") + ", through vgpu.ko " +
                        (denied_online ? "refused" : "forwarded"));
      // What nvsim answered versus what the H200 answered (forwarded calls only).
      if (!denied_online) {
        int so = uvm ? -1 : StatusOffset(nr, Size(l.req));
        int64_t recorded = l.rc < 0  ? -(l.err ? l.err : EINVAL)
                           : so >= 0 ? Get<uint32_t>(l.out, so)
                                     : 0;
        if (got == 0 && so >= 0) got = Get<uint32_t>(bufs[0], so);
        if (got != recorded) {
          uint32_t client = Get<uint32_t>(bufs[0], 0);
          bool refused = !uvm && (refused_objects.count({client, Get<uint32_t>(bufs[0], 4)}) ||
                                  refused_objects.count({client, Get<uint32_t>(bufs[0], 8)}));
          // A dup of a refused object (NVOS55 hClientSrc, hObjectSrc): the dup never exists
          // either.
          if (!uvm && nr == kEscDupObject &&
              refused_objects.count({Get<uint32_t>(bufs[0], 12), Get<uint32_t>(bufs[0], 16)})) {
            refused = true;
            refused_objects.insert({client, Get<uint32_t>(bufs[0], 8)});
          }
          DivergenceKey k{uvm, refused, nr, uvm ? 0 : CmdOf(nr, l.in), recorded, got};
          if (DivergenceAllowed(k))
            ++o.divergences[k];
          else
            fail(l.seq, "nvsim answered differently: " + DescribeDivergence(k));
        }
      }
    }
    // The charge after every line, and nvsim's free memory after every memory-changing one.
    uint64_t charged = stats.Read("mem_charged");
    if (charged != exp.charged_after[i])
      fail(l.seq, "charge " + std::to_string(charged) + " != offline " +
                      std::to_string(exp.charged_after[i]));
    if (memory_changing) check_nvsim(l.seq, charged);
    o.peak = std::max(o.peak, charged);
  }
  // The end of the recording is its processes' exit.
  while (!fds.empty()) close_file(fds.begin()->first.first, fds.begin()->first.second);
  if (in_flight >= 0) close(in_flight);
  for (int d : added_dev_files) close(d);
  // A ctl file closed before the dev file registered to it is finished a few ms after that dev
  // file (the driver holds the ctl file until then; kmod/file_release.c): wait for the slot's files
  // to be gone, as they are once a process has exited.
  for (int i = 0; i < 100; ++i) {
    auto now = (*nl)->GetSlot(slot->id);
    if (!now.ok() || now->open_files == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  o.end = stats.Read("mem_charged");
  o.ledger_peak = stats.Read("mem_peak");
  o.denied = stats.Read("denied");
  o.ioctls = stats.Read("ioctls");
  o.views = stats.Read("views_rewritten") - o.views_live;
  check_nvsim(UINT64_MAX, o.end);
  if (uint64_t n = stats.Read("fd_refused"); n != 0)
    fail(UINT64_MAX, std::to_string(n) + " fd fields refused by vgpu.ko");
  auto destroyed = (*nl)->DestroySlot(slot->id, 0);
  if (!destroyed.ok()) fail(UINT64_MAX, "destroy slot: " + destroyed.ToString());
  return o;
}

}  // namespace replay_guest
