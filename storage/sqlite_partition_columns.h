// The columns of the partitions table and the field of fabric::Partition each
// one holds: the one list that SqliteTxn's reads (storage/sqlite_read_txn.cc)
// and writes (storage/sqlite_write_txn.cc) share, so that a persisted field
// is named, bound and read in one place. The table itself is the schema's
// (storage/schema.cc); a partition's IPUs are rows of partition_ipus, not
// columns here.
//
// A new persisted field: its column in a new migration step (schema.cc, and
// kSchemaVersion in store.h), and one entry at the end of the list in
// sqlite_partition_columns.cc.
//
// Every function is thread-safe; the SQL is built once.
#ifndef VIPU_STORAGE_SQLITE_PARTITION_COLUMNS_H_
#define VIPU_STORAGE_SQLITE_PARTITION_COLUMNS_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "fabric/types.h"
#include "storage/connection.h"

namespace vipu::storage {

// "SELECT <every column> FROM partitions <rest>": rows for ReadPartitionRow.
std::string SelectPartitionsSql(std::string_view rest);
// "INSERT INTO partitions (<every column>) VALUES (?1, ..., ?N)".
const std::string& InsertPartitionSql();
// "UPDATE partitions SET <every column but id> WHERE id = ?1".
const std::string& UpdatePartitionSql();

// Binds every field of `p` as ?1..?N, as the INSERT and UPDATE above expect.
void BindPartitionRow(Statement& stmt, const fabric::Partition& p);
// Fills `p` from a row of SelectPartitionsSql. INTERNAL, naming the
// partition, when a column holds what no write put there.
absl::Status ReadPartitionRow(const Statement& row, fabric::Partition* p);

}  // namespace vipu::storage

#endif  // VIPU_STORAGE_SQLITE_PARTITION_COLUMNS_H_
