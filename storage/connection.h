// One SQLite connection and the prepared statements cached on it. A
// Connection is used by one thread at a time (the writer thread, or whoever
// holds it from the read pool); it does no locking of its own. It owns its
// sqlite3 handle and the statements it caches.
#ifndef VIPU_STORAGE_CONNECTION_H_
#define VIPU_STORAGE_CONNECTION_H_

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/absl_view.h"

namespace vipu::storage {

// Maps an SQLite result code to a status: PRIMARY KEY/UNIQUE violations are
// ALREADY_EXISTS, FOREIGN KEY violations FAILED_PRECONDITION, a full disk
// (IsDiskFull, with the system errno of `db`) RESOURCE_EXHAUSTED, anything
// else INTERNAL. The message is "<context>: <sqlite message>", except for a
// full disk, whose message names the database file and says that its disk
// is full before SQLite's own words.
absl::Status SqliteStatus(sqlite3* db, int rc, std::string_view context);

// True when an extended SQLite result code means that the disk ran out of
// space: SQLITE_FULL, or an SQLITE_IOERR_* whose system errno (from
// sqlite3_system_errno) is ENOSPC, as when fsync or ftruncate reports it.
bool IsDiskFull(int extended_code, int system_errno);

class Connection;

// A prepared statement borrowed from a Connection's cache. Returned to the
// cache (reset, bindings cleared) when destroyed. Bind indexes start at 1,
// column indexes at 0. Must not outlive its Connection; used only by the
// thread that holds the connection.
class Statement {
 public:
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&&) = delete;
  Statement(const Statement&) = delete;
  ~Statement();

  Statement& BindInt(int index, int64_t value);
  // Copies the bytes (any content, including NUL and invalid UTF-8).
  Statement& BindText(int index, std::string_view value);
  // Binds NULL for an empty string (optional foreign keys).
  Statement& BindTextOrNull(int index, std::string_view value);

  // Advances: true when a row is available, false when done.
  absl::StatusOr<bool> Step();
  // Steps to completion, ignoring rows.
  absl::Status Run();

  int64_t ColumnInt(int col) const;
  // "" for NULL.
  std::string ColumnText(int col) const;
  // Valid until the next Step or the Statement's end; "" for NULL.
  std::string_view ColumnView(int col) const;

 private:
  friend class Connection;
  // `in_use` is the cache entry's flag, or nullptr for a one-off statement
  // that is finalized on destruction.
  Statement(Connection* conn, sqlite3_stmt* stmt, bool* in_use);

  Connection* conn_;
  sqlite3_stmt* stmt_;
  bool* in_use_;
  int bind_error_ = SQLITE_OK;
};

class Connection {
 public:
  enum class Mode { kReadWrite, kReadOnly };

  // Opens (read-write creates the file). Sets the busy timeout; no other
  // pragma (the Store decides those).
  static absl::StatusOr<std::unique_ptr<Connection>> Open(const std::string& path, Mode mode,
                                                          int busy_timeout_ms = 5000);
  ~Connection();  // finalizes every cached statement and closes
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  sqlite3* db() const { return db_; }
  const std::string& path() const { return path_; }

  // Runs one or more statements that return no rows we need. A single
  // statement (no ';') is prepared once and kept in the cache.
  absl::Status Exec(std::string_view sql);
  // A statement from the cache keyed by the SQL text; prepared on first use.
  // If the cached one is already in use (nested use), a one-off copy is
  // prepared instead.
  absl::StatusOr<Statement> Prepare(std::string_view sql);
  // Runs a query whose first row's first column is an integer.
  absl::StatusOr<int64_t> QueryInt(std::string_view sql);
  // Runs a query with one text parameter (?1): the first row's first column
  // as text, or "" when there is no row.
  absl::StatusOr<std::string> QueryText(std::string_view sql, std::string_view param);

  int64_t changes() const { return sqlite3_changes64(db_); }
  size_t CachedStatementsForTesting() const { return cache_.size(); }

 private:
  friend class Statement;
  struct Cached {
    sqlite3_stmt* stmt = nullptr;
    bool in_use = false;
  };
  Connection(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}

  sqlite3* db_;
  std::string path_;
  // Node-based: entries do not move, so Statements may point at in_use.
  std::unordered_map<std::string, Cached> cache_;
};

// SAVEPOINT that rolls back unless released: makes a multi-statement change
// all-or-nothing. Borrows `conn`, which must outlive it; used only by the
// thread that holds the connection.
class Savepoint {
 public:
  Savepoint(Connection* conn, std::string name);
  ~Savepoint();
  Savepoint(const Savepoint&) = delete;
  Savepoint& operator=(const Savepoint&) = delete;

  const absl::Status& status() const { return status_; }
  absl::Status Release();

 private:
  Connection* conn_;
  std::string name_;
  absl::Status status_;
  bool done_ = false;
};

}  // namespace vipu::storage

#endif  // VIPU_STORAGE_CONNECTION_H_
