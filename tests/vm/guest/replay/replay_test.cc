// The corpus acceptance, in the guest: every corpus trace replayed through a slot's /dev/vgpu*
// nodes (vgpu.ko in front of nvsim.ko) gives, call by call, the same denials and charges as the
// offline replay of the same trace, and nvsim's own free memory agrees with the slot's charge
// after every memory-changing call; then again with quotas below each trace's peak so that the
// quota refuses allocations. README.md in this folder: the rules of the comparison.
//
// Environment: REPLAY_TRACES (space-separated file names; default: every *.jsonl.gz in the
// working directory), REPLAY_QUOTA_RUNS (1: only peak/2; default 2: peak/2 and peak - 2 MiB),
// OUT (a summary line per run is appended to $OUT/replay-summary.txt).
#include <dirent.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>

#include "guest_replayer.h"

namespace replay_guest {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

std::vector<std::string> TraceList() {
  std::vector<std::string> out;
  if (const char* env = getenv("REPLAY_TRACES"); env && *env) {
    std::istringstream in(env);
    for (std::string s; in >> s;) out.push_back(s);
    return out;
  }
  if (DIR* d = opendir(".")) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > 9 && n.compare(n.size() - 9, 9, ".jsonl.gz") == 0) out.push_back(n);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// One line per run on stdout (and in $OUT/replay-summary.txt); every allowed divergence, by
// kind, in $OUT/replay-divergences.txt.
void Summary(const std::string& trace, uint64_t quota, const Expected& e, const Outcome& o) {
  uint64_t controls = 0, uvm = 0, refused = 0;
  for (const auto& [k, n] : o.divergences)
    (k.refused_object ? refused : k.uvm ? uvm : controls) += n;
  char line[1024];
  snprintf(line, sizeof line,
           "replay %s quota=%" PRIu64 ": lines=%" PRIu64 " calls=%" PRIu64 " issued=%" PRIu64
           " (uvm-built %" PRIu64 ") ptrs=%" PRIu64 " fds=%" PRIu64 " (received %" PRIu64
           ") handles=%" PRIu64 " clients-remapped=%" PRIu64 " (fields %" PRIu64
           ")"
           " dev-files-added=%" PRIu64 " | offline ioctls=%" PRIu64 " denied=%" PRIu64
           " peak=%" PRIu64 " end=%" PRIu64 " | vgpu.ko ioctls=%" PRIu64 " denied=%" PRIu64
           " peak=%" PRIu64 " end=%" PRIu64 " ledger-peak=%" PRIu64
           " | nvsim free==heap-charge"
           " checks=%" PRIu64 " heap=%" PRIu64 " reserved=%" PRIu64
           " | nvsim differs (allowed): controls=%" PRIu64 " uvm=%" PRIu64
           " refused-object=%" PRIu64 " | mismatches=%zu replay=%.2fs\n",
           trace.c_str(), quota, o.lines, o.calls, o.issued, o.uvm_synthesized, o.ptrs_rebuilt,
           o.fds_translated, o.fds_received, o.handles_pinned, o.clients_remapped,
           o.handle_fields_remapped, o.dev_files_added, e.ioctls, e.denied, e.peak, e.end, o.ioctls,
           o.denied, o.peak, o.end, o.ledger_peak, o.nvsim_checks, o.heap, o.reserved, controls,
           uvm, refused, o.mismatches.size(), o.seconds);
  fputs(line, stdout);
  const char* dir = getenv("OUT");
  if (!dir) return;
  if (FILE* f = fopen((std::string(dir) + "/replay-summary.txt").c_str(), "a")) {
    fputs(line, f);
    fclose(f);
  }
  if (FILE* f = fopen((std::string(dir) + "/replay-divergences.txt").c_str(), "a")) {
    fprintf(f, "%s quota=%" PRIu64 ":\n", trace.c_str(), quota);
    for (const auto& [k, n] : o.divergences)
      fprintf(f, "  x%" PRIu64 " %s\n", n, DescribeDivergence(k).c_str());
    fclose(f);
  }
}

// Parsed traces, loaded once per program (the KASAN kernel makes every parse count).
const std::vector<Line>& Trace(const std::string& name, std::string* err) {
  static std::map<std::string, std::vector<Line>> cache;
  auto it = cache.find(name);
  if (it == cache.end()) {
    std::vector<Line> lines;
    if (!LoadTrace(name, &lines, err)) lines.clear();
    it = cache.emplace(name, std::move(lines)).first;
  }
  return it->second;
}

// The offline replay of one trace under one quota, run once per program.
const Expected& Offline(const std::string& name, uint64_t quota, std::string* err) {
  static std::map<std::pair<std::string, uint64_t>, Expected> cache;
  auto key = std::make_pair(name, quota);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, RunOffline(Trace(name, err), quota, err)).first;
  return it->second;
}

