// The checkpoint journal (daemon/checkpoint): entries replayed over the snapshot, a torn tail
// dropped, a corrupt entry detected and kept aside; the group-commit writer: batches, ordering
// against synchronous snapshots, compaction, and recovery after a failed write.
#include <gtest/gtest.h>
#include <zlib.h>

#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include "vgpu/checkpoint/checkpoint.h"
#include "vgpu/checkpoint/checkpoint_writer.h"

namespace vgpu::checkpoint {
namespace {

namespace fs = std::filesystem;

class JournalTest : public ::testing::Test {
 protected:
  JournalTest() {
    char tmpl[] = "/tmp/vgpu-journal-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
  }
  ~JournalTest() override { fs::remove_all(dir_); }

  static slots::SlotRecord Record(uint32_t id, std::string pod = "") {
    slots::SlotRecord r;
    r.config.id = id;
    r.config.name = "g0-m" + std::to_string(id * 4) + "-n4";
    r.config.mem_quota = 1ull << 30;
    r.memory_ids = {"vcuda-memory-gpu0-" + std::to_string(id * 4)};
    r.pod_name = std::move(pod);
    return r;
  }
  std::string Text() const {
    std::ifstream in(dir_ / "cp");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  static size_t Lines(const std::string& text) {
    return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
  }

  // An owner of records 0..n-1 as SlotManager is: changed and journaled under `mu`, whose
  // writer's snapshots are the whole state taken under the same lock.
  struct Owner {
    std::mutex mu;
    std::map<uint32_t, std::shared_ptr<const std::string>> state;
    std::atomic<int> snapshots_requested{0};
    std::unique_ptr<CheckpointWriter> writer;

    Owner(CheckpointStore& store, size_t compact_after) {
      writer = std::make_unique<CheckpointWriter>(
          store,
          [this] {
            std::lock_guard lock(mu);
            ++snapshots_requested;
            EncodedRecords all;
            for (auto& [id, json] : state) {
              all.push_back(json);
            }
            writer->Compact(std::move(all));
          },
          nullptr, compact_after);
      writer->Start();
    }
    ~Owner() { writer.reset(); }
    void Put(uint32_t id) {
      std::lock_guard lock(mu);
      auto json = std::make_shared<const std::string>(RecordJson(Record(id)));
      state[id] = json;
      writer->Append(PutEntry(*json));
    }
  };

  fs::path dir_;
};

TEST_F(JournalTest, EntriesReplayOverTheSnapshot) {
  CheckpointStore store(dir_ / "cp");
  ASSERT_TRUE(store.Save({Record(1), Record(2)}).ok());
  ASSERT_TRUE(store.Append(PutEntry(RecordJson(Record(3)))).ok());
  ASSERT_TRUE(store.Append(PutEntry(RecordJson(Record(1, "owner"))) + DeleteEntry(2)).ok());
  EXPECT_EQ(Lines(Text()), 4u);  // snapshot + 3 entries, nothing rewritten
  auto loaded = store.Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_TRUE(loaded->corrupt_reason.empty());
  EXPECT_EQ(loaded->journal_entries, 3u);
  ASSERT_EQ(loaded->records.size(), 2u);
  EXPECT_EQ(loaded->records[0], Record(1, "owner"));
  EXPECT_EQ(loaded->records[1], Record(3));
  // A new snapshot replaces the journal.
  ASSERT_TRUE(store.Save(loaded->records).ok());
  EXPECT_EQ(Lines(Text()), 1u);
}

TEST_F(JournalTest, TornTailIsDroppedNotCorrupt) {
  CheckpointStore store(dir_ / "cp");
  ASSERT_TRUE(store.Save({Record(1)}).ok());
  std::string entry = PutEntry(RecordJson(Record(2)));
  ASSERT_TRUE(store.Append(entry.substr(0, entry.size() / 2)).ok());  // a crash mid-append
  auto loaded = store.Load();
  ASSERT_TRUE(loaded.ok());
  EXPECT_TRUE(loaded->corrupt_reason.empty());
  EXPECT_TRUE(loaded->torn_tail);
  ASSERT_EQ(loaded->records.size(), 1u);
  EXPECT_EQ(loaded->records[0], Record(1));
}

TEST_F(JournalTest, EditedEntryIsCorruptAndKeptAside) {
  CheckpointStore store(dir_ / "cp");
  ASSERT_TRUE(store.Save({Record(1)}).ok());
  ASSERT_TRUE(store.Append(PutEntry(RecordJson(Record(2, "pod-x")))).ok());
  ASSERT_TRUE(store.Append(DeleteEntry(1)).ok());
  std::string text = Text();
  size_t at = text.find("pod-x");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 5, "pod-y");  // valid JSON, wrong CRC
  std::ofstream(dir_ / "cp", std::ios::trunc) << text;
  auto loaded = store.Load();
  ASSERT_TRUE(loaded.ok());
  EXPECT_NE(loaded->corrupt_reason.find("journal entry 1: crc32 mismatch"), std::string::npos)
      << loaded->corrupt_reason;
  EXPECT_TRUE(loaded->records.empty());
  EXPECT_TRUE(fs::exists(loaded->kept_aside));
  EXPECT_FALSE(fs::exists(dir_ / "cp"));
}

TEST_F(JournalTest, VersionOneFileStillLoads) {
  std::string v1 = Serialize({Record(4)});
  size_t at = v1.find("\"version\":4");
  ASSERT_NE(at, std::string::npos);
  v1.replace(at, 11, "\"version\":1");
  std::ofstream(dir_ / "cp") << v1;
  CheckpointStore store(dir_ / "cp");
  auto loaded = store.Load();
  ASSERT_TRUE(loaded.ok());
  EXPECT_TRUE(loaded->corrupt_reason.empty()) << loaded->corrupt_reason;
  ASSERT_EQ(loaded->records.size(), 1u);
}

// A snapshot of `version` holding `rec` as it is, with a valid CRC (a file an older manager wrote).
void WriteSnapshot(const fs::path& path, const nlohmann::json& rec, int version) {
  nlohmann::json payload = {{"slots", {rec}}};
  std::string dumped = payload.dump();
  uint32_t crc = static_cast<uint32_t>(
      crc32(0L, reinterpret_cast<const Bytef*>(dumped.data()), static_cast<uInt>(dumped.size())));
  std::ofstream(path) << nlohmann::json{{"crc32", crc},
                                        {"format", "vgpu-manager-checkpoint"},
                                        {"payload", payload},
                                        {"version", version}}
                             .dump()
                      << "\n";
}

// A version 2 file, as the manager wrote it before the slot schema: the quota and the share under
// their old names, no compute mode. Upgrading keeps every slot, its share a cap.
TEST_F(JournalTest, VersionTwoRecordsKeepTheirSettings) {
  nlohmann::json rec = nlohmann::json::parse(RecordJson(Record(4)));
  rec.erase("mem_quota");
  rec.erase("compute_share");
  rec.erase("compute_mode");
  rec.erase("compute_ref_clock_mhz");
  rec["memory_quota_bytes"] = 3ull << 30;
  rec["compute_share_percent"] = 30;
  WriteSnapshot(dir_ / "cp", rec, 2);
  CheckpointStore store(dir_ / "cp");
  auto loaded = store.Load();
  ASSERT_TRUE(loaded.ok());
  EXPECT_TRUE(loaded->corrupt_reason.empty()) << loaded->corrupt_reason;
  ASSERT_EQ(loaded->records.size(), 1u);
  EXPECT_EQ(loaded->records[0].config.mem_quota, 3ull << 30);
  EXPECT_EQ(loaded->records[0].config.compute_share, 30u);
  EXPECT_EQ(loaded->records[0].config.compute_mode, ComputeMode::kCap);
}

// A version 3 file predates the reference clock: its slots load with the reference unknown (the
// shim probes), not as a corrupt checkpoint that would lose them.
TEST_F(JournalTest, VersionThreeRecordsLoadWithTheReferenceUnknown) {
  slots::SlotRecord r = Record(4);
  r.config.compute_share = 30;
  nlohmann::json rec = nlohmann::json::parse(RecordJson(r));
  rec.erase("compute_ref_clock_mhz");
  WriteSnapshot(dir_ / "cp", rec, 3);
  CheckpointStore store(dir_ / "cp");
  auto loaded = store.Load();
  ASSERT_TRUE(loaded.ok());
  EXPECT_TRUE(loaded->corrupt_reason.empty()) << loaded->corrupt_reason;
  ASSERT_EQ(loaded->records.size(), 1u);
  EXPECT_EQ(loaded->records[0].config.compute_ref_clock_mhz, 0u);
  EXPECT_EQ(loaded->records[0].config.compute_share, 30u);
}

// The reference clock a slot was given is kept across a restart.
TEST_F(JournalTest, ReferenceClockRoundTrips) {
  slots::SlotRecord r = Record(4);
  r.config.compute_ref_clock_mhz = 1483;
  CheckpointStore store(dir_ / "cp");
  ASSERT_TRUE(store.Save({r}).ok());
  auto loaded = store.Load();
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->records.size(), 1u);
  EXPECT_EQ(loaded->records[0].config.compute_ref_clock_mhz, 1483u);
}

TEST_F(JournalTest, WriterGroupsConcurrentAppendsAndCompacts) {
  CheckpointStore store(dir_ / "cp");
  ASSERT_TRUE(store.Save({}).ok());
  Owner owner(store, /*compact_after=*/64);
  constexpr int kThreads = 8, kPerThread = 40;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        owner.Put(static_cast<uint32_t>(t * kPerThread + i));
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  ASSERT_TRUE(owner.writer->Flush(std::chrono::seconds(30)));
  CheckpointWriter::Counters c = owner.writer->counters();
  EXPECT_GT(owner.snapshots_requested.load(), 0);
  EXPECT_GT(c.compactions, 0u);
  EXPECT_EQ(c.failures, 0u);
  // Whatever the batching, the file replays to exactly the owner's state.
  auto loaded = store.Load();
  ASSERT_TRUE(loaded.ok());
  ASSERT_TRUE(loaded->corrupt_reason.empty()) << loaded->corrupt_reason;
  EXPECT_EQ(loaded->records.size(), static_cast<size_t>(kThreads * kPerThread));
  EXPECT_LT(loaded->journal_entries, 64u + kThreads * kPerThread);
}

TEST_F(JournalTest, SynchronousSnapshotIsNeverFollowedByOlderEntries) {
  CheckpointStore store(dir_ / "cp");
  ASSERT_TRUE(store.Save({}).ok());
  CheckpointWriter writer(store, nullptr);
  writer.Start();
  for (uint32_t i = 0; i < 50; ++i) {
    writer.Append(PutEntry(RecordJson(Record(i, "old"))));
  }
  // The owner's newer truth: only record 7, owned by "new".
  ASSERT_TRUE(
      writer.CompactNow({std::make_shared<const std::string>(RecordJson(Record(7, "new")))}).ok());
  ASSERT_TRUE(writer.Flush(std::chrono::seconds(10)));
  auto loaded = store.Load();
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->records.size(), 1u);
  EXPECT_EQ(loaded->records[0], Record(7, "new"));
}

