// The SQL of each schema migration step (v1: the object model, v2: users and shares).
#include "storage/schema.h"

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "spdlog/spdlog.h"

namespace vipu::storage {
namespace {

// Version 1. Enums are stored as their wire numbers. `position` keeps the
// order of a cluster's / allocation's agents and of a partition's IPUs.
// UNIQUE(agent_id, ipu) on partition_ipus is invariant 1: an IPU is in at
// most one partition. The primary keys that start with a parent id are the
// indexes for "rows of this parent"; the extra indexes serve the lookups and
// the foreign-key checks on delete.
constexpr char kSchemaV1[] = R"sql(
CREATE TABLE agents (
  id TEXT NOT NULL PRIMARY KEY,
  host TEXT NOT NULL,
  port INTEGER NOT NULL,
  machine_type INTEGER NOT NULL,
  created INTEGER NOT NULL
) WITHOUT ROWID, STRICT;

CREATE TABLE clusters (
  id TEXT NOT NULL PRIMARY KEY,
  num_ilds INTEGER NOT NULL,
  topology INTEGER NOT NULL,
  cluster_topology INTEGER NOT NULL
) WITHOUT ROWID, STRICT;

CREATE TABLE cluster_agents (
  cluster_id TEXT NOT NULL REFERENCES clusters(id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  agent_id TEXT NOT NULL UNIQUE REFERENCES agents(id),
  PRIMARY KEY (cluster_id, position)
) WITHOUT ROWID, STRICT;

CREATE TABLE allocations (
  id TEXT NOT NULL PRIMARY KEY,
  cluster_id TEXT NOT NULL REFERENCES clusters(id)
) WITHOUT ROWID, STRICT;
CREATE INDEX allocations_by_cluster ON allocations(cluster_id);

CREATE TABLE allocation_agents (
  allocation_id TEXT NOT NULL REFERENCES allocations(id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  agent_id TEXT NOT NULL UNIQUE REFERENCES agents(id),
  PRIMARY KEY (allocation_id, position)
) WITHOUT ROWID, STRICT;

CREATE TABLE partitions (
  id TEXT NOT NULL PRIMARY KEY,
  cluster_id TEXT NOT NULL REFERENCES clusters(id),
  allocation_id TEXT REFERENCES allocations(id),
  owner TEXT NOT NULL,
  routing INTEGER NOT NULL,
  gw_routing INTEGER NOT NULL,
  sync_type INTEGER NOT NULL,
  num_gcds INTEGER NOT NULL,
  num_ilds INTEGER NOT NULL,
  num_replicas INTEGER NOT NULL,
  reconfigurable INTEGER NOT NULL,
  disable_auto_reset INTEGER NOT NULL,
  relocatable INTEGER NOT NULL,
  ready_state INTEGER NOT NULL,
  operation_state INTEGER NOT NULL,
  errors TEXT NOT NULL,
  generation INTEGER NOT NULL,
  max_auto_reset_retries INTEGER NOT NULL,
  auto_reset_retry_count INTEGER NOT NULL,
  last_auto_reset_unix_ms INTEGER NOT NULL,
  created_unix_ms INTEGER NOT NULL,
  updated_unix_ms INTEGER NOT NULL
) WITHOUT ROWID, STRICT;
CREATE INDEX partitions_by_allocation ON partitions(allocation_id);
CREATE INDEX partitions_by_cluster ON partitions(cluster_id);

CREATE TABLE partition_ipus (
  partition_id TEXT NOT NULL REFERENCES partitions(id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  agent_id TEXT NOT NULL REFERENCES agents(id),
  ipu INTEGER NOT NULL,
  ild INTEGER NOT NULL,
  ild_routing INTEGER NOT NULL,
  topology_id INTEGER NOT NULL,
  routing_id INTEGER NOT NULL,
  PRIMARY KEY (partition_id, position),
  UNIQUE (agent_id, ipu)
) WITHOUT ROWID, STRICT;

CREATE TABLE meta (
  key TEXT NOT NULL PRIMARY KEY,
  value INTEGER NOT NULL
) WITHOUT ROWID, STRICT;
INSERT INTO meta (key, value) VALUES ('generation', 0);
)sql";

// Version 2: users of the secure mode (access keys only as salted hashes;
// `allocations` is a string list as in partitions.errors, not a foreign key:
// removing an allocation leaves a dangling grant that grants nothing) and the
// partitions their owners shared.
constexpr char kSchemaV2[] = R"sql(
CREATE TABLE users (
  id TEXT NOT NULL PRIMARY KEY,
  key_hash TEXT NOT NULL,
  is_admin INTEGER NOT NULL,
  allocations TEXT NOT NULL,
  created_unix_ms INTEGER NOT NULL
) WITHOUT ROWID, STRICT;

CREATE TABLE partition_shares (
  partition_id TEXT NOT NULL PRIMARY KEY REFERENCES partitions(id) ON DELETE CASCADE
) WITHOUT ROWID, STRICT;
)sql";

}  // namespace

const std::vector<Migration>& SchemaMigrations() {
  static const std::vector<Migration> steps = {{1, kSchemaV1}, {2, kSchemaV2}};
  return steps;
}

absl::Status MigrateSchema(Connection& conn, const std::vector<Migration>& steps) {
  int latest = steps.empty() ? 0 : steps.back().version;
  // BEGIN IMMEDIATE before reading the version so that two processes opening
  // the same new file do not both run step 1.
  RETURN_IF_ERROR(conn.Exec("BEGIN IMMEDIATE"));
  absl::StatusOr<int64_t> current = conn.QueryInt("PRAGMA user_version");
  if (!current.ok() || *current >= latest) {
    conn.Exec("ROLLBACK").IgnoreError();
    if (!current.ok()) return current.status();
    if (*current > latest) {
      return absl::FailedPreconditionError(
          absl::StrCat(conn.path(), ": database schema version ", *current,
                       " is newer than this vipu-server supports (", latest,
                       "); run a newer vipu-server or restore a backup made by this version"));
    }
    return absl::OkStatus();
  }
  for (const Migration& step : steps) {
    if (step.version <= *current) continue;
    absl::Status s = conn.Exec(step.sql);
    if (s.ok()) s = conn.Exec(absl::StrCat("PRAGMA user_version = ", step.version));
    if (!s.ok()) {
      conn.Exec("ROLLBACK").IgnoreError();
      return absl::InternalError(absl::StrCat(conn.path(), ": schema migration to version ",
                                              step.version, " failed: ", s.message()));
    }
    spdlog::info("storage: {} migrated schema to version {}", conn.path(), step.version);
  }
  // One transaction for all steps: a crash mid-way leaves the old version.
  if (absl::Status s = conn.Exec("COMMIT"); !s.ok()) {
    conn.Exec("ROLLBACK").IgnoreError();
    return s;
  }
  return absl::OkStatus();
}

}  // namespace vipu::storage
