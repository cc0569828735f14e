// Connection: statement cache, nested use of one statement, error mapping
// (constraints, a full disk), savepoints.
#include <cerrno>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/connection.h"
#include "tests/unit/support/temp_dir.h"

namespace vipu::storage {
namespace {

using ::testing::HasSubstr;

class StorageConnectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto conn = Connection::Open(dir_.File("c.db"), Connection::Mode::kReadWrite);
    ASSERT_TRUE(conn.ok()) << conn.status();
    conn_ = *std::move(conn);
    ASSERT_TRUE(conn_
                    ->Exec("PRAGMA foreign_keys = ON;"
                           "CREATE TABLE p (id TEXT PRIMARY KEY, u TEXT UNIQUE);"
                           "CREATE TABLE c (pid TEXT REFERENCES p(id));"
                           "INSERT INTO p VALUES ('a', 'x'), ('b', 'y');")
                    .ok());
  }
  test::TempDir dir_{"vipu-storage"};
  std::unique_ptr<Connection> conn_;
};

TEST_F(StorageConnectionTest, CachesStatementsBySqlText) {
  const char* sql = "SELECT COUNT(*) FROM p";
  EXPECT_EQ(*conn_->QueryInt(sql), 2);
  size_t cached = conn_->CachedStatementsForTesting();
  EXPECT_EQ(*conn_->QueryInt(sql), 2);
  EXPECT_EQ(conn_->CachedStatementsForTesting(), cached) << "the second use reuses the statement";
  EXPECT_EQ(*conn_->QueryInt("SELECT COUNT(*) FROM c"), 0);
  EXPECT_EQ(conn_->CachedStatementsForTesting(), cached + 1);
}

TEST_F(StorageConnectionTest, QueryTextBindsItsParameter) {
  const char* sql = "SELECT u FROM p WHERE id = ?1";
  EXPECT_EQ(*conn_->QueryText(sql, "a"), "x");
  EXPECT_EQ(*conn_->QueryText(sql, "b"), "y");
  EXPECT_EQ(*conn_->QueryText(sql, "none"), "") << "no row";
  EXPECT_FALSE(conn_->QueryText("SELECT nope FROM p WHERE id = ?1", "a").ok());
}

TEST_F(StorageConnectionTest, NestedUseOfOneStatementGetsACopy) {
  const char* sql = "SELECT id FROM p WHERE id >= ?1 ORDER BY id";
  auto outer = conn_->Prepare(sql);
  ASSERT_TRUE(outer.ok());
  outer->BindText(1, "a");
  ASSERT_TRUE(*outer->Step());
  EXPECT_EQ(outer->ColumnText(0), "a");
  {
    auto inner = conn_->Prepare(sql);
    ASSERT_TRUE(inner.ok());
    inner->BindText(1, "b");
    ASSERT_TRUE(*inner->Step());
    EXPECT_EQ(inner->ColumnText(0), "b");
  }
  // The outer cursor was not disturbed.
  ASSERT_TRUE(*outer->Step());
  EXPECT_EQ(outer->ColumnText(0), "b");
  EXPECT_FALSE(*outer->Step());
}

TEST_F(StorageConnectionTest, MapsConstraintErrors) {
  auto dup = conn_->Prepare("INSERT INTO p VALUES (?1, ?2)");
  ASSERT_TRUE(dup.ok());
  dup->BindText(1, "a").BindText(2, "new");
  absl::Status s = dup->Run();
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("UNIQUE constraint failed: p.id"));

  s = conn_->Exec("INSERT INTO p VALUES ('z', 'x')");
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists) << s;

  s = conn_->Exec("INSERT INTO c VALUES ('ghost')");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("FOREIGN KEY constraint failed"));

  s = conn_->Exec("SELECT * FROM no_such_table");
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;

  auto bad = conn_->Prepare("SELEC 1");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("preparing `SELEC 1`"));
}

// SQLite says SQLITE_FULL when it cannot grow the file (here: past
// max_page_count, the same code a full disk gives); the status names the
// file, and the connection goes on once there is room.
TEST_F(StorageConnectionTest, FullDatabaseIsResourceExhaustedNamingTheFile) {
  const int64_t pages = *conn_->QueryInt("PRAGMA page_count");
  ASSERT_TRUE(conn_->Exec("PRAGMA max_page_count = " + std::to_string(pages)).ok());
  absl::Status s = conn_->Exec("INSERT INTO p VALUES ('big', randomblob(100000))");
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("the disk of the database " + dir_.File("c.db") + " is full"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("database or disk is full"))
      << "SQLite's own words follow";
  EXPECT_EQ(*conn_->QueryInt("SELECT COUNT(*) FROM p"), 2) << "nothing of the insert is left";

  ASSERT_TRUE(conn_->Exec("PRAGMA max_page_count = 1000000").ok());
  EXPECT_TRUE(conn_->Exec("INSERT INTO p VALUES ('big', randomblob(100000))").ok());
  EXPECT_EQ(*conn_->QueryInt("SELECT COUNT(*) FROM p"), 3);
}