// WaitWritten (what a DRA prepare waits for) returns once the entries are in the file: a reader
// that starts after it, as a restarted manager does, finds every one of them.
TEST_F(JournalTest, WaitWrittenEntriesAreThereForTheNextReader) {
  CheckpointStore store(dir_ / "cp");
  ASSERT_TRUE(store.Save({}).ok());
  CheckpointWriter writer(store, nullptr);
  writer.Start();
  for (uint32_t i = 0; i < 20; ++i) {
    writer.Append(PutEntry(RecordJson(Record(i, "pod"))));
    ASSERT_TRUE(writer.WaitWritten(std::chrono::seconds(10)));
    CheckpointStore reader(dir_ / "cp");
    auto loaded = reader.Load();
    ASSERT_TRUE(loaded.ok());
    ASSERT_EQ(loaded->records.size(), i + 1) << "entry " << i << " not written yet";
  }
}

// WaitWritten's callers write queued lines on their own threads while the writer flushes and
// compacts (a DRA prepare each): whoever writes what, the file replays to the owner's state.
TEST_F(JournalTest, ConcurrentWaitWrittenCallersAndCompactionsKeepEveryEntry) {
  CheckpointStore store(dir_ / "cp");
  ASSERT_TRUE(store.Save({}).ok());
  Owner owner(store, /*compact_after=*/8);
  constexpr int kThreads = 4, kPerThread = 20;
  std::atomic<int> missing{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const uint32_t id = static_cast<uint32_t>(t * kPerThread + i);
        owner.Put(id);
        if (!owner.writer->WaitWritten(std::chrono::seconds(30))) {
          ++missing;
          continue;
        }
        CheckpointStore reader(dir_ / "cp");  // what a restart would read now
        auto loaded = reader.Load();
        if (!loaded.ok() || std::none_of(loaded->records.begin(), loaded->records.end(),
                                         [&](const auto& r) { return r.config.id == id; })) {
          ++missing;
        }
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  EXPECT_EQ(missing.load(), 0) << "an entry was not in the file when WaitWritten returned";
  ASSERT_TRUE(owner.writer->Flush(std::chrono::seconds(30)));
  EXPECT_GT(owner.writer->counters().compactions, 0u);
  EXPECT_EQ(owner.writer->counters().failures, 0u);
  auto loaded = store.Load();
  ASSERT_TRUE(loaded.ok());
  ASSERT_TRUE(loaded->corrupt_reason.empty()) << loaded->corrupt_reason;
  EXPECT_EQ(loaded->records.size(), static_cast<size_t>(kThreads * kPerThread));
}

TEST_F(JournalTest, FailedWriteIsFollowedBySnapshotNotAppend) {
  CheckpointStore store(dir_ / "cp");
  ASSERT_TRUE(store.Save({}).ok());
  std::mutex owner_mu;
  EncodedRecords state;
  std::atomic<int> failures{0};
  std::unique_ptr<CheckpointWriter> writer;
  writer = std::make_unique<CheckpointWriter>(
      store,
      [&] {
        std::lock_guard lock(owner_mu);
        writer->Compact(state);
      },
      [&](const Status&) { ++failures; });
  writer->Start();
  // The file vanishes under the writer (an operator's rm): the append cannot open it, and the
  // writer must not append to a fresh file without a snapshot in front.
  fs::remove(dir_ / "cp");
  {
    std::lock_guard lock(owner_mu);
    state.push_back(std::make_shared<const std::string>(RecordJson(Record(1))));
    writer->Append(PutEntry(*state.back()));
  }
  ASSERT_TRUE(writer->Flush(std::chrono::seconds(10)));  // retried as a snapshot
  EXPECT_EQ(failures.load(), 1);
  auto loaded = store.Load();
  ASSERT_TRUE(loaded.ok());
  EXPECT_TRUE(loaded->corrupt_reason.empty()) << loaded->corrupt_reason;
  ASSERT_EQ(loaded->records.size(), 1u);
  EXPECT_EQ(writer->counters().compactions, 1u);
  writer.reset();
}

}  // namespace
}  // namespace vgpu::checkpoint
