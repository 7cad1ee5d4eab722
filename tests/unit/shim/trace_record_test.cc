// vgpu-trace record end to end: records fake_client's raw RM traffic against fake nodes
// ($VGPU_DEV_DIR) and checks the JSON lines (the format of uapi/vgpu_trace.h).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fake_device_dir.h"

namespace {

class TraceRecordTest : public vgpu::test::FakeDeviceDirTest {
 protected:
  TraceRecordTest() : FakeDeviceDirTest("vshim-trace") {}
  std::vector<nlohmann::json> Lines(const std::string& path) {
    std::vector<nlohmann::json> out;
    std::ifstream f(path);
    std::string line;
    while (std::getline(f, line)) {
      out.push_back(nlohmann::json::parse(line));  // throws (test fails) on a malformed line
    }
    return out;
  }
};

TEST_F(TraceRecordTest, RecordsIoctlsWithNestedBuffersAndFileEvents) {
  std::string trace = dir_ + "/t.jsonl";
  // The fake driver answers the calls; the recorder sits in front of it.
  // The CLI may be sanitizer-instrumented, so the fake driver is preloaded only into the
  // client (after the recorder), through env inside the recorded command.
  std::string cmd = "env VGPU_DEV_DIR=" + dir_ +
                    " VGPU_TRACE_PRELOAD=" VSHIM_RECORDER " " VSHIM_RECORD_CLI " -o " + trace +
                    " -- env LD_PRELOAD=" VSHIM_RECORDER ":" VSHIM_FAKENV " " VSHIM_CLIENT
                    " quota 3 > " +
                    dir_ + "/out 2>&1";
  ASSERT_EQ(system(cmd.c_str()), 0);
  auto lines = Lines(trace);
  ASSERT_FALSE(lines.empty());
  int opens = 0, closes = 0, allocs_0x40 = 0;
  uint64_t last_seq = 0;
  bool first = true;
  for (const auto& l : lines) {
    uint64_t seq = l.at("seq").get<uint64_t>();
    if (!first) {
      EXPECT_GT(seq, last_seq);  // one process: completion order
    }
    first = false;
    last_seq = seq;
    if (l.contains("ev")) {
      EXPECT_EQ(l.at("dev"), dir_ + "/nvidiactl");
      (l.at("ev") == "open" ? opens : closes)++;
      continue;
    }
    ASSERT_EQ(l.at("dev"), dir_ + "/nvidiactl");
    std::string req = l.at("req");
    std::string in = l.at("in"), out = l.at("out");
    EXPECT_EQ(l.at("rc"), 0);
    if (req == "0xc030462b") {
      ASSERT_EQ(in.size(), 96u);  // 48 bytes
      std::string cls = in.substr(24, 8);
      if (cls == "40000000") {
        ++allocs_0x40;
        ASSERT_EQ(l.at("ptrs").size(), 1u);
        const auto& p = l.at("ptrs")[0];
        EXPECT_EQ(p.at("off"), 16);
        std::string pin = p.at("in");
        ASSERT_EQ(pin.size(), 256u);  // NV_MEMORY_ALLOCATION_PARAMS, 128 bytes
        EXPECT_EQ(pin.substr(128, 16), "0000200000000000");  // size@64 = 2 MiB
      }
    }
    if (req == "0xc020462a") {  // FB_GET_INFO_V2: 1028-byte params, replies written
      const auto& p = l.at("ptrs")[0];
      EXPECT_EQ(std::string(p.at("in")).size(), 2056u);
      EXPECT_NE(p.at("in"), p.at("out"));
    }
  }
  EXPECT_EQ(allocs_0x40, 3);
  EXPECT_EQ(opens, 1);
  EXPECT_EQ(closes, 0);  // closed at exit, which the format defines as the end
}

TEST_F(TraceRecordTest, UsageErrors) {
  EXPECT_EQ(WEXITSTATUS(system(VSHIM_RECORD_CLI " -o /dev/null 2>/dev/null")), 2);
  EXPECT_EQ(WEXITSTATUS(system(VSHIM_RECORD_CLI " --bogus -- true 2>/dev/null")), 2);
  EXPECT_EQ(WEXITSTATUS(system("VGPU_TRACE_PRELOAD=" VSHIM_RECORDER " " VSHIM_RECORD_CLI
                               " -o /dev/null -- sh -c 'exit 7'")),
            7);
}

}  // namespace
