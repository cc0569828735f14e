// The database schema as a list of forward migrations. Step N moves a
// database from user_version N-1 to N; step 1 creates everything. Add a step
// (never edit a shipped one) and bump kSchemaVersion in store.h.
#ifndef VIPU_STORAGE_SCHEMA_H_
#define VIPU_STORAGE_SCHEMA_H_

#include <vector>

#include "absl/status/status.h"
#include "storage/connection.h"

namespace vipu::storage {

struct Migration {
  int version;      // user_version after this step
  const char* sql;  // one or more statements
};

// The steps of this binary, versions 1..kSchemaVersion in order.
const std::vector<Migration>& SchemaMigrations();

// Reads PRAGMA user_version and applies every later step, all in one
// BEGIN IMMEDIATE transaction together with the new user_version (a crash
// mid-way leaves the old version intact).
// FAILED_PRECONDITION when the file's version is newer than the last step.
absl::Status MigrateSchema(Connection& conn, const std::vector<Migration>& steps);

}  // namespace vipu::storage

#endif  // VIPU_STORAGE_SCHEMA_H_
