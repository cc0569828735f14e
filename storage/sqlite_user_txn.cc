// Users and partition shares of the secure mode in SqliteTxn (storage/sqlite_store.h).
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/absl_view.h"
#include "storage/connection.h"
#include "storage/sqlite_store.h"
#include "storage/string_list_codec.h"

namespace vipu::storage {
namespace {

constexpr char kUserColumns[] = "id, key_hash, is_admin, allocations, created_unix_ms";

absl::StatusOr<UserRecord> UserFromRow(const Statement& row) {
  UserRecord u;
  u.id = row.ColumnText(0);
  u.key_hash = row.ColumnText(1);
  u.is_admin = row.ColumnInt(2) != 0;
  auto allocations = DecodeStringList(row.ColumnView(3));
  if (!allocations.ok()) {
    return absl::InternalError(absl::StrCat(
        "user ", u.id, ": allocations column is corrupt: ", allocations.status().message()));
  }
  u.allocations = *std::move(allocations);
  u.created_unix_ms = row.ColumnInt(4);
  return u;
}

}  // namespace

absl::StatusOr<UserRecord> SqliteTxn::GetUser(std::string_view id) {
  ASSIGN_OR_RETURN(Statement stmt, conn_->Prepare(absl::StrCat("SELECT ", kUserColumns,
                                                               " FROM users WHERE id = ?1")));
  stmt.BindText(1, id);
  ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return absl::NotFoundError(absl::StrCat("user ", AbslView(id), " not found"));
  return UserFromRow(stmt);
}

absl::StatusOr<std::vector<UserRecord>> SqliteTxn::ListUsers() {
  ASSIGN_OR_RETURN(Statement stmt, conn_->Prepare(absl::StrCat("SELECT ", kUserColumns,
                                                               " FROM users ORDER BY id")));
  std::vector<UserRecord> out;
  for (;;) {
    ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) break;
    ASSIGN_OR_RETURN(UserRecord u, UserFromRow(stmt));
    out.push_back(std::move(u));
  }
  return out;
}

absl::StatusOr<int64_t> SqliteTxn::CountUsers() {
  return conn_->QueryInt("SELECT COUNT(*) FROM users");
}

absl::StatusOr<bool> SqliteTxn::IsPartitionShared(std::string_view partition_id) {
  ASSIGN_OR_RETURN(Statement stmt,
                   conn_->Prepare("SELECT 1 FROM partition_shares WHERE partition_id = ?1"));
  stmt.BindText(1, partition_id);
  return stmt.Step();
}

absl::StatusOr<std::set<std::string>> SqliteTxn::SharedPartitions() {
  ASSIGN_OR_RETURN(Statement stmt, conn_->Prepare("SELECT partition_id FROM partition_shares"));
  std::set<std::string> out;
  for (;;) {
    ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) break;
    out.insert(stmt.ColumnText(0));
  }
  return out;
}

absl::Status SqliteTxn::InsertUser(const UserRecord& user) {
  ASSIGN_OR_RETURN(Statement stmt, conn_->Prepare(absl::StrCat("INSERT INTO users (", kUserColumns,
                                                               ") VALUES (?1, ?2, ?3, ?4, ?5)")));
  stmt.BindText(1, user.id)
      .BindText(2, user.key_hash)
      .BindInt(3, user.is_admin ? 1 : 0)
      .BindText(4, EncodeStringList(user.allocations))
      .BindInt(5, user.created_unix_ms);
  absl::Status s = stmt.Run();
  if (absl::IsAlreadyExists(s)) {
    return absl::AlreadyExistsError(absl::StrCat("user ", user.id, " already exists"));
  }
  return s;
}

absl::Status SqliteTxn::DeleteUser(std::string_view id) {
  ASSIGN_OR_RETURN(Statement stmt, conn_->Prepare("DELETE FROM users WHERE id = ?1"));
  stmt.BindText(1, id);
  RETURN_IF_ERROR(stmt.Run());
  if (conn_->changes() == 0) {
    return absl::NotFoundError(absl::StrCat("user ", AbslView(id), " not found"));
  }
  return absl::OkStatus();
}

absl::Status SqliteTxn::UpdateUser(const UserRecord& user) {
  ASSIGN_OR_RETURN(
      Statement stmt,
      conn_->Prepare(
          "UPDATE users SET key_hash = ?2, is_admin = ?3, allocations = ?4 WHERE id = ?1"));
  stmt.BindText(1, user.id)
      .BindText(2, user.key_hash)
      .BindInt(3, user.is_admin ? 1 : 0)
      .BindText(4, EncodeStringList(user.allocations));
  RETURN_IF_ERROR(stmt.Run());
  if (conn_->changes() == 0) {
    return absl::NotFoundError(absl::StrCat("user ", user.id, " not found"));
  }
  return absl::OkStatus();
}

absl::Status SqliteTxn::SetPartitionShared(std::string_view partition_id, bool shared) {
  ASSIGN_OR_RETURN(
      Statement stmt,
      conn_->Prepare(shared ? "INSERT OR IGNORE INTO partition_shares (partition_id) VALUES (?1)"
                            : "DELETE FROM partition_shares WHERE partition_id = ?1"));
  stmt.BindText(1, partition_id);
  absl::Status s = stmt.Run();
  if (absl::IsFailedPrecondition(s)) {
    return absl::NotFoundError(
        absl::StrCat("partition ", AbslView(partition_id), " not found: ", s.message()));
  }
  return s;
}

}  // namespace vipu::storage
