// Group commit: failures isolated per callback, grouping, invariant 1 across
// callbacks of one group, draining on destruction, and durability of
// acknowledged writes across SIGKILL (invariant 2).
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/sqlite_store.h"
#include "storage/store.h"
#include "tests/unit/support/storage_test_util.h"
#include "tests/unit/support/temp_dir.h"

namespace vipu::storage {
namespace {

using test_util::AsyncResults;
using test_util::MakeAgent;
using test_util::WaitFor;

using fabric::Agent;
using fabric::IpuRef;
using fabric::Partition;
using fabric::PartitionIpu;
using test::TempDir;
using ::testing::HasSubstr;

// The ids of `store`'s agents as a set, to compare with the ids written.
std::set<std::string> AgentIdSet(Store& store) {
  std::vector<std::string> ids = test_util::AgentIds(store);
  return {ids.begin(), ids.end()};
}

// Holds the writer thread inside one callback until released, so that the
// writes queued meanwhile form the next group.
class WriterBlocker {
 public:
  explicit WriterBlocker(Store& store) {
    thread_ = std::thread([this, &store] {
      status_ = store.Write([this](WriteTxn&) {
        std::unique_lock<std::mutex> lock(mu_);
        running_ = true;
        cv_.notify_all();
        cv_.wait(lock, [this] { return released_; });
        return absl::OkStatus();
      });
    });
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return running_; });
  }
  ~WriterBlocker() { Release().IgnoreError(); }

  absl::Status Release() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      released_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    return status_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool running_ = false;
  bool released_ = false;
  absl::Status status_;
  std::thread thread_;
};

TEST(StorageGroupCommitTest, FailingCallbacksDoNotAffectTheirGroup) {
  TempDir dir;
  auto opened = SqliteStore::Open(dir.File("vipu.db"));
  ASSERT_TRUE(opened.ok()) << opened.status();
  Store& store = **opened;

  constexpr int kThreads = 50;
  std::vector<absl::Status> results(kThreads);
  std::vector<std::thread> threads;
  {
    WriterBlocker blocker(store);
    for (int i = 0; i < kThreads; ++i) {
      threads.emplace_back([&, i] {
        results[i] = store.Write([i](WriteTxn& txn) {
          // Every 5th callback writes, then fails: its row must vanish.
          absl::Status s = txn.InsertAgent(MakeAgent("a" + std::to_string(i)));
          if (!s.ok()) return s;
          if (i % 5 == 0) return absl::AbortedError("callback " + std::to_string(i) + " gives up");
          return absl::OkStatus();
        });
      });
    }
    ASSERT_TRUE(WaitFor([&] { return store.pending_writes() == kThreads; }))
        << "pending " << store.pending_writes();
    ASSERT_TRUE(blocker.Release().ok());
  }
  for (auto& t : threads) t.join();

  std::set<std::string> want;
  for (int i = 0; i < kThreads; ++i) {
    if (i % 5 == 0) {
      EXPECT_EQ(results[i].code(), absl::StatusCode::kAborted) << i << ": " << results[i];
    } else {
      EXPECT_TRUE(results[i].ok()) << i << ": " << results[i];
      want.insert("a" + std::to_string(i));
    }
  }
  EXPECT_EQ(AgentIdSet(store), want);
  // The blocker's commit and one commit for all 50.
  EXPECT_EQ(store.writes(), static_cast<uint64_t>(kThreads + 1));
  EXPECT_EQ(store.commits(), 2u);
  EXPECT_LT(store.commits(), store.writes());
  EXPECT_EQ(store.pending_writes(), 0u);
}