// One run: offline expectation, the guest replay, and every agreement the acceptance asks for.
void ReplayAndCompare(const std::string& trace, uint64_t quota, Expected* exp_out = nullptr) {
  std::string err;
  const std::vector<Line>& lines = Trace(trace, &err);
  ASSERT_EQ(err, "");
  ASSERT_FALSE(lines.empty()) << trace;
  const Expected& e = Offline(trace, quota, &err);
  ASSERT_EQ(err, "");
  ASSERT_EQ(e.denied_here.size(), lines.size());
  RunConfig cfg;
  cfg.quota = quota;
  cfg.name = "replay";
  Outcome o = RunGuest(lines, e, cfg);
  Summary(trace, quota, e, o);
  for (const Mismatch& m : o.mismatches)
    ADD_FAILURE() << trace << " seq " << m.seq << ": " << m.what;
  EXPECT_GT(o.issued, 0u) << "nothing was replayed";
  EXPECT_EQ(o.issued, o.calls) << "every recorded ioctl is issued";
  EXPECT_EQ(o.ioctls, e.ioctls) << "the core saw every call online as offline";
  EXPECT_EQ(o.denied, e.denied);
  EXPECT_EQ(o.peak, e.peak) << "highest charge after a call, online and offline";
  // vgpu.ko's exported peak (stats/mem_peak) is the settled one: a reservation the driver then
  // refuses (the corpus's 200 GiB request) must not raise it.
  EXPECT_EQ(o.ledger_peak, e.peak) << "stats/mem_peak counts only what was held";
  EXPECT_EQ(o.end, e.end);
  EXPECT_EQ(o.end, 0u) << "every file closes at the end of a recording";
  EXPECT_EQ(o.views, e.views) << "the same replies were rewritten to the slot's view";
  EXPECT_GT(o.nvsim_checks, 0u);
  if (quota) {
    EXPECT_LE(o.peak, quota);
  }
  if (exp_out) *exp_out = e;
}

// Recordings the guest cannot replay yet, and why (README: "Not replayed in the guest"). The
// offline strict replay of each still runs in make test (tests/unit/core/replay_test.cc).
const char* NotReplayableHere(const std::string& trace) {
  static const std::map<std::string, const char*> kWhy = {
      {"cuda-ipc-fd.jsonl.gz",
       "shows issue 17 F3: after the exporter frees its memory (seq 1096) the slot is charged "
       "8 MiB less than nvsim holds, the export fd the importer received keeps it (and under a "
       "quota an export of a refused object fails the chain of controls after it)"},
      {"nvidia-smi-q.jsonl.gz",
       "recorded while other processes used the GPU: offline the core hid them from GET_PIDS, "
       "nvsim has none"},
      {"nvidia-smi-apps.jsonl.gz",
       "recorded while other processes used the GPU: offline the core hid them from GET_PIDS, "
       "nvsim has none"},
  };
  auto it = kWhy.find(trace);
  return it == kWhy.end() ? nullptr : it->second;
}

class Replay : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (const char* why = NotReplayableHere(GetParam())) GTEST_SKIP() << GetParam() << ": " << why;
  }
};

TEST(ReplayCorpus, TracesAreThere) {
  EXPECT_FALSE(TraceList().empty()) << "no *.jsonl.gz next to the program";
}

TEST_P(Replay, Unlimited) { ReplayAndCompare(GetParam(), 0); }

TEST_P(Replay, QuotaBelowPeakDenies) {
  std::string err;
  const Expected& free_run = Offline(GetParam(), 0, &err);
  ASSERT_EQ(err, "");
  if (free_run.peak == 0) GTEST_SKIP() << GetParam() << " allocates no video memory";
  const char* runs_env = getenv("REPLAY_QUOTA_RUNS");
  int runs = runs_env ? atoi(runs_env) : 2;
  std::vector<uint64_t> quotas = {free_run.peak / 2 / kMiB * kMiB, free_run.peak - 2 * kMiB};
  quotas.resize(std::min<size_t>(quotas.size(), std::max(runs, 1)));
  for (uint64_t q : quotas) {
    SCOPED_TRACE("quota " + std::to_string(q));
    Expected e;
    ReplayAndCompare(GetParam(), q, &e);
    EXPECT_GT(e.denied, 0u) << "a quota below the peak refuses something";
  }
}

// The comparison has teeth: the same recording replayed through an unlimited slot against the
// offline replay under a quota must be reported (refusals and charges differ).
TEST(ReplaySelfCheck, ADifferentQuotaOnlineIsCaught) {
  std::string err, pick;
  for (const std::string& t : TraceList()) {
    if (NotReplayableHere(t)) continue;
    const Expected& e = Offline(t, 0, &err);
    ASSERT_EQ(err, "");
    if (e.peak > 0 && (pick.empty() || Trace(t, &err).size() < Trace(pick, &err).size())) pick = t;
  }
  if (pick.empty()) GTEST_SKIP() << "no trace allocates video memory";
  const Expected& unlimited = Offline(pick, 0, &err);
  const Expected& quota = Offline(pick, unlimited.peak / 2 / kMiB * kMiB, &err);
  ASSERT_GT(quota.denied, 0u);
  RunConfig cfg;
  cfg.name = "replay-selfcheck";  // no quota: vgpu.ko refuses nothing
  Outcome o = RunGuest(Trace(pick, &err), quota, cfg);
  bool verdict = false, charge = false;
  for (const Mismatch& m : o.mismatches) {
    verdict |= m.what.find("core verdict differs") != std::string::npos;
    charge |= m.what.find("charge") == 0;
  }
  EXPECT_TRUE(verdict) << pick << ": a refusal missing online went unnoticed";
  EXPECT_TRUE(charge) << pick << ": a charge difference went unnoticed";
  EXPECT_EQ(o.end, 0u);
}

INSTANTIATE_TEST_SUITE_P(Corpus, Replay, ::testing::ValuesIn(TraceList()),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           std::string n = p.param.substr(0, p.param.find('.'));
                           for (char& c : n)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Replay);

}  // namespace
}  // namespace replay_guest