TEST(StorageDiskFullTest, FullAndNoSpaceIoErrorsAreDiskFull) {
  EXPECT_TRUE(IsDiskFull(SQLITE_FULL, 0));
  EXPECT_TRUE(IsDiskFull(SQLITE_FULL, ENOSPC));
  EXPECT_TRUE(IsDiskFull(SQLITE_IOERR_WRITE, ENOSPC));
  EXPECT_TRUE(IsDiskFull(SQLITE_IOERR_FSYNC, ENOSPC));
  EXPECT_TRUE(IsDiskFull(SQLITE_IOERR_TRUNCATE, ENOSPC));
  EXPECT_TRUE(IsDiskFull(SQLITE_IOERR_SHMSIZE, ENOSPC));

  EXPECT_FALSE(IsDiskFull(SQLITE_IOERR_WRITE, EIO)) << "a failing disk is not a full one";
  EXPECT_FALSE(IsDiskFull(SQLITE_IOERR, 0));
  EXPECT_FALSE(IsDiskFull(SQLITE_CONSTRAINT_UNIQUE, ENOSPC)) << "a stale errno means nothing";
  EXPECT_FALSE(IsDiskFull(SQLITE_BUSY, ENOSPC));
  EXPECT_FALSE(IsDiskFull(SQLITE_CORRUPT, 0));
}

TEST(StorageDiskFullTest, WithoutAHandleTheMessageSaysTheDatabase) {
  absl::Status s = SqliteStatus(nullptr, SQLITE_FULL, "COMMIT");
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("the disk of the database is full"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("COMMIT: database or disk is full"));

  EXPECT_EQ(SqliteStatus(nullptr, SQLITE_IOERR_WRITE, "COMMIT").code(), absl::StatusCode::kInternal)
      << "no handle, no errno: an I/O error stays INTERNAL";
}

TEST_F(StorageConnectionTest, BindErrorIsReportedAtStep) {
  auto stmt = conn_->Prepare("SELECT ?1");
  ASSERT_TRUE(stmt.ok());
  stmt->BindInt(5, 1);  // no such parameter
  auto row = stmt->Step();
  EXPECT_EQ(row.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(row.status().message()), HasSubstr("binding parameters"));
}

TEST_F(StorageConnectionTest, TextKeepsEveryByteAndEmptyIsNotNull) {
  std::string odd("a\0b\xff", 4);
  ASSERT_TRUE(conn_->Exec("CREATE TABLE t (v TEXT)").ok());
  auto ins = conn_->Prepare("INSERT INTO t VALUES (?1)");
  ASSERT_TRUE(ins.ok());
  ins->BindText(1, odd);
  ASSERT_TRUE(ins->Run().ok());
  auto ins2 = conn_->Prepare("INSERT INTO t VALUES (?1)");
  ins2->BindText(1, "");
  ASSERT_TRUE(ins2->Run().ok());
  EXPECT_EQ(*conn_->QueryInt("SELECT COUNT(*) FROM t WHERE v IS NULL"), 0);
  auto sel = conn_->Prepare("SELECT v FROM t WHERE length(CAST(v AS BLOB)) = 4");
  ASSERT_TRUE(*sel->Step());
  EXPECT_EQ(sel->ColumnText(0), odd);
}

TEST_F(StorageConnectionTest, SavepointRollsBackUnlessReleased) {
  {
    Savepoint sp(conn_.get(), "s");
    ASSERT_TRUE(sp.status().ok());
    ASSERT_TRUE(conn_->Exec("INSERT INTO p VALUES ('gone', 'g')").ok());
  }
  EXPECT_EQ(*conn_->QueryInt("SELECT COUNT(*) FROM p"), 2);
  {
    Savepoint sp(conn_.get(), "s");
    ASSERT_TRUE(conn_->Exec("INSERT INTO p VALUES ('kept', 'k')").ok());
    ASSERT_TRUE(sp.Release().ok());
  }
  EXPECT_EQ(*conn_->QueryInt("SELECT COUNT(*) FROM p"), 3);
}

}  // namespace
}  // namespace vipu::storage
