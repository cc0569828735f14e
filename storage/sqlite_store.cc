// SqliteStore: opening checks, how a group of writes commits (one transaction,
// a savepoint per write), the read pool and online backup.
#include "storage/sqlite_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "base/status_macros.h"
#include "spdlog/spdlog.h"
#include "storage/connection.h"
#include "storage/membership_cache.h"
#include "storage/schema.h"
#include "storage/write_queue.h"

namespace vipu::storage {
namespace {

absl::Status ValidateOptions(const StoreOptions& options) {
  if (options.group_commit_window_us < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("group_commit_window_us: must be >= 0, got ", options.group_commit_window_us));
  }
  if (options.read_connections < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("read_connections: must be >= 1, got ", options.read_connections));
  }
  if (options.busy_timeout_ms < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("busy_timeout_ms: must be >= 0, got ", options.busy_timeout_ms));
  }
  return absl::OkStatus();
}

// PRAGMA quick_check: refuses a damaged file before anything writes to it.
absl::Status CheckIntegrity(Connection& conn) {
  absl::StatusOr<Statement> stmt = conn.Prepare("PRAGMA quick_check");
  std::vector<std::string> problems;
  absl::Status status = stmt.status();
  while (status.ok()) {
    absl::StatusOr<bool> row = stmt->Step();
    if (!row.ok()) {
      status = row.status();
      break;
    }
    if (!*row) break;
    std::string line = stmt->ColumnText(0);
    if (line != "ok" && problems.size() < 5) problems.push_back(std::move(line));
  }
  if (!status.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        conn.path(), ": database integrity check (PRAGMA quick_check) failed: ", status.message()));
  }
  if (!problems.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        conn.path(),
        ": database integrity check (PRAGMA quick_check) failed: ", absl::StrJoin(problems, "; ")));
  }
  return absl::OkStatus();
}

// A page cache big enough to hold the working set of a large pod (listing
// 10,000 partitions touches a few MB). No memory-mapped reads: in WAL mode
// SQLite unmaps the file at the start of every read transaction that follows
// a commit, and each unmap interrupts every core the process runs on; under
// a steady stream of writes that cost more than the copies it saves, and a
// list of an unchanged database is served from this cache either way.
constexpr char kCacheSql[] = "PRAGMA cache_size = -32768";

absl::Status ConfigureWriter(Connection& conn) {
  ASSIGN_OR_RETURN(Statement stmt, conn.Prepare("PRAGMA journal_mode = WAL"));
  ASSIGN_OR_RETURN(bool row, stmt.Step());
  std::string mode = row ? stmt.ColumnText(0) : "";
  if (mode != "wal") {
    return absl::FailedPreconditionError(
        absl::StrCat(conn.path(), ": cannot use WAL journal mode (got \"", mode, "\")"));
  }
  RETURN_IF_ERROR(conn.Exec(kCacheSql));
  // FULL: the WAL is fsynced at every commit, which is what makes an
  // acknowledged Write durable (invariant 2).
  return conn.Exec("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON");
}

}  // namespace

class SqliteStore::Impl {
 public:
  Impl(StoreOptions options, std::unique_ptr<Connection> writer,
       std::vector<std::unique_ptr<Connection>> readers)
      : writer_(std::move(writer)),
        readers_(std::move(readers)),
        queue_(QueueOptions(options), [this](WriteQueue::Group& group) { RunGroup(group); }) {
    for (auto& reader : readers_) free_readers_.push_back(reader.get());
  }

  absl::Status Read(const std::function<absl::Status(ReadTxn&)>& fn) {
    Lease lease(this);
    // Before the snapshot, which the first read after BEGIN takes.
    const uint64_t epoch = membership_.epoch();
    RETURN_IF_ERROR(lease.conn->Exec("BEGIN"));
    SqliteTxn txn(lease.conn, &membership_, epoch);
    absl::Status status = fn(txn);
    absl::Status end = lease.conn->Exec("COMMIT");
    return status.ok() ? end : status;
  }

  WriteQueue& queue() { return queue_; }
  const WriteQueue& queue() const { return queue_; }

