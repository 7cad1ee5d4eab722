#include "shim/trace/replay.h"

#include <zlib.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

#include "kmod/core/abi/ctrl.h"

namespace vgpu::trace {
namespace {

using json = nlohmann::json;

// Candidate addresses for the top-level argument: it must not overlap a recorded nested buffer
// (those keep the addresses the traced process used).
constexpr uint64_t kArgBases[] = {0x1000, 0x7e0000000000ull, 0x100000000000ull, 0x30000};

bool HexDecode(const std::string& hex, std::vector<uint8_t>* out) {
  if (hex.size() % 2 != 0) {
    return false;
  }
  out->resize(hex.size() / 2);
  for (size_t i = 0; i < out->size(); ++i) {
    auto nib = [](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      return -1;
    };
    int hi = nib(hex[2 * i]);
    int lo = nib(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      return false;
    }
    (*out)[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return true;
}

uint64_t Rd64(const std::vector<uint8_t>& b, uint64_t off) {
  uint64_t v = 0;
  if (off <= b.size() && b.size() - off >= 8) {
    memcpy(&v, b.data() + off, 8);
  }
  return v;
}

bool ParseU64(const json& j, uint64_t* out) {
  if (j.is_number_unsigned()) {
    *out = j.get<uint64_t>();
    return true;
  }
  if (j.is_number_integer()) {
    *out = static_cast<uint64_t>(j.get<int64_t>());
    return true;
  }
  if (j.is_string()) {
    const std::string& s = j.get_ref<const std::string&>();
    char* end = nullptr;
    errno = 0;
    *out = strtoull(s.c_str(), &end, 0);
    return errno == 0 && end != s.c_str() && *end == '\0';
  }
  return false;
}

// /dev/nvidiactl, /dev/nvidiaN, /dev/nvidia-uvm(-tools); anything else is not filtered.
bool KindOf(const std::string& dev, enum vcore_file_kind* kind) {
  const std::string prefix = "/dev/nvidia";
  if (dev.compare(0, prefix.size(), prefix) != 0) {
    return false;
  }
  std::string rest = dev.substr(prefix.size());
  if (rest == "ctl") {
    *kind = VCORE_FILE_CTL;
    return true;
  }
  if (rest == "-uvm" || rest == "-uvm-tools") {
    *kind = VCORE_FILE_UVM;
    return true;
  }
  if (!rest.empty() && rest.find_first_not_of("0123456789") == std::string::npos) {
    *kind = VCORE_FILE_DEV;
    return true;
  }
  return false;
}

struct Nested {
  uint64_t addr = 0;
  std::vector<uint8_t> in, out;
};

}  // namespace

Replayer::Replayer(ReplayOptions opts) : opts_(std::move(opts)) {
  host_.set_echo_log(opts_.verbose);
}

Replayer::~Replayer() {
  Finish();
  vcore_slot_destroy(slot_);
}

bool Replayer::Init(std::string* err) {
  vcore_slot_config cfg{};
  cfg.id = 0;
  cfg.mem_quota_bytes = opts_.quota_bytes;
  cfg.unknown_policy = opts_.policy;
  cfg.managed_policy = VCORE_MANAGED_DEFAULT;
  snprintf(cfg.driver_version, sizeof cfg.driver_version, "%s", opts_.driver_version.c_str());
  int e = 0;
  slot_ = vcore_slot_create(&SimHost::kOps, &host_, &cfg, nullptr, &e);
  if (slot_ == nullptr) {
    *err = "cannot create slot (error " + std::to_string(e) + ")";
    if (!host_.log().empty()) {
      *err += ": " + host_.log().back();
    }
    return false;
  }
  return true;
}

vcore_file* Replayer::FileFor(uint32_t pid, int fd, const std::string& dev) {
  auto it = files_.find({pid, fd});
  if (it != files_.end()) {
    return it->second;
  }
  enum vcore_file_kind kind;
  if (!KindOf(dev, &kind)) {
    return nullptr;
  }
  vcore_file* f = vcore_file_open(slot_, kind, nullptr);
  if (f != nullptr) {
    files_[{pid, fd}] = f;
    refs_[f] = 1;
  }
  return f;
}

void Replayer::Unref(vcore_file* f) {
  auto it = refs_.find(f);
  if (it != refs_.end() && --it->second == 0) {
    refs_.erase(it);
    vcore_file_close(f);
  }
}

void Replayer::Close(uint32_t pid, int fd) {
  auto it = files_.find({pid, fd});
  if (it != files_.end()) {
    vcore_file* f = it->second;
    files_.erase(it);
    Unref(f);
  }
}

void Replayer::Finish() {
  while (!files_.empty()) {
    Close(files_.begin()->first.pid, files_.begin()->first.fd);
  }
  if (in_flight_ != nullptr) {
    Unref(in_flight_);
  }
  in_flight_ = in_flight_src_ = nullptr;
}

// The recording shows neither the exporter's sendmsg nor the importer's recvmsg, only the
// importer's fd number in GET_EXPORT_OBJECT_INFO / IMPORT_OBJECTS_FROM_FD, one it never opened:
// that number gets the file of the last export (what the receiver got).
void Replayer::NameFdFiles(vcore_call* call, uint32_t pid) {
  const uint32_t cmd = vcore_call_cmd(call);
  const bool receives = cmd == NV0000_CTRL_CMD_OS_UNIX_GET_EXPORT_OBJECT_INFO ||
                        cmd == NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECTS_FROM_FD;
  for (unsigned i = 0; i < vcore_call_fd_count(call); ++i) {
    const vcore_fd_field* fd = vcore_call_fd(call, i);
    if (fd->value < 0) {
      continue;
    }
    auto it = files_.find({pid, fd->value});
    if (it == files_.end() && in_flight_ != nullptr && receives) {
      it = files_.emplace(FileKey{pid, fd->value}, in_flight_).first;  // the reference moves
      in_flight_ = in_flight_src_ = nullptr;
    }
    if (it == files_.end()) {
      continue;
    }
    vcore_call_set_fd_file(call, i, it->second);
    if (cmd == NV0000_CTRL_CMD_OS_UNIX_EXPORT_OBJECTS_TO_FD && it->second != in_flight_src_) {
      if (in_flight_ != nullptr) {
        Unref(in_flight_);
      }
      in_flight_ = in_flight_src_ = it->second;
      ++refs_[it->second];
    }
  }
}

bool Replayer::FeedLine(const std::string& line, std::string* err) {
  if (line.empty()) {
    return true;
  }
  json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) {
    *err = "not a JSON object";
    return false;
  }
  uint64_t pid = 0, fd = 0, seq = 0;
  ParseU64(j.value("pid", json(0)), &pid);
  if (!j.contains("fd") || !ParseU64(j["fd"], &fd)) {
    *err = "record without fd";
    return false;
  }
  ParseU64(j.value("seq", json(0)), &seq);
  std::string dev = j.value("dev", std::string());
  if (j.contains("ev")) {
    ++events_;
    std::string ev = j.value("ev", std::string());
    if (ev == "open") {
      Close(static_cast<uint32_t>(pid), static_cast<int>(fd));  // a missed close
      FileFor(static_cast<uint32_t>(pid), static_cast<int>(fd), dev);
    } else if (ev == "close") {
      Close(static_cast<uint32_t>(pid), static_cast<int>(fd));
    }
    return true;
  }
  uint64_t req = 0;
  if (!j.contains("req") || !ParseU64(j["req"], &req) || req > 0xffffffffu) {
    *err = "record without a valid req";
    return false;
  }
  ++lines_;
  vcore_file* file = FileFor(static_cast<uint32_t>(pid), static_cast<int>(fd), dev);
  if (file == nullptr) {
    return true;  // not an RM node (caps, modeset): not filtered
  }
  std::vector<uint8_t> in, out;
  if (!HexDecode(j.value("in", std::string()), &in) ||
      !HexDecode(j.value("out", std::string()), &out)) {
    *err = "bad hex in in/out";
    return false;
  }
  std::vector<Nested> nested;
  if (j.contains("ptrs") && j["ptrs"].is_array()) {
    for (const json& p : j["ptrs"]) {
      Nested n;
      uint64_t off = 0;
      if (!p.is_object() || !ParseU64(p.value("off", json(-1)), &off) ||
          !HexDecode(p.value("in", std::string()), &n.in) ||
          !HexDecode(p.value("out", std::string()), &n.out)) {
        *err = "bad ptrs entry";
        return false;
      }
      uint64_t parent = UINT64_MAX;
      if (p.contains("addr")) {
        ParseU64(p["addr"], &n.addr);
      } else if (p.contains("parent") && ParseU64(p["parent"], &parent) && parent < nested.size()) {
        n.addr = Rd64(nested[parent].in, off);
      } else {
        n.addr = Rd64(in, off);
      }
      nested.push_back(std::move(n));
    }
  }
  int64_t rc_rec = j.value("rc", int64_t{0});
  int64_t errno_rec = j.value("errno", int64_t{0});

  SimMemory mem;
  for (const Nested& n : nested) {
    if (n.addr != 0 && !n.in.empty()) {
      mem.Map(n.addr, n.in);  // an overlapping duplicate stays unmapped
    }
  }
  uint64_t arg = kArgBases[0];
  if (!in.empty()) {
    for (uint64_t base : kArgBases) {
      if (!mem.Overlaps(base, in.size())) {
        arg = base;
        break;
      }
    }
    mem.Map(arg, in);
  }

  vcore_call_ctx ctx{&mem, static_cast<vcore_u32>(pid),
                     static_cast<vcore_u32>(j.value("tid", pid))};
  vcore_call* call = nullptr;
  vcore_verdict v = vcore_pre(file, static_cast<vcore_u32>(req), arg, &ctx, &call);
  NameFdFiles(call, static_cast<uint32_t>(pid));
  int rc = 0;
  if (v == VCORE_FORWARD || v == VCORE_FORWARD_REWRITTEN) {
    // The recording is the driver: its reply lands in the caller's memory.
    if (!out.empty() && out.size() == in.size()) {
      mem.Write(arg, out.data(), out.size());
    }
    for (const Nested& n : nested) {
      if (n.addr != 0 && !n.out.empty() && n.out.size() == n.in.size()) {
        mem.Write(n.addr, n.out.data(), n.out.size());
      }
    }
    rc = rc_rec < 0 ? -static_cast<int>(errno_rec ? errno_rec : VCORE_EINVAL) : 0;
  } else {
    denials_.push_back({seq, vcore_call_nr(call), vcore_call_cmd(call), vcore_call_reason(call)});
  }
  vcore_post(call, rc);
  vcore_stats st{};
  vcore_slot_get_stats(slot_, &st);
  if (st.charged_bytes > max_charged_) {
    max_charged_ = st.charged_bytes;
  }
  return true;
}

bool Replayer::FeedFile(const std::string& path, std::string* err) {
  gzFile gz = gzopen(path.c_str(), "rb");  // reads plain files too
  if (gz == nullptr) {
    *err = path + ": cannot open";
    return false;
  }
  std::string pending;
  char buf[1 << 16];
  uint64_t lineno = 0;
  bool ok = true;
  auto feed = [&](const std::string& line) {
    ++lineno;
    std::string e;
    if (!FeedLine(line, &e)) {
      *err = path + ":" + std::to_string(lineno) + ": " + e;
      ok = false;
    }
  };
  for (;;) {
    int n = gzread(gz, buf, sizeof buf);
    if (n < 0) {
      *err = path + ": read error";
      ok = false;
      break;
    }
    if (n == 0) {
      break;
    }
    pending.append(buf, static_cast<size_t>(n));
    size_t start = 0, nl;
    while (ok && (nl = pending.find('\n', start)) != std::string::npos) {
      feed(pending.substr(start, nl - start));
      start = nl + 1;
    }
    pending.erase(0, start);
    if (!ok) {
      break;
    }
  }
  if (ok && !pending.empty()) {
    feed(pending);
  }
  gzclose(gz);
  Finish();  // end of recording = exit of its processes
  return ok;
}

ReplayResult Replayer::Result() const {
  vcore_stats st{};
  vcore_slot_get_stats(slot_, &st);
  ReplayResult r;
  r.ioctls = st.ioctls;
  r.charged_peak_bytes = st.charged_peak_bytes;
  r.charged_end_bytes = st.charged_bytes;
  r.denied = st.denied;
  r.views_rewritten = st.views_rewritten;
  auto list = [](const vcore_unknown_list& l) {
    return std::vector<uint32_t>(l.number, l.number + l.n);
  };
  r.unknown_escapes = list(st.unknown_escapes);
  r.unknown_controls = list(st.unknown_controls);
  r.unknown_classes = list(st.unknown_classes);
  r.lines = lines_;
  r.events = events_;
  r.max_charged_after_call = max_charged_;
  r.denials = denials_;
  return r;
}

std::string ResultJson(const ReplayResult& r) {
  auto hex_list = [](const std::vector<uint32_t>& v) {
    json a = json::array();
    for (uint32_t x : v) {
      char b[16];
      snprintf(b, sizeof b, "0x%x", x);
      a.push_back(b);
    }
    return a;
  };
  // Key order as documented in uapi/vgpu_trace.h.
  std::string s = "{\"ioctls\":" + std::to_string(r.ioctls) +
                  ",\"charged_peak_bytes\":" + std::to_string(r.charged_peak_bytes) +
                  ",\"charged_end_bytes\":" + std::to_string(r.charged_end_bytes) +
                  ",\"denied\":" + std::to_string(r.denied) +
                  ",\"unknown\":{\"escapes\":" + hex_list(r.unknown_escapes).dump() +
                  ",\"controls\":" + hex_list(r.unknown_controls).dump() +
                  ",\"classes\":" + hex_list(r.unknown_classes).dump() +
                  "},\"views_rewritten\":" + std::to_string(r.views_rewritten) + "}";
  return s;
}

namespace {

void ReplayUsage() {
  fprintf(
      stderr,
      "usage: vgpu-trace replay [--quota BYTES] [--policy strict|permissive]\n"
      "                         [--driver-version V] [-v] FILE...\n"
      "  Runs the filter core over recordings (plain or .gz JSON lines) with the recording\n"
      "  as the driver, and prints one JSON summary line. BYTES may end in K, M or G (1024).\n");
}

bool ParseBytes(const char* s, uint64_t* out) {
  char* end = nullptr;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno != 0 || end == s || *s == '-') {
    return false;
  }
  uint64_t mult = 1;
  if (*end == 'K' || *end == 'k') {
    mult = 1ull << 10;
    ++end;
  } else if (*end == 'M' || *end == 'm') {
    mult = 1ull << 20;
    ++end;
  } else if (*end == 'G' || *end == 'g') {
    mult = 1ull << 30;
    ++end;
  }
  if (*end != '\0' || (v != 0 && mult > UINT64_MAX / v)) {
    return false;
  }
  *out = v * mult;
  return true;
}

}  // namespace

int RunReplay(int argc, char** argv) {
  ReplayOptions opts;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quota" && i + 1 < argc) {
      if (!ParseBytes(argv[++i], &opts.quota_bytes)) {
        fprintf(stderr, "vgpu-trace replay: --quota: '%s' is not a byte count\n", argv[i]);
        return 2;
      }
    } else if (a == "--policy" && i + 1 < argc) {
      std::string p = argv[++i];
      if (p == "strict") {
        opts.policy = VCORE_UNKNOWN_STRICT;
      } else if (p == "permissive") {
        opts.policy = VCORE_UNKNOWN_PERMISSIVE;
      } else {
        fprintf(stderr, "vgpu-trace replay: --policy: '%s' is not strict or permissive\n",
                p.c_str());
        return 2;
      }
    } else if (a == "--driver-version" && i + 1 < argc) {
      opts.driver_version = argv[++i];
    } else if (a == "-v" || a == "--verbose") {
      opts.verbose = true;
    } else if (a == "-h" || a == "--help") {
      ReplayUsage();
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      fprintf(stderr, "vgpu-trace replay: unknown option '%s'\n", a.c_str());
      ReplayUsage();
      return 2;
    } else {
      files.push_back(a);
    }
  }
  if (files.empty()) {
    ReplayUsage();
    return 2;
  }
  Replayer r(opts);
  std::string err;
  if (!r.Init(&err)) {
    fprintf(stderr, "vgpu-trace replay: %s\n", err.c_str());
    return 1;
  }
  for (const std::string& f : files) {
    if (!r.FeedFile(f, &err)) {
      fprintf(stderr, "vgpu-trace replay: %s\n", err.c_str());
      return 1;
    }
  }
  ReplayResult res = r.Result();
  if (opts.verbose) {
    for (const Denial& d : res.denials) {
      fprintf(stderr, "denied seq %" PRIu64 " nr 0x%x cmd 0x%x: %s\n", d.seq, d.nr, d.cmd,
              d.reason.c_str());
    }
  }
  printf("%s\n", ResultJson(res).c_str());
  return 0;
}

}  // namespace vgpu::trace