TEST(StorageGroupCommitTest, SameIpuFromTwoCallbacksInOneGroup) {
  TempDir dir;
  auto opened = SqliteStore::Open(dir.File("vipu.db"));
  ASSERT_TRUE(opened.ok()) << opened.status();
  Store& store = **opened;
  ASSERT_TRUE(store
                  .Write([](WriteTxn& txn) {
                    for (const char* id : {"m0", "m1"}) {
                      if (absl::Status s = txn.InsertAgent(MakeAgent(id)); !s.ok()) return s;
                    }
                    fabric::Cluster c;
                    c.id = "c";
                    c.agent_ids = {"m0", "m1"};
                    return txn.InsertCluster(c);
                  })
                  .ok());
  uint64_t commits_before = store.commits();

  auto partition = [](const std::string& id, std::vector<IpuRef> ipus) {
    Partition p;
    p.id = id;
    p.cluster_id = "c";
    for (const IpuRef& ipu : ipus) {
      PartitionIpu pi;
      pi.ipu = ipu;
      p.ipus.push_back(pi);
    }
    return p;
  };
  absl::Status first, second;
  std::vector<std::thread> threads;
  {
    WriterBlocker blocker(store);
    threads.emplace_back([&] {
      first = store.Write([&](WriteTxn& txn) {
        return txn.InsertPartition(partition("left", {{"m0", 0}, {"m0", 1}}));
      });
    });
    threads.emplace_back([&] {
      second = store.Write([&](WriteTxn& txn) {
        return txn.InsertPartition(partition("right", {{"m1", 0}, {"m0", 1}}));
      });
    });
    ASSERT_TRUE(WaitFor([&] { return store.pending_writes() == 2; }));
    ASSERT_TRUE(blocker.Release().ok());
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(store.commits(), commits_before + 2) << "blocker + one group";

  // Exactly one wins; the loser's message names the IPU.
  ASSERT_NE(first.ok(), second.ok()) << first << " / " << second;
  const absl::Status& loser = first.ok() ? second : first;
  EXPECT_EQ(loser.code(), absl::StatusCode::kAlreadyExists) << loser;
  EXPECT_THAT(std::string(loser.message()), HasSubstr("IPU m0:1 is already in a partition"));
  std::set<IpuRef> used;
  ASSERT_TRUE(store
                  .Read([&](ReadTxn& txn) {
                    auto u = txn.UsedIpus("c");
                    if (!u.ok()) return u.status();
                    used = *u;
                    return absl::OkStatus();
                  })
                  .ok());
  std::set<IpuRef> want =
      first.ok() ? std::set<IpuRef>{{"m0", 0}, {"m0", 1}} : std::set<IpuRef>{{"m1", 0}, {"m0", 1}};
  EXPECT_EQ(used, want);
}

TEST(StorageGroupCommitTest, WriteAsyncReportsOnceCommittedOnTheWriterThread) {
  TempDir dir;
  auto opened = SqliteStore::Open(dir.File("vipu.db"));
  ASSERT_TRUE(opened.ok()) << opened.status();
  Store& store = **opened;
  AsyncResults results;
  std::set<std::string> seen_in_done;
  absl::Status write_in_done;
  store.WriteAsync(
      [](WriteTxn& txn) { return txn.InsertAgent(MakeAgent("first")); },
      [&, done = results.Callback()](absl::Status s) {
        // Committed: another connection sees it already.
        seen_in_done = AgentIdSet(store);
        // On the writer thread: a waiting Write is refused, a
        // chained WriteAsync is not.
        write_in_done =
            store.Write([](WriteTxn& txn) { return txn.InsertAgent(MakeAgent("refused")); });
        store.WriteAsync([](WriteTxn& txn) { return txn.InsertAgent(MakeAgent("chained")); }, done);
        done(s);
      });
  std::vector<absl::Status> got = results.Await(2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(got[0].ok()) << got[0];
  EXPECT_TRUE(got[1].ok()) << got[1];
  EXPECT_EQ(seen_in_done, std::set<std::string>{"first"});
  EXPECT_EQ(write_in_done.code(), absl::StatusCode::kFailedPrecondition) << write_in_done;
  EXPECT_EQ(AgentIdSet(store), (std::set<std::string>{"chained", "first"}));
}

TEST(StorageGroupCommitTest, WriteAsyncErrorLeavesNothingAndSparesItsGroup) {
  TempDir dir;
  auto opened = SqliteStore::Open(dir.File("vipu.db"));
  ASSERT_TRUE(opened.ok()) << opened.status();
  Store& store = **opened;
  AsyncResults results;
  {
    // Both queue behind the blocker and commit as one group.
    WriterBlocker blocker(store);
    store.WriteAsync(
        [](WriteTxn& txn) -> absl::Status {
          if (absl::Status s = txn.InsertAgent(MakeAgent("half")); !s.ok()) return s;
          return absl::InvalidArgumentError("no");
        },
        results.Callback());
    store.WriteAsync([](WriteTxn& txn) { return txn.InsertAgent(MakeAgent("whole")); },
                     results.Callback());
    ASSERT_TRUE(WaitFor([&] { return store.pending_writes() == 2; }));
    ASSERT_TRUE(blocker.Release().ok());
  }
  std::vector<absl::Status> got = results.Await(2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].code(), absl::StatusCode::kInvalidArgument) << got[0];
  EXPECT_TRUE(got[1].ok()) << got[1];
  EXPECT_EQ(AgentIdSet(store), std::set<std::string>{"whole"});
}

TEST(StorageGroupCommitTest, DestructorCompletesQueuedAsyncWrites) {
  TempDir dir;
  std::string path = dir.File("vipu.db");
  auto opened = SqliteStore::Open(path);
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::unique_ptr<Store> store = *std::move(opened);
  AsyncResults results;
  constexpr int kWrites = 5;
  std::thread closer;
  {
    WriterBlocker blocker(*store);
    for (int i = 0; i < kWrites; ++i) {
      store->WriteAsync(
          [i](WriteTxn& txn) { return txn.InsertAgent(MakeAgent("q" + std::to_string(i))); },
          results.Callback());
    }
    ASSERT_TRUE(WaitFor([&] { return store->pending_writes() == kWrites; }));
    closer = std::thread([&] { store.reset(); });
    ASSERT_TRUE(blocker.Release().ok());
  }
  closer.join();
  std::vector<absl::Status> got = results.Await(kWrites);
  ASSERT_EQ(got.size(), static_cast<size_t>(kWrites));
  for (const absl::Status& s : got) EXPECT_TRUE(s.ok()) << s;
  auto reopened = SqliteStore::Open(path);
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_EQ(AgentIdSet(**reopened).size(), static_cast<size_t>(kWrites));
}

TEST(StorageGroupCommitTest, CommitWindowGroupsConcurrentWrites) {
  TempDir dir;
  StoreOptions options;
  options.group_commit_window_us = 2000;
  options.read_connections = 1;
  auto opened = SqliteStore::Open(dir.File("vipu.db"), options);
  ASSERT_TRUE(opened.ok()) << opened.status();
  Store& store = **opened;
  constexpr int kThreads = 16;
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      for (int k = 0; k < 5; ++k) {
        absl::Status s = store.Write([&](WriteTxn& txn) {
          return txn.InsertAgent(MakeAgent("a" + std::to_string(i) + "-" + std::to_string(k)));
        });
        if (s.ok()) ++ok;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), kThreads * 5);
  EXPECT_EQ(AgentIdSet(store).size(), static_cast<size_t>(kThreads * 5));
  EXPECT_EQ(store.writes(), static_cast<uint64_t>(kThreads * 5));
  EXPECT_LE(store.commits(), store.writes());
}

