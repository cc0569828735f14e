// `vipu-admin migrate --from-db FILE --etcd-endpoints URLS`: the state of a
// vipu-server's SQLite file moved into etcd, for a site going from one
// machine to a highly available control plane (docs/ha.md).
#ifndef VIPU_CLI_COMMON_MIGRATE_COMMAND_H_
#define VIPU_CLI_COMMON_MIGRATE_COMMAND_H_

#include <ostream>
#include <string>

#include "absl/status/status.h"

namespace vipu::cli {

struct MigrateRequest {
  std::string from_db;         // the SQLite file of a stopped vipu-server
  std::string etcd_endpoints;  // http(s)://HOST:PORT,...
  std::string etcd_prefix = "/vipu/";
  std::string etcd_ca, etcd_cert, etcd_key;
};

// INVALID_ARGUMENT (naming the flag) for a request that cannot be right,
// before anything is opened.
absl::Status ValidateMigrate(const MigrateRequest& request);

// Holds the file's lock for the whole copy, so that no vipu-server changes
// it meanwhile (FAILED_PRECONDITION naming the server's pid when one runs),
// reads it at one snapshot and writes it under the prefix, which must hold
// no state (storage/etcd/state_import.h). Prints what was moved on `out`.
// NOT_FOUND when the file does not exist (it is never created);
// UNAVAILABLE when etcd does not answer.
absl::Status Migrate(const MigrateRequest& request, std::ostream& out);

}  // namespace vipu::cli

#endif  // VIPU_CLI_COMMON_MIGRATE_COMMAND_H_
