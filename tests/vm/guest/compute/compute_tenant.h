// One tenant of the compute suite: a child process that opens a slot's nodes, builds an RM
// session on the slot's GPU (client, device, subdevice) and one GR TSG with two channels, turns
// its scheduling on and then waits for commands. nvsim models a scheduled TSG with an enabled
// channel as always having work (a saturating tenant), so the GPU time it gets is exactly what
// the controller lets it have.
//
// With setup_pause_ms > 0 the child sleeps that long between creating its channels and
// GPFIFO_SCHEDULE(1), and then issues SET_TIMESLICE(2048) as libcuda does (nvidia-rm-abi.md
// §6.1: TSG, channels, UVM registration, schedule, timeslice): a controller that ticks during
// the pause sees a TSG and channels that are not on the runlist yet.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "tests/vm/guest/nvsim/nvsim_rm.h"

namespace compute_test {

using namespace nvsim_test;  // NOLINT: RawIoctl, Alloc, Control

class Tenant {
 public:
  // Forks the child; returns nullptr (and *why) if it could not build its TSG.
  static std::unique_ptr<Tenant> Start(uint32_t slot_id, uint32_t gpu, std::string* why,
                                       int setup_pause_ms = 0) {
    int cmd[2], rep[2];
    if (pipe(cmd) || pipe(rep)) {
      *why = "pipe: " + std::string(strerror(errno));
      return nullptr;
    }
    pid_t pid = fork();
    if (pid < 0) {
      *why = "fork: " + std::string(strerror(errno));
      return nullptr;
    }
    if (pid == 0) {
      close(cmd[1]);
      close(rep[0]);
      _exit(Child(slot_id, gpu, cmd[0], rep[1], setup_pause_ms));
    }
    close(cmd[0]);
    close(rep[1]);
    std::unique_ptr<Tenant> t(new Tenant(pid, cmd[1]));
    char buf[256] = {};
    ssize_t n = read(rep[0], buf, sizeof(buf) - 1);
    close(rep[0]);
    if (n <= 0 || sscanf(buf, "ok %u %u", &t->client_, &t->tsg_) != 2) {
      *why = n > 0 ? std::string(buf, n) : "tenant died before reporting";
      t->Kill();
      return nullptr;
    }
    return t;
  }

  ~Tenant() {
    if (pid_ > 0) Kill();
    if (cmd_ >= 0) close(cmd_);
  }

  // 'p': stop submitting work (GPFIFO_SCHEDULE off), 'r': resume, 'q': close everything, exit.
  bool Send(char c) { return write(cmd_, &c, 1) == 1; }
  // Waits for the child; returns its exit status (or -signal).
  int Wait() {
    int st = 0;
    if (pid_ <= 0 || waitpid(pid_, &st, 0) != pid_) return -1000;
    pid_ = -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
  }
  int Kill() {
    if (pid_ > 0) kill(pid_, SIGKILL);
    return Wait();
  }
  pid_t pid() const { return pid_; }
  uint32_t client() const { return client_; }
  uint32_t tsg() const { return tsg_; }

 private:
  Tenant(pid_t pid, int cmd) : pid_(pid), cmd_(cmd) {}

  static int Report(int fd, const std::string& s) {
    (void)!write(fd, s.data(), s.size());
    return 1;
  }

  static int Child(uint32_t slot_id, uint32_t gpu, int cmd, int rep, int setup_pause_ms) {
    const std::string ctl_path = "/dev/vgpuctl" + std::to_string(slot_id);
    const std::string dev_path = "/dev/vgpu" + std::to_string(slot_id);
    int ctl = open(ctl_path.c_str(), O_RDWR | O_CLOEXEC);
    int dev = open(dev_path.c_str(), O_RDWR | O_CLOEXEC);
    if (ctl < 0 || dev < 0) return Report(rep, "open " + ctl_path + ": " + strerror(errno));
    nv_ioctl_register_fd r{ctl};
    if (RawIoctl(dev, NV_ESC_REGISTER_FD, &r, sizeof(r)).ret) return Report(rep, "REGISTER_FD");
    uint32_t client = 0, device = 0xd0000001, sub = 0xd0000002, tsg = 0xd0000010;
    if (AllocClient(ctl, &client) != NV_OK) return Report(rep, "client");
    nv0080_alloc_params dp{};
    dp.deviceId = gpu;
    if (int64_t st = Alloc(ctl, client, client, &device, NV01_DEVICE_0, &dp); st != NV_OK)
      return Report(rep, "device: " + std::to_string(st));
    uint32_t sub_id = 0;
    if (Alloc(ctl, client, device, &sub, NV20_SUBDEVICE_0, &sub_id) != NV_OK)
      return Report(rep, "subdevice");
    nv_channel_group_alloc_params tp{};
    tp.engineType = 1;  // GR0
    if (int64_t st = Alloc(ctl, client, device, &tsg, KEPLER_CHANNEL_GROUP_A, &tp); st != NV_OK)
      return Report(rep, "TSG: " + std::to_string(st));
    for (uint32_t i = 0; i < 2; ++i) {
      uint8_t chp[368] = {};  // NV_CHANNEL_ALLOC_PARAMS, contents unused by nvsim
      uint32_t ch = 0xd0000020 + i;
      if (int64_t st = Alloc(ctl, client, tsg, &ch, 0xc86f, chp); st != NV_OK)
        return Report(rep, "channel: " + std::to_string(st));
    }
    if (setup_pause_ms > 0) usleep(setup_pause_ms * 1000);
    if (!Schedule(ctl, client, tsg, true)) return Report(rep, "GPFIFO_SCHEDULE");
    if (setup_pause_ms > 0) {
      nva06c_timeslice_params ts{2048};
      if (Control(ctl, client, tsg, NVA06C_CTRL_CMD_SET_TIMESLICE, &ts, sizeof(ts)) != NV_OK)
        return Report(rep, "SET_TIMESLICE");
    }
    Report(rep, "ok " + std::to_string(client) + " " + std::to_string(tsg));
    close(rep);
    for (char c; read(cmd, &c, 1) == 1;) {
      if (c == 'q') break;
      if ((c == 'p' || c == 'r') && !Schedule(ctl, client, tsg, c == 'r')) return 3;
    }
    close(dev);
    close(ctl);
    return 0;
  }

  static bool Schedule(int ctl, uint32_t client, uint32_t tsg, bool on) {
    nva06c_gpfifo_schedule_params sp{on, 0, 0};
    return Control(ctl, client, tsg, NVA06C_CTRL_CMD_GPFIFO_SCHEDULE, &sp, 3) == NV_OK;
  }

  pid_t pid_;
  int cmd_;
  uint32_t client_ = 0, tsg_ = 0;
};

}  // namespace compute_test
