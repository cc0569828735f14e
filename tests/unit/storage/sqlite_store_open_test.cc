// Opening a store: creation, pragmas, schema version and migrations,
// refusal of newer and damaged files, options, backup.
#include <sqlite3.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/connection.h"
#include "storage/schema.h"
#include "storage/sqlite_store.h"
#include "storage/store.h"
#include "tests/unit/support/storage_test_util.h"
#include "tests/unit/support/temp_dir.h"

namespace vipu::storage {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using test_util::AgentIds;
using ::testing::HasSubstr;

std::string Msg(const absl::Status& s) { return std::string(s.message()); }

// Agent ag<i>, its host name padded so that a few dozen agents fill several
// database pages.
fabric::Agent PaddedAgent(int i) {
  fabric::Agent a;
  a.id = "ag" + std::to_string(i);
  a.host = "10.1.0." + std::to_string(i % 250) + "-host-name-padding-to-fill-pages-" +
           std::string(40, 'x');
  a.port = 8100 + static_cast<uint32_t>(i);
  a.machine_type = i % 2 == 0 ? fabric::MachineType::kM2000 : fabric::MachineType::kBow;
  return a;
}

absl::Status InsertAgents(Store& store, int count) {
  return store.Write([&](WriteTxn& txn) {
    for (int i = 0; i < count; ++i) {
      if (absl::Status s = txn.InsertAgent(PaddedAgent(i)); !s.ok()) return s;
    }
    return absl::OkStatus();
  });
}

// Runs a query on a raw connection (outside the Store) and returns the first
// column of the first row as text.
std::string RawQuery(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  std::string out;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
      sqlite3_step(stmt) == SQLITE_ROW) {
    const unsigned char* text = sqlite3_column_text(stmt, 0);
    out = text ? reinterpret_cast<const char*>(text) : "";
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return out;
}

void RawExec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);
}

TEST(StorageOpenTest, CreatesFileWithSchemaVersionAndWal) {
  TempDir dir;
  std::string path = dir.File("vipu.db");
  {
    absl::StatusOr<std::unique_ptr<Store>> store = SqliteStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    EXPECT_TRUE(fs::exists(path));
    EXPECT_TRUE(AgentIds(**store).empty());
  }
  EXPECT_EQ(RawQuery(path, "PRAGMA user_version"), std::to_string(kSchemaVersion));
  EXPECT_EQ(RawQuery(path, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(RawQuery(path, "SELECT value FROM meta WHERE key = 'generation'"), "0");
  for (const char* table : {"agents", "clusters", "cluster_agents", "allocations",
                            "allocation_agents", "partitions", "partition_ipus", "meta"}) {
    EXPECT_EQ(
        RawQuery(path, std::string("SELECT name FROM sqlite_schema WHERE name = '") + table + "'"),
        table);
  }
  for (const char* index : {"partitions_by_allocation", "partitions_by_cluster"}) {
    EXPECT_EQ(
        RawQuery(path, std::string("SELECT name FROM sqlite_schema WHERE name = '") + index + "'"),
        index);
  }
}

// Threads of this process that carry `name`.
int ThreadsNamed(const std::string& name) {
  int n = 0;
  for (const auto& task : fs::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string line;
    if (std::getline(comm, line) && line == name) ++n;
  }
  return n;
}

TEST(StorageOpenTest, TheWriterThreadIsNamed) {
  TempDir dir;
  const int before = ThreadsNamed("vipu-writer");
  auto store = SqliteStore::Open(dir.File("vipu.db"));
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ(ThreadsNamed("vipu-writer"), before + 1);
}

TEST(StorageOpenTest, ReopenKeepsData) {
  TempDir dir;
  std::string path = dir.File("vipu.db");
  {
    auto store = SqliteStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE(InsertAgents(**store, 3).ok());
  }
  auto store = SqliteStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_THAT(AgentIds(**store), ::testing::ElementsAre("ag0", "ag1", "ag2"));
}

TEST(StorageOpenTest, RefusesNewerSchemaVersion) {
  TempDir dir;
  std::string path = dir.File("vipu.db");
  { ASSERT_TRUE(SqliteStore::Open(path).ok()); }
  RawExec(path, "PRAGMA user_version = " + std::to_string(kSchemaVersion + 1));
  auto store = SqliteStore::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition) << store.status();
  EXPECT_THAT(Msg(store.status()),
              HasSubstr("schema version " + std::to_string(kSchemaVersion + 1) +
                        " is newer than this vipu-server supports"));
  // The refusal changed nothing.
  EXPECT_EQ(RawQuery(path, "PRAGMA user_version"), std::to_string(kSchemaVersion + 1));
}

TEST(StorageOpenTest, RefusesCorruptedFile) {
  TempDir dir;
  std::string path = dir.File("vipu.db");
  {
    auto store = SqliteStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE(InsertAgents(**store, 2000).ok());
  }
  ASSERT_FALSE(fs::exists(path + "-wal") && fs::file_size(path + "-wal") > 0);
  int page_size = std::stoi(RawQuery(path, "PRAGMA page_size"));
  uintmax_t size = fs::file_size(path);
  ASSERT_GT(size, 20u * static_cast<uintmax_t>(page_size)) << "want a file with many pages";
  {
    // Garbage over the middle third of the file: b-tree pages of agents.
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(static_cast<std::streamoff>(size / 3));
    std::string garbage(size / 3, '\0');
    for (size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<char>((i * 131) ^ 0x5A);
    file.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
  }
  auto store = SqliteStore::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition) << store.status();
  EXPECT_THAT(Msg(store.status()), HasSubstr("quick_check"));
  EXPECT_THAT(Msg(store.status()), HasSubstr(path));
}

TEST(StorageOpenTest, RefusesFileThatIsNotADatabase) {
  TempDir dir;
  std::string path = dir.File("vipu.db");
  {
    std::ofstream file(path, std::ios::binary);
    file << std::string(8192, 'g');
  }
  auto store = SqliteStore::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition) << store.status();
  EXPECT_THAT(Msg(store.status()), HasSubstr("not a database"));
}

