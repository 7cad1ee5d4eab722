#include "record.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace vgpu::shim::trace {
namespace {

constexpr char kPreloadName[] = "libvgpu-trace-record.so";

void Usage() {
  fprintf(stderr,
          "usage: vgpu-trace record [-o FILE] -- CMD ARGS...\n"
          "  Records every ioctl that CMD and its children issue on /dev/nvidia* as JSON lines.\n"
          "  -o FILE  output (default vgpu-trace.jsonl); the recorder library is found beside\n"
          "           this program or at $VGPU_TRACE_PRELOAD\n");
}

// The recorder library: $VGPU_TRACE_PRELOAD, else beside /proc/self/exe, else ../lib.
std::string FindPreload() {
  if (const char* env = getenv("VGPU_TRACE_PRELOAD"); env != nullptr && *env != '\0') {
    return env;
  }
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) {
    return "";
  }
  exe[n] = '\0';
  std::string dir(exe);
  dir.resize(dir.rfind('/'));
  for (const std::string& cand : {dir + "/" + kPreloadName, dir + "/../lib/" + kPreloadName,
                                  dir + "/../shim/trace/" + kPreloadName}) {
    if (access(cand.c_str(), R_OK) == 0) {
      return cand;
    }
  }
  return "";
}

std::string Absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') {
    return path;
  }
  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof cwd) == nullptr) {
    return path;
  }
  return std::string(cwd) + "/" + path;
}

}  // namespace

int RunRecord(int argc, char** argv) {
  int i = 0;
  if (i < argc && strcmp(argv[i], "record") == 0) {
    ++i;
  } else if (i < argc && argv[i][0] != '-') {
    ++i;  // program name
  }
  std::string out = "vgpu-trace.jsonl";
  for (; i < argc; ++i) {
    if (strcmp(argv[i], "--") == 0) {
      ++i;
      break;
    }
    if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
      out = argv[++i];
    } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      Usage();
      return 0;
    } else {
      fprintf(stderr, "vgpu-trace record: unexpected argument '%s'\n", argv[i]);
      Usage();
      return 2;
    }
  }
  if (i >= argc) {
    fprintf(stderr, "vgpu-trace record: no command given after --\n");
    Usage();
    return 2;
  }
  std::string preload = FindPreload();
  if (preload.empty()) {
    fprintf(stderr, "vgpu-trace record: %s not found (set VGPU_TRACE_PRELOAD)\n", kPreloadName);
    return 2;
  }
  preload = Absolute(preload);
  out = Absolute(out);
  int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    fprintf(stderr, "vgpu-trace record: cannot create %s: %s\n", out.c_str(), strerror(errno));
    return 2;
  }
  close(fd);
  // Shared sequence counter: one zeroed 8-byte file every traced process maps.
  char seq_path[] = "/tmp/vgpu-trace-seq.XXXXXX";
  int seq_fd = mkstemp(seq_path);
  if (seq_fd < 0 || ftruncate(seq_fd, 8) != 0) {
    fprintf(stderr, "vgpu-trace record: cannot create sequence file: %s\n", strerror(errno));
    return 2;
  }
  close(seq_fd);

  std::string ld_preload = preload;
  if (const char* old = getenv("LD_PRELOAD"); old != nullptr && *old != '\0') {
    ld_preload += ":";
    ld_preload += old;
  }
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "vgpu-trace record: fork: %s\n", strerror(errno));
    unlink(seq_path);
    return 2;
  }
  if (pid == 0) {
    setenv("LD_PRELOAD", ld_preload.c_str(), 1);
    setenv("VGPU_TRACE_OUT", out.c_str(), 1);
    setenv("VGPU_TRACE_SEQ", seq_path, 1);
    execvp(argv[i], argv + i);
    fprintf(stderr, "vgpu-trace record: cannot run %s: %s\n", argv[i], strerror(errno));
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  unlink(seq_path);
  if (WIFSIGNALED(status)) {
    return 128 + WTERMSIG(status);
  }
  return WEXITSTATUS(status);
}

}  // namespace vgpu::shim::trace

int RunRecord(int argc, char** argv) { return vgpu::shim::trace::RunRecord(argc, argv); }
