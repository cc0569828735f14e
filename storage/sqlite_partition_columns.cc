// The partitions table's columns, each with how its field is bound and read.
#include "storage/sqlite_partition_columns.h"

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/absl_view.h"
#include "storage/string_list_codec.h"

namespace vipu::storage {
namespace {

using fabric::Partition;

struct Column {
  const char* name;
  void (*bind)(Statement& stmt, int index, const Partition& p);
  absl::Status (*read)(const Statement& row, int col, Partition* p);
};

template <std::string Partition::*kField>
void BindText(Statement& stmt, int index, const Partition& p) {
  stmt.BindText(index, p.*kField);
}
template <std::string Partition::*kField>
absl::Status ReadText(const Statement& row, int col, Partition* p) {
  p->*kField = row.ColumnView(col);
  return absl::OkStatus();
}
template <std::string Partition::*kField>
constexpr Column Text(const char* name) {
  return {name, &BindText<kField>, &ReadText<kField>};
}

// Integers, flags (0 or 1) and enums (their wire numbers).
template <auto kField>
void BindNumber(Statement& stmt, int index, const Partition& p) {
  stmt.BindInt(index, static_cast<int64_t>(p.*kField));
}
template <auto kField>
absl::Status ReadNumber(const Statement& row, int col, Partition* p) {
  using Field = std::remove_reference_t<decltype(p->*kField)>;
  p->*kField = static_cast<Field>(row.ColumnInt(col));
  return absl::OkStatus();
}
template <auto kField>
constexpr Column Number(const char* name) {
  return {name, &BindNumber<kField>, &ReadNumber<kField>};
}

// NULL when the partition is in no allocation: the column is a foreign key.
void BindAllocation(Statement& stmt, int index, const Partition& p) {
  stmt.BindTextOrNull(index, p.allocation_id);
}

void BindErrors(Statement& stmt, int index, const Partition& p) {
  stmt.BindText(index, EncodeStringList(p.errors));
}
// After the id, which the message names.
absl::Status ReadErrors(const Statement& row, int col, Partition* p) {
  std::string_view text = row.ColumnView(col);
  if (text == "[]") return absl::OkStatus();  // the common case, without the parser
  absl::StatusOr<std::vector<std::string>> errors = DecodeStringList(text);
  if (!errors.ok()) {
    return absl::InternalError(absl::StrCat(
        "partition ", p->id, ": errors column is corrupt: ", errors.status().message()));
  }
  p->errors = *std::move(errors);
  return absl::OkStatus();
}

// In the order of the SQL: `id` first (?1 in every statement).
constexpr Column kColumns[] = {
    Text<&Partition::id>("id"),
    Text<&Partition::cluster_id>("cluster_id"),
    {"allocation_id", &BindAllocation, &ReadText<&Partition::allocation_id>},
    Text<&Partition::owner>("owner"),
    Number<&Partition::routing>("routing"),
    Number<&Partition::gw_routing>("gw_routing"),
    Number<&Partition::sync_type>("sync_type"),
    Number<&Partition::num_gcds>("num_gcds"),
    Number<&Partition::num_ilds>("num_ilds"),
    Number<&Partition::num_replicas>("num_replicas"),
    Number<&Partition::reconfigurable>("reconfigurable"),
    Number<&Partition::disable_auto_reset>("disable_auto_reset"),
    Number<&Partition::relocatable>("relocatable"),
    Number<&Partition::ready_state>("ready_state"),
    Number<&Partition::operation_state>("operation_state"),
    {"errors", &BindErrors, &ReadErrors},
    Number<&Partition::generation>("generation"),
    Number<&Partition::max_auto_reset_retries>("max_auto_reset_retries"),
    Number<&Partition::auto_reset_retry_count>("auto_reset_retry_count"),
    Number<&Partition::last_auto_reset_unix_ms>("last_auto_reset_unix_ms"),
    Number<&Partition::created_unix_ms>("created_unix_ms"),
    Number<&Partition::updated_unix_ms>("updated_unix_ms"),
};
constexpr size_t kColumnCount = sizeof(kColumns) / sizeof(kColumns[0]);

std::string ColumnList() {
  std::string out;
  for (size_t i = 0; i < kColumnCount; ++i)
    absl::StrAppend(&out, i == 0 ? "" : ", ", kColumns[i].name);
  return out;
}

}  // namespace

std::string SelectPartitionsSql(std::string_view rest) {
  static const std::string* const columns = new std::string(ColumnList());
  return absl::StrCat("SELECT ", *columns, " FROM partitions ", AbslView(rest));
}

const std::string& InsertPartitionSql() {
  static const std::string* const sql = [] {
    std::string values;
    for (size_t i = 0; i < kColumnCount; ++i) absl::StrAppend(&values, i == 0 ? "?" : ", ?", i + 1);
    return new std::string(
        absl::StrCat("INSERT INTO partitions (", ColumnList(), ") VALUES (", values, ")"));
  }();
  return *sql;
}

const std::string& UpdatePartitionSql() {
  static const std::string* const sql = [] {
    std::string sets;
    for (size_t i = 1; i < kColumnCount; ++i) {
      absl::StrAppend(&sets, i == 1 ? "" : ", ", kColumns[i].name, " = ?", i + 1);
    }
    return new std::string(absl::StrCat("UPDATE partitions SET ", sets, " WHERE id = ?1"));
  }();
  return *sql;
}

void BindPartitionRow(Statement& stmt, const Partition& p) {
  for (size_t i = 0; i < kColumnCount; ++i) kColumns[i].bind(stmt, static_cast<int>(i) + 1, p);
}

absl::Status ReadPartitionRow(const Statement& row, Partition* p) {
  for (size_t i = 0; i < kColumnCount; ++i) {
    if (absl::Status s = kColumns[i].read(row, static_cast<int>(i), p); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace vipu::storage