TEST(StorageOpenTest, RefusesUnwritableLocation) {
  TempDir dir;
  auto store = SqliteStore::Open(dir.File("missing-dir/vipu.db"));
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition) << store.status();
  EXPECT_THAT(Msg(store.status()), HasSubstr("missing-dir/vipu.db"));
}

TEST(StorageOpenTest, RefusesInvalidOptions) {
  TempDir dir;
  struct Case {
    StoreOptions options;
    std::string message;
  };
  std::vector<Case> cases(3);
  cases[0].options.group_commit_window_us = -1;
  cases[0].message = "group_commit_window_us: must be >= 0, got -1";
  cases[1].options.read_connections = 0;
  cases[1].message = "read_connections: must be >= 1, got 0";
  cases[2].options.busy_timeout_ms = -5;
  cases[2].message = "busy_timeout_ms: must be >= 0, got -5";
  for (const Case& c : cases) {
    auto store = SqliteStore::Open(dir.File("vipu.db"), c.options);
    ASSERT_FALSE(store.ok());
    EXPECT_EQ(store.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(Msg(store.status()), c.message);
  }
  EXPECT_FALSE(fs::exists(dir.File("vipu.db"))) << "nothing is created for bad options";
}

TEST(StorageOpenTest, MigratesForwardStepByStep) {
  TempDir dir;
  std::string path = dir.File("m.db");
  auto conn = Connection::Open(path, Connection::Mode::kReadWrite);
  ASSERT_TRUE(conn.ok()) << conn.status();
  std::vector<Migration> v1 = {{1, "CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (7);"}};
  ASSERT_TRUE(MigrateSchema(**conn, v1).ok());
  EXPECT_EQ(*(*conn)->QueryInt("PRAGMA user_version"), 1);
  // Re-running the same list is a no-op.
  ASSERT_TRUE(MigrateSchema(**conn, v1).ok());
  EXPECT_EQ(*(*conn)->QueryInt("SELECT COUNT(*) FROM t"), 1);

  std::vector<Migration> v2 = v1;
  v2.push_back({2, "ALTER TABLE t ADD COLUMN b INTEGER NOT NULL DEFAULT 3;"});
  ASSERT_TRUE(MigrateSchema(**conn, v2).ok());
  EXPECT_EQ(*(*conn)->QueryInt("PRAGMA user_version"), 2);
  EXPECT_EQ(*(*conn)->QueryInt("SELECT a + b FROM t"), 10);

  // A failing step leaves the old version and schema.
  std::vector<Migration> v4 = v2;
  v4.push_back({3, "CREATE TABLE u (x INTEGER);"});
  v4.push_back({4, "THIS IS NOT SQL;"});
  absl::Status s = MigrateSchema(**conn, v4);
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
  EXPECT_THAT(Msg(s), HasSubstr("migration to version 4 failed"));
  EXPECT_EQ(*(*conn)->QueryInt("PRAGMA user_version"), 2);
  EXPECT_EQ(*(*conn)->QueryInt("SELECT COUNT(*) FROM sqlite_schema WHERE name = 'u'"), 0);

  // An older binary (steps up to 1) refuses the version-2 file.
  s = MigrateSchema(**conn, v1);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
}

TEST(StorageOpenTest, ShippedMigrationsEndAtSchemaVersion) {
  const std::vector<Migration>& steps = SchemaMigrations();
  ASSERT_FALSE(steps.empty());
  for (size_t i = 0; i < steps.size(); ++i) EXPECT_EQ(steps[i].version, static_cast<int>(i) + 1);
  EXPECT_EQ(steps.back().version, kSchemaVersion);
}

TEST(StorageOpenTest, BackupOpensWithSameContent) {
  TempDir dir;
  std::string path = dir.File("vipu.db");
  std::string copy = dir.File("backup.db");
  auto store = SqliteStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE(InsertAgents(**store, 50).ok());
  uint64_t generation = 0;
  ASSERT_TRUE((*store)
                  ->Write([&](WriteTxn& txn) {
                    absl::StatusOr<uint64_t> g = txn.NextGeneration();
                    if (!g.ok()) return g.status();
                    generation = *g;
                    return absl::OkStatus();
                  })
                  .ok());
  ASSERT_TRUE((*store)->Backup(copy).ok());
  // Changes after the backup are not in it.
  ASSERT_TRUE(
      (*store)->Write([](WriteTxn& txn) { return txn.InsertAgent(PaddedAgent(999)); }).ok());
  {
    auto restored = SqliteStore::Open(copy);
    ASSERT_TRUE(restored.ok()) << restored.status();
    std::vector<std::string> ids = AgentIds(**restored);
    EXPECT_EQ(ids.size(), 50u);
    EXPECT_EQ(std::count(ids.begin(), ids.end(), "ag999"), 0);
    uint64_t next = 0;
    ASSERT_TRUE((*restored)
                    ->Write([&](WriteTxn& txn) {
                      absl::StatusOr<uint64_t> g = txn.NextGeneration();
                      if (!g.ok()) return g.status();
                      next = *g;
                      return absl::OkStatus();
                    })
                    .ok());
    EXPECT_EQ(next, generation + 1);
  }
  // A second backup replaces the first.
  ASSERT_TRUE((*store)->Backup(copy).ok());
  auto restored = SqliteStore::Open(copy);
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ(AgentIds(**restored).size(), 51u);
  EXPECT_FALSE(fs::exists(copy + ".tmp"));
}

TEST(StorageOpenTest, BackupToMissingDirectoryFails) {
  TempDir dir;
  auto store = SqliteStore::Open(dir.File("vipu.db"));
  ASSERT_TRUE(store.ok()) << store.status();
  absl::Status s = (*store)->Backup(dir.File("no/such/dir/backup.db"));
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(Msg(s), HasSubstr("no/such/dir/backup.db"));
}

TEST(StorageOpenTest, CorruptErrorsColumnIsReportedNotMisread) {
  TempDir dir;
  std::string path = dir.File("vipu.db");
  auto store = SqliteStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)
                  ->Write([](WriteTxn& txn) {
                    fabric::Cluster c;
                    c.id = "c";
                    if (absl::Status s = txn.InsertCluster(c); !s.ok()) return s;
                    fabric::Partition p;
                    p.id = "p";
                    p.cluster_id = "c";
                    p.errors = {"fine"};
                    return txn.InsertPartition(p);
                  })
                  .ok());
  // Another process damages the column behind the store's back.
  RawExec(path, "UPDATE partitions SET errors = '[\"unterminated' WHERE id = 'p'");
  absl::Status s = (*store)->Read([](ReadTxn& txn) { return txn.GetPartition("p").status(); });
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
  EXPECT_THAT(Msg(s), HasSubstr("partition p: errors column is corrupt"));
}

}  // namespace
}  // namespace vipu::storage