TEST(StorageGroupCommitTest, DestructorCompletesQueuedWrites) {
  TempDir dir;
  std::string path = dir.File("vipu.db");
  auto opened = SqliteStore::Open(path);
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::unique_ptr<Store> store = *std::move(opened);
  constexpr int kWrites = 10;
  std::vector<absl::Status> results(kWrites);
  std::vector<std::thread> threads;
  std::thread closer;
  {
    WriterBlocker blocker(*store);
    for (int i = 0; i < kWrites; ++i) {
      threads.emplace_back([&, i] {
        results[i] = store->Write(
            [i](WriteTxn& txn) { return txn.InsertAgent(MakeAgent("q" + std::to_string(i))); });
      });
    }
    ASSERT_TRUE(WaitFor([&] { return store->pending_writes() == kWrites; }));
    closer = std::thread([&] { store.reset(); });
    ASSERT_TRUE(blocker.Release().ok());
  }
  closer.join();
  for (auto& t : threads) t.join();
  for (int i = 0; i < kWrites; ++i) EXPECT_TRUE(results[i].ok()) << i << ": " << results[i];
  auto reopened = SqliteStore::Open(path);
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_EQ(AgentIdSet(**reopened).size(), static_cast<size_t>(kWrites));
}

// Invariant 2: a child writes from several threads and reports each
// acknowledged write (and the generation it took) through a pipe; it is
// killed with SIGKILL mid-stream. Everything acknowledged must be in the
// reopened file, and generations must never go backwards.
TEST(StorageGroupCommitTest, AcknowledgedWritesSurviveSigkill) {
  TempDir dir;
  std::string path = dir.File("vipu.db");
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(fds[0]);
    auto store = SqliteStore::Open(path);
    if (!store.ok()) _exit(2);
    std::vector<std::thread> writers;
    for (uint32_t t = 0; t < 4; ++t) {
      writers.emplace_back([&, t] {
        for (uint32_t i = 0; i < 100000; ++i) {
          uint64_t generation = 0;
          absl::Status s = (*store)->Write([&](WriteTxn& txn) {
            absl::StatusOr<uint64_t> g = txn.NextGeneration();
            if (!g.ok()) return g.status();
            generation = *g;
            return txn.InsertAgent(MakeAgent("t" + std::to_string(t) + "-" + std::to_string(i)));
          });
          if (!s.ok()) _exit(3);
          // One record per write(2), below PIPE_BUF: never interleaved.
          uint64_t record[2] = {(uint64_t{t} << 32) | i, generation};
          if (write(fds[1], record, sizeof(record)) != sizeof(record)) _exit(4);
        }
      });
    }
    for (auto& w : writers) w.join();
    _exit(0);
  }
  close(fds[1]);
  std::vector<std::pair<std::string, uint64_t>> acked;
  bool killed = false;
  std::string partial;
  while (true) {
    pollfd pfd{fds[0], POLLIN, 0};
    int ready = poll(&pfd, 1, 60000);
    if (ready <= 0) {
      kill(child, SIGKILL);
      ADD_FAILURE() << "child stopped acknowledging writes";
      break;
    }
    char buf[4096];
    ssize_t n = read(fds[0], buf, sizeof(buf));
    if (n <= 0) break;  // EOF: the child is gone
    partial.append(buf, static_cast<size_t>(n));
    size_t whole = partial.size() / 16 * 16;
    for (size_t off = 0; off < whole; off += 16) {
      uint64_t record[2];
      memcpy(record, partial.data() + off, 16);
      acked.emplace_back(
          "t" + std::to_string(record[0] >> 32) + "-" + std::to_string(record[0] & 0xffffffffu),
          record[1]);
    }
    partial.erase(0, whole);
    if (!killed && acked.size() >= 300) {
      kill(child, SIGKILL);  // mid-stream: writers are busy committing
      killed = true;
    }
  }
  close(fds[0]);
  int wstatus = 0;
  ASSERT_EQ(waitpid(child, &wstatus, 0), child);
  ASSERT_TRUE(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL)
      << "child exited early with status " << wstatus;
  ASSERT_GE(acked.size(), 300u);

  auto store = SqliteStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  std::set<std::string> present = AgentIdSet(**store);
  uint64_t max_acked_generation = 0;
  for (const auto& [id, generation] : acked) {
    EXPECT_EQ(present.count(id), 1u) << "acknowledged write " << id << " lost";
    max_acked_generation = std::max(max_acked_generation, generation);
  }
  EXPECT_GE(present.size(), acked.size());
  uint64_t next = 0;
  ASSERT_TRUE((*store)
                  ->Write([&](WriteTxn& txn) {
                    absl::StatusOr<uint64_t> g = txn.NextGeneration();
                    if (!g.ok()) return g.status();
                    next = *g;
                    return absl::OkStatus();
                  })
                  .ok());
  EXPECT_GT(next, max_acked_generation);
  EXPECT_EQ(next, present.size() + 1) << "one generation per committed write";
}

}  // namespace
}  // namespace vipu::storage
