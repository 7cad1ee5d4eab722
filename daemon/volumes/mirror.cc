#include "vgpu/volumes/mirror.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/file.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <set>
#include <variant>

#include "vgpu/volumes/elf_info.h"

namespace vgpu::volumes {
namespace {

// Owns one file descriptor.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

struct SourceFile {
  std::string host_path;  // for messages and for copying
};
struct Link {
  std::string target;  // relative, inside the same directory
};
using Entry = std::variant<SourceFile, Link>;
// dir ("bin", "lib", "lib64") -> entry name -> what it should be
using Desired = std::map<std::string, std::map<std::string, Entry>>;

std::string JoinPath(const std::string& a, const std::string& b) {
  if (a.empty() || a == "/") return (b.empty() || b[0] != '/') ? "/" + b : b;
  if (!b.empty() && b[0] == '/') return a + b;
  return a + "/" + b;
}

std::string Basename(const std::string& p) {
  size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

// Opens `path` (absolute, as the host sees it) inside `root`, resolving every symlink as if
// `root` were "/" (RESOLVE_IN_ROOT): the host's /usr/lib/libcuda.so.1 -> /usr/lib/libcuda.so.580
// must land in <root>/usr/lib, not in the manager's own /usr/lib. Returns the fd and the real
// path (inside the manager's filesystem) of what it opened.
Result<std::pair<Fd, std::string>> OpenInRoot(const std::string& root, const std::string& path) {
  Fd root_fd(open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (root_fd.get() < 0) return ErrnoError("driver root " + root, errno);
  open_how how{};
  how.flags = O_RDONLY | O_CLOEXEC;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  int fd = static_cast<int>(syscall(SYS_openat2, root_fd.get(), path.c_str(), &how, sizeof(how)));
  if (fd < 0 && (errno == ENOSYS || errno == EPERM)) {
    // Kernels before 5.6 (or seccomp without openat2): fall back to plain lookup, which is
    // right whenever the driver's symlinks are relative (as the .run installer makes them).
    fd = open(JoinPath(root, path).c_str(), O_RDONLY | O_CLOEXEC);
  }
  if (fd < 0) return ErrnoError("open " + JoinPath(root, path), errno);
  Fd owned(fd);
  char buf[4096];
  std::string proc = "/proc/self/fd/" + std::to_string(fd);
  ssize_t n = readlink(proc.c_str(), buf, sizeof(buf) - 1);
  if (n < 0) return ErrnoError("readlink " + proc, errno);
  return std::make_pair(std::move(owned), std::string(buf, static_cast<size_t>(n)));
}

Status AddLibraries(const VolumeSpec& spec, const std::vector<LdCacheEntry>& cache,
                    const MirrorOptions& options, Desired* desired, MirrorReport* report,
                    std::map<std::string, std::string>* libcuda_by_soname) {
  for (const std::string& item : spec.libraries) {
    bool found = false;
    for (const LdCacheEntry& entry : cache) {
      if (!LibraryItemMatches(item, entry.name)) continue;
      found = true;
      if (Blacklisted(spec, entry.name)) {
        report->blacklisted.push_back(entry.name);
        continue;
      }
      auto opened = OpenInRoot(options.driver_root, entry.path);
      if (!opened.ok()) {
        // A stale cache entry (library removed since ldconfig ran) is skipped, not fatal.
        report->missing.push_back(entry.name + " (" + opened.status().message() + ")");
        continue;
      }
      const auto& [fd, real_path] = *opened;
      const std::string real_name = Basename(real_path);
      if (Blacklisted(spec, real_name)) {
        report->blacklisted.push_back(real_name);
        continue;
      }
      Result<ElfInfo> elf = ReadElfInfoFd(fd.get(), real_path);
      if (!elf.ok()) return elf.status().Annotate("library " + entry.name);
      auto& dir = (*desired)[elf->bits == 32 ? "lib" : "lib64"];
      dir[real_name] = SourceFile{real_path};
      for (const std::string& alias : {elf->soname.value_or(real_name), entry.name}) {
        if (alias != real_name && alias.find('/') == std::string::npos) {
          dir[alias] = Link{real_name};
        }
      }
      if (elf->bits == 64 && elf->soname && LibraryItemMatches("libcuda.so", *elf->soname)) {
        (*libcuda_by_soname)[*elf->soname] = real_name;
      }
    }
    if (!found) report->missing.push_back(item);
  }
  return OkStatus();
}

Status AddBinaries(const VolumeSpec& spec, const MirrorOptions& options, Desired* desired,
                   MirrorReport* report) {
  for (const std::string& name : spec.binaries) {
    if (Blacklisted(spec, name)) {
      report->blacklisted.push_back(name);
      continue;
    }
    bool found = false;
    for (const std::string& dir : options.search_path) {
      auto opened = OpenInRoot(options.driver_root, JoinPath(dir, name));
      if (!opened.ok()) continue;
      struct stat st;
      if (fstat(opened->first.get(), &st) != 0 || !S_ISREG(st.st_mode) || !(st.st_mode & 0111)) {
        continue;
      }
      (*desired)["bin"][name] = SourceFile{opened->second};
      found = true;
      break;
    }
    if (!found) report->missing.push_back(name);
  }
  return OkStatus();
}

// Shim mode: every libcuda.so* name resolves to the shim; the real libcuda.so.1 is kept as
// libcuda.so.orig for the shim to forward to.
Status ApplyShim(const MirrorOptions& options,
                 const std::map<std::string, std::string>& libcuda_by_soname, Desired* desired) {
  auto real = libcuda_by_soname.find("libcuda.so.1");
  if (real == libcuda_by_soname.end()) {
    return FailedPreconditionError(
        "shim mode: no 64-bit library with soname libcuda.so.1 in the volume (is libcuda.so "
        "listed and the driver installed?)");
  }
  auto& lib64 = (*desired)["lib64"];
  Entry original = lib64.at(real->second);
  for (auto& [name, entry] : lib64) {
    if (LibraryItemMatches("libcuda.so", name)) entry = Link{kShimFileName};
  }
  lib64[kShimOriginalName] = original;
  lib64[kShimFileName] = SourceFile{options.shim_library};
  return OkStatus();
}

Status CopyFile(const std::string& from, int dir_fd, const std::string& tmp_name,
                const struct stat& src_st) {
  Fd in(open(from.c_str(), O_RDONLY | O_CLOEXEC));
  if (in.get() < 0) return ErrnoError("open " + from, errno);
  unlinkat(dir_fd, tmp_name.c_str(), 0);
  Fd out(openat(dir_fd, tmp_name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (out.get() < 0) return ErrnoError("create " + tmp_name, errno);
  off_t left = src_st.st_size;
  while (left > 0) {
    ssize_t n = sendfile(out.get(), in.get(), nullptr, static_cast<size_t>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return ErrnoError("copy " + from, n < 0 ? errno : EIO);
    left -= n;
  }
  // Same mode and mtime as the source: the mtime is how the next run knows it is unchanged.
  timespec times[2] = {src_st.st_atim, src_st.st_mtim};
  if (fchmod(out.get(), src_st.st_mode & 0755) != 0 || futimens(out.get(), times) != 0 ||
      fsync(out.get()) != 0) {
    return ErrnoError("finish " + tmp_name, errno);
  }
  return OkStatus();
}

Status ApplyDir(const std::string& dir_path, const std::map<std::string, Entry>& entries,
                MirrorReport* report) {
  if (mkdir(dir_path.c_str(), 0755) != 0 && errno != EEXIST) {
    return ErrnoError("mkdir " + dir_path, errno);
  }
  Fd dir(open(dir_path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() < 0) return ErrnoError("open " + dir_path, errno);
  // Pass 0: files; pass 1: links (so a link never points at a file not yet there).
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& [name, entry] : entries) {
      const std::string tmp = ".vgpu-tmp." + name;
      struct stat cur;
      const bool exists = fstatat(dir.get(), name.c_str(), &cur, AT_SYMLINK_NOFOLLOW) == 0;
      if (exists && S_ISDIR(cur.st_mode)) {
        return FailedPreconditionError(dir_path + "/" + name + " is a directory; not ours");
      }
      if (pass == 0 && std::holds_alternative<SourceFile>(entry)) {
        const std::string& from = std::get<SourceFile>(entry).host_path;
        struct stat src;
        if (stat(from.c_str(), &src) != 0) return ErrnoError("stat " + from, errno);
        if (exists && S_ISREG(cur.st_mode) && cur.st_size == src.st_size &&
            cur.st_mtim.tv_sec == src.st_mtim.tv_sec &&
            cur.st_mtim.tv_nsec == src.st_mtim.tv_nsec) {
          ++report->files_unchanged;
          continue;
        }
        VGPU_RETURN_IF_ERROR(CopyFile(from, dir.get(), tmp, src));
        ++report->files_written;
      } else if (pass == 1 && std::holds_alternative<Link>(entry)) {
        const std::string& target = std::get<Link>(entry).target;
        if (exists && S_ISLNK(cur.st_mode)) {
          char buf[4096];
          ssize_t n = readlinkat(dir.get(), name.c_str(), buf, sizeof(buf));
          if (n >= 0 && std::string(buf, static_cast<size_t>(n)) == target) {
            ++report->links_unchanged;
            continue;
          }
        }
        unlinkat(dir.get(), tmp.c_str(), 0);
        if (symlinkat(target.c_str(), dir.get(), tmp.c_str()) != 0) {
          return ErrnoError("symlink " + dir_path + "/" + tmp, errno);
        }
        ++report->links_written;
      } else {
        continue;
      }
      if (renameat(dir.get(), tmp.c_str(), dir.get(), name.c_str()) != 0) {
        return ErrnoError("rename into " + dir_path + "/" + name, errno);
      }
    }
  }
  // Last: remove what is no longer wanted (and temporaries an interrupted run left).
  std::vector<std::string> stale;
  DIR* d = fdopendir(dup(dir.get()));
  if (d == nullptr) return ErrnoError("list " + dir_path, errno);
  while (dirent* de = readdir(d)) {
    std::string name = de->d_name;
    if (name == "." || name == ".." || entries.count(name)) continue;
    stale.push_back(name);
  }
  closedir(d);
  for (const std::string& name : stale) {
    if (unlinkat(dir.get(), name.c_str(), 0) != 0) {
      return ErrnoError("remove stale " + dir_path + "/" + name, errno);
    }
    ++report->removed;
  }
  return OkStatus();
}

}  // namespace

Result<MirrorReport> MirrorVolume(const VolumeSpec& spec, const std::vector<LdCacheEntry>& cache,
                                  const MirrorOptions& options) {
  MirrorReport report;
  Desired desired;
  desired["bin"];
  desired["lib"];
  desired["lib64"];
  std::map<std::string, std::string> libcuda_by_soname;
  VGPU_RETURN_IF_ERROR(AddLibraries(spec, cache, options, &desired, &report, &libcuda_by_soname));
  VGPU_RETURN_IF_ERROR(AddBinaries(spec, options, &desired, &report));
  if (options.shim_mode && spec.cuda_shim) {
    if (options.shim_library.empty()) {
      return InvalidArgumentError("shim mode needs the shim library path (--shim-library)");
    }
    if (access(options.shim_library.c_str(), R_OK) != 0) {
      return ErrnoError("--shim-library " + options.shim_library, errno);
    }
    VGPU_RETURN_IF_ERROR(ApplyShim(options, libcuda_by_soname, &desired));
  }

  if (mkdir(spec.base.c_str(), 0755) != 0 && errno != EEXIST) {
    return ErrnoError("mkdir " + spec.base, errno);
  }
  const std::string volume_dir = JoinPath(spec.base, spec.name);
  if (mkdir(volume_dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return ErrnoError("mkdir " + volume_dir, errno);
  }
  const std::string lock_path = JoinPath(spec.base, "." + spec.name + ".lock");
  Fd lock(open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (lock.get() < 0 || flock(lock.get(), LOCK_EX) != 0)
    return ErrnoError("lock " + lock_path, errno);
  for (const auto& [dir, entries] : desired) {
    Status s = ApplyDir(JoinPath(volume_dir, dir), entries, &report);
    if (!s.ok()) return s.Annotate("volume " + spec.name);
  }
  return report;  // the lock is released when `lock` closes
}

Result<std::vector<MirrorReport>> MirrorVolumes(const VolumeConfig& config,
                                                const MirrorOptions& options) {
  const std::string cache_file = options.ld_cache_file.empty()
                                     ? JoinPath(options.driver_root, "/etc/ld.so.cache")
                                     : options.ld_cache_file;
  Result<std::vector<LdCacheEntry>> cache = ReadLdCache(options.ldconfig, cache_file);
  if (!cache.ok()) return cache.status();
  std::vector<MirrorReport> reports;
  for (const VolumeSpec& spec : config.volumes) {
    Result<MirrorReport> r = MirrorVolume(spec, *cache, options);
    if (!r.ok()) return r.status();
    reports.push_back(std::move(r).value());
  }
  return reports;
}

}  // namespace vgpu::volumes