  absl::Status Backup(const std::string& path) {
    Lease lease(this);
    // Copy into a temporary name and rename: `path` is either the old file
    // or a complete copy, never half a copy.
    std::string tmp = path + ".tmp";
    std::remove(tmp.c_str());
    sqlite3* dest = nullptr;
    int rc =
        sqlite3_open_v2(tmp.c_str(), &dest, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
    absl::Status status;
    if (rc != SQLITE_OK) {
      status = SqliteStatus(dest, rc, absl::StrCat("backup: opening ", tmp));
    } else {
      sqlite3_backup* backup = sqlite3_backup_init(dest, "main", lease.conn->db(), "main");
      if (backup == nullptr) {
        status = SqliteStatus(dest, sqlite3_errcode(dest), absl::StrCat("backup to ", tmp));
      } else {
        rc = sqlite3_backup_step(backup, -1);
        int finish = sqlite3_backup_finish(backup);
        if (rc != SQLITE_DONE) {
          status = SqliteStatus(dest, rc, absl::StrCat("backup to ", tmp));
        } else if (finish != SQLITE_OK) {
          status = SqliteStatus(dest, finish, absl::StrCat("backup to ", tmp));
        }
      }
    }
    if (sqlite3_close(dest) != SQLITE_OK && status.ok()) {
      status = absl::InternalError(absl::StrCat("backup: closing ", tmp));
    }
    if (status.ok() && std::rename(tmp.c_str(), path.c_str()) != 0) {
      status = absl::InternalError(absl::StrCat("backup: renaming ", tmp, " to ", path));
    }
    if (!status.ok()) {
      std::remove(tmp.c_str());
      return status;
    }
    SyncParentDirectory(path);
    spdlog::info("storage: backup of {} written to {}", writer_->path(), path);
    return absl::OkStatus();
  }

  uint64_t membership_epoch() const { return membership_.epoch(); }

 private:
  static WriteQueueOptions QueueOptions(const StoreOptions& options) {
    WriteQueueOptions queue;
    queue.thread_name = "vipu-writer";
    queue.gather_window = absl::Microseconds(options.group_commit_window_us);
    return queue;
  }

  // A read connection borrowed from the pool; ends any open transaction.
  struct Lease {
    explicit Lease(Impl* impl) : impl(impl) {
      vipu::MutexLock lock(&impl->pool_mu_);
      impl->pool_mu_.Await(absl::Condition(impl, &Impl::HasFreeReader));
      conn = impl->free_readers_.back();
      impl->free_readers_.pop_back();
    }
    ~Lease() {
      if (!sqlite3_get_autocommit(conn->db())) conn->Exec("ROLLBACK").IgnoreError();
      vipu::MutexLock lock(&impl->pool_mu_);
      impl->free_readers_.push_back(conn);
    }
    Impl* impl;
    Connection* conn;
  };

  static void SyncParentDirectory(const std::string& path) {
    size_t slash = path.find_last_of('/');
    std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
    if (fd < 0) return;
    ::fsync(fd);
    ::close(fd);
  }

  // One transaction for the whole group, one SAVEPOINT per callback;
  // answers each callback after the COMMIT or ROLLBACK.
  void RunGroup(WriteQueue::Group& group) {
    Connection& conn = *writer_;
    const auto started = std::chrono::steady_clock::now();
    // Before the group's snapshot; the change (if any) ends after its
    // COMMIT or ROLLBACK, before any callback hears of the outcome.
    const uint64_t epoch = membership_.epoch();
    MembershipChange change(&membership_);
    std::vector<absl::Status> results(group.size());
    absl::Status begin = conn.Exec("BEGIN IMMEDIATE");
    if (!begin.ok()) {
      spdlog::error("storage: {}", std::string(begin.message()));
      results.assign(group.size(), begin);
    } else if (absl::Status lost = RunCallbacks(group, epoch, &change, &results); !lost.ok()) {
      spdlog::error("storage: {}", std::string(lost.message()));
    } else {
      Commit(group, started, &results);
    }
    change.Finish();
    for (size_t i = 0; i < group.size(); ++i) group.Answer(i, std::move(results[i]));
  }

  // Runs each callback of the group in its own SAVEPOINT, its outcome in
  // (*results)[i]. Returns an error when SQLite rolled back the whole
  // transaction, which every write of the group then has for its answer.
  absl::Status RunCallbacks(WriteQueue::Group& group, uint64_t epoch, MembershipChange* change,
                            std::vector<absl::Status>* results) {
    Connection& conn = *writer_;
    absl::Status lost;
    for (size_t i = 0; i < group.size(); ++i) {
      if (!lost.ok()) {
        (*results)[i] = lost;
        continue;
      }
      absl::Status status = conn.Exec("SAVEPOINT write");
      if (status.ok()) {
        SqliteTxn txn(&conn, &membership_, epoch, change);
        status = group.Run(i, txn);
        if (sqlite3_get_autocommit(conn.db())) {
          // An I/O error or the like ended the transaction: nothing of the
          // group so far survives. The cause keeps its code, so that a full
          // disk reads as one (RESOURCE_EXHAUSTED) to every write of the group.
          lost = absl::Status(status.ok() ? absl::StatusCode::kInternal : status.code(),
                              absl::StrCat("write transaction rolled back by SQLite: ",
                                           status.ok() ? "" : status.message()));
          for (size_t j = 0; j <= i; ++j) {
            if ((*results)[j].ok()) (*results)[j] = lost;
          }
          if (!status.ok()) (*results)[i] = status;
          continue;
        }
        if (status.ok()) status = conn.Exec("RELEASE write");
        if (!status.ok()) conn.Exec("ROLLBACK TO write; RELEASE write").IgnoreError();
      }
      (*results)[i] = status;
    }
    return lost;
  }

  // Commits the group's transaction, or rolls it back when every callback
  // failed; a failed COMMIT becomes the answer of every write that was OK.
  void Commit(WriteQueue::Group& group, std::chrono::steady_clock::time_point started,
              std::vector<absl::Status>* results) {
    Connection& conn = *writer_;
    bool any_ok = false;
    for (const absl::Status& s : *results) any_ok = any_ok || s.ok();
    if (!any_ok) {
      conn.Exec("ROLLBACK").IgnoreError();
    } else if (absl::Status commit = conn.Exec("COMMIT"); commit.ok()) {
      spdlog::debug("storage: committed a group of {} writes", group.size());
      group.Committed(absl::FromChrono(std::chrono::steady_clock::now() - started), group.size());
    } else {
      spdlog::error("storage: commit of {} writes failed: {}", group.size(),
                    std::string(commit.message()));
      if (!sqlite3_get_autocommit(conn.db())) conn.Exec("ROLLBACK").IgnoreError();
      for (absl::Status& s : *results) {
        if (s.ok()) s = commit;
      }
    }
  }

  // Declared before the connections: the writer thread uses it until it stops.
  MembershipCache membership_;
  std::unique_ptr<Connection> writer_;
  std::vector<std::unique_ptr<Connection>> readers_;

  bool HasFreeReader() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(pool_mu_) {
    return !free_readers_.empty();
  }

  vipu::Mutex pool_mu_;
  std::vector<Connection*> free_readers_ ABSL_GUARDED_BY(pool_mu_);

  // Last: destroyed first, so the writer thread has answered every queued
  // write and stopped before the connections and the cache go.
  WriteQueue queue_;
};

absl::StatusOr<std::unique_ptr<SqliteStore>> SqliteStore::Open(const std::string& path,
                                                               StoreOptions options) {
  RETURN_IF_ERROR(ValidateOptions(options));
  absl::StatusOr<std::unique_ptr<Connection>> writer =
      Connection::Open(path, Connection::Mode::kReadWrite, options.busy_timeout_ms);
  if (!writer.ok()) return writer.status();
  if (absl::Status s = CheckIntegrity(**writer); !s.ok()) {
    spdlog::error("storage: {}", std::string(s.message()));
    return s;
  }
  RETURN_IF_ERROR(ConfigureWriter(**writer));
  if (absl::Status s = MigrateSchema(**writer, SchemaMigrations()); !s.ok()) {
    spdlog::error("storage: {}", std::string(s.message()));
    return s;
  }
  std::vector<std::unique_ptr<Connection>> readers;
  for (int i = 0; i < options.read_connections; ++i) {
    absl::StatusOr<std::unique_ptr<Connection>> reader =
        Connection::Open(path, Connection::Mode::kReadOnly, options.busy_timeout_ms);
    if (!reader.ok()) return reader.status();
    RETURN_IF_ERROR((*reader)->Exec(kCacheSql));
    readers.push_back(*std::move(reader));
  }
  spdlog::info("storage: opened {} (schema version {}, {} read connections)", path, kSchemaVersion,
               options.read_connections);
  return std::unique_ptr<SqliteStore>(
      new SqliteStore(std::make_unique<Impl>(options, *std::move(writer), std::move(readers))));
}

SqliteStore::SqliteStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SqliteStore::~SqliteStore() = default;

absl::Status SqliteStore::Read(const std::function<absl::Status(ReadTxn&)>& fn) {
  return impl_->Read(fn);
}
absl::Status SqliteStore::Write(const std::function<absl::Status(WriteTxn&)>& fn) {
  return impl_->queue().Write(fn);
}
void SqliteStore::WriteAsync(std::function<absl::Status(WriteTxn&)> fn,
                             std::function<void(absl::Status)> done) {
  impl_->queue().WriteAsync(std::move(fn), std::move(done));
}
absl::Status SqliteStore::Backup(const std::string& path) { return impl_->Backup(path); }
uint64_t SqliteStore::commits() const { return impl_->queue().commits(); }
uint64_t SqliteStore::writes() const { return impl_->queue().writes(); }
uint64_t SqliteStore::pending_writes() const { return impl_->queue().pending_writes(); }
uint64_t SqliteStore::MembershipEpochForTesting() const { return impl_->membership_epoch(); }
void SqliteStore::SetCommitObserver(std::function<void(double seconds, size_t writes)> observer) {
  impl_->queue().SetCommitObserver(std::move(observer));
}

}  // namespace vipu::storage
