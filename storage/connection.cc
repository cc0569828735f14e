// Connection and Statement: one SQLite connection, its cached prepared statements and binds.
#include "storage/connection.h"

#include <cerrno>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace vipu::storage {

bool IsDiskFull(int extended_code, int system_errno) {
  if ((extended_code & 0xff) == SQLITE_FULL) return true;
  return (extended_code & 0xff) == SQLITE_IOERR && system_errno == ENOSPC;
}

absl::Status SqliteStatus(sqlite3* db, int rc, std::string_view context) {
  if (rc == SQLITE_OK || rc == SQLITE_DONE || rc == SQLITE_ROW) return absl::OkStatus();
  // Extended codes are on for our handles; fall back to the handle's code
  // when a caller passes a primary one.
  int extended = rc;
  if (db != nullptr && (rc & 0xff) == rc) {
    int from_db = sqlite3_extended_errcode(db);
    if ((from_db & 0xff) == rc) extended = from_db;
  }
  std::string message = absl::StrCat(AbslView(context), ": ",
                                     db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  if (IsDiskFull(extended, db != nullptr ? sqlite3_system_errno(db) : 0)) {
    // Only the operator can fix a full disk: the words say which one and
    // what to do; SQLite's own follow for whoever digs deeper.
    const char* file = db != nullptr ? sqlite3_db_filename(db, "main") : nullptr;
    const std::string database =
        file != nullptr && *file != '\0' ? absl::StrCat("the database ", file) : "the database";
    return absl::ResourceExhaustedError(absl::StrCat(
        "the disk of ", database, " is full; free space there and retry (", message, ")"));
  }
  switch (extended) {
    case SQLITE_CONSTRAINT_PRIMARYKEY:
    case SQLITE_CONSTRAINT_UNIQUE:
      return absl::AlreadyExistsError(message);
    case SQLITE_CONSTRAINT_FOREIGNKEY:
      return absl::FailedPreconditionError(message);
    default:
      return absl::InternalError(message);
  }
}

Statement::Statement(Connection* conn, sqlite3_stmt* stmt, bool* in_use)
    : conn_(conn), stmt_(stmt), in_use_(in_use) {}

Statement::Statement(Statement&& other) noexcept
    : conn_(other.conn_),
      stmt_(std::exchange(other.stmt_, nullptr)),
      in_use_(other.in_use_),
      bind_error_(other.bind_error_) {}

Statement::~Statement() {
  if (stmt_ == nullptr) return;
  if (in_use_ == nullptr) {
    sqlite3_finalize(stmt_);
    return;
  }
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  *in_use_ = false;
}

Statement& Statement::BindInt(int index, int64_t value) {
  int rc = sqlite3_bind_int64(stmt_, index, value);
  if (rc != SQLITE_OK && bind_error_ == SQLITE_OK) bind_error_ = rc;
  return *this;
}

Statement& Statement::BindText(int index, std::string_view value) {
  // A non-null pointer even for "", so that "" is stored as '' and not NULL.
  int rc = sqlite3_bind_text64(stmt_, index, value.empty() ? "" : value.data(), value.size(),
                               SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc != SQLITE_OK && bind_error_ == SQLITE_OK) bind_error_ = rc;
  return *this;
}

Statement& Statement::BindTextOrNull(int index, std::string_view value) {
  if (!value.empty()) return BindText(index, value);
  int rc = sqlite3_bind_null(stmt_, index);
  if (rc != SQLITE_OK && bind_error_ == SQLITE_OK) bind_error_ = rc;
  return *this;
}

absl::StatusOr<bool> Statement::Step() {
  if (bind_error_ != SQLITE_OK) {
    return absl::InternalError(absl::StrCat("binding parameters of `", sqlite3_sql(stmt_),
                                            "`: ", sqlite3_errstr(bind_error_)));
  }
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return SqliteStatus(conn_->db(), rc, sqlite3_sql(stmt_));
}

absl::Status Statement::Run() {
  while (true) {
    ASSIGN_OR_RETURN(bool row, Step());
    if (!row) return absl::OkStatus();
  }
}

int64_t Statement::ColumnInt(int col) const { return sqlite3_column_int64(stmt_, col); }

std::string Statement::ColumnText(int col) const { return std::string(ColumnView(col)); }

std::string_view Statement::ColumnView(int col) const {
  // column_text before column_bytes, as SQLite documents.
  const unsigned char* text = sqlite3_column_text(stmt_, col);
  if (text == nullptr) return std::string_view();
  return std::string_view(reinterpret_cast<const char*>(text),
                          static_cast<size_t>(sqlite3_column_bytes(stmt_, col)));
}

absl::StatusOr<std::unique_ptr<Connection>> Connection::Open(const std::string& path, Mode mode,
                                                             int busy_timeout_ms) {
  int flags = SQLITE_OPEN_NOMUTEX;
  flags |=
      mode == Mode::kReadOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr);
  if (rc != SQLITE_OK) {
    absl::Status status = absl::FailedPreconditionError(absl::StrCat(
        "opening database ", path, ": ", db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc)));
    sqlite3_close_v2(db);
    return status;
  }
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, busy_timeout_ms);
  return std::unique_ptr<Connection>(new Connection(db, path));
}

Connection::~Connection() {
  for (auto& [sql, cached] : cache_) sqlite3_finalize(cached.stmt);
  sqlite3_close_v2(db_);
}

absl::Status Connection::Exec(std::string_view sql) {
  // One statement (BEGIN, SAVEPOINT, RELEASE, COMMIT on every write): from
  // the cache, since parsing it again each time is a measurable cost.
  if (sql.find(';') == std::string_view::npos) {
    ASSIGN_OR_RETURN(Statement stmt, Prepare(sql));
    return stmt.Run();
  }
  std::string text(sql);
  char* error = nullptr;
  int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &error);
  sqlite3_free(error);  // the handle's errmsg carries the same text
  return SqliteStatus(db_, rc, text);
}

absl::StatusOr<Statement> Connection::Prepare(std::string_view sql) {
  auto [it, inserted] = cache_.try_emplace(std::string(sql));
  Cached& cached = it->second;
  if (!inserted && !cached.in_use) {
    cached.in_use = true;
    return Statement(this, cached.stmt, &cached.in_use);
  }
  sqlite3_stmt* stmt = nullptr;
  int flags = inserted ? SQLITE_PREPARE_PERSISTENT : 0;
  int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()), flags, &stmt, nullptr);
  if (rc != SQLITE_OK) {
    if (inserted) cache_.erase(it);
    return SqliteStatus(db_, rc, absl::StrCat("preparing `", AbslView(sql), "`"));
  }
  if (!inserted) return Statement(this, stmt, nullptr);  // nested use: one-off copy
  cached.stmt = stmt;
  cached.in_use = true;
  return Statement(this, stmt, &cached.in_use);
}

absl::StatusOr<int64_t> Connection::QueryInt(std::string_view sql) {
  ASSIGN_OR_RETURN(Statement stmt, Prepare(sql));
  ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return absl::InternalError(absl::StrCat("`", AbslView(sql), "` returned no row"));
  return stmt.ColumnInt(0);
}

absl::StatusOr<std::string> Connection::QueryText(std::string_view sql, std::string_view param) {
  ASSIGN_OR_RETURN(Statement stmt, Prepare(sql));
  stmt.BindText(1, param);
  ASSIGN_OR_RETURN(bool row, stmt.Step());
  return row ? stmt.ColumnText(0) : std::string();
}

Savepoint::Savepoint(Connection* conn, std::string name) : conn_(conn), name_(std::move(name)) {
  status_ = conn_->Exec(absl::StrCat("SAVEPOINT ", name_));
  if (!status_.ok()) done_ = true;
}

Savepoint::~Savepoint() {
  if (done_) return;
  // Undo everything since the savepoint, then drop it from the stack.
  conn_->Exec(absl::StrCat("ROLLBACK TO ", name_, "; RELEASE ", name_)).IgnoreError();
}

absl::Status Savepoint::Release() {
  if (done_) return status_;
  done_ = true;
  return conn_->Exec(absl::StrCat("RELEASE ", name_));
}

}  // namespace vipu::storage
