// Migrate: a SQLite state copied into etcd under the file's lock.
#include "cli/common/migrate_command.h"

#include <filesystem>
#include <memory>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "storage/database_lock.h"
#include "storage/etcd/etcd_client.h"
#include "storage/etcd/etcd_endpoints.h"
#include "storage/etcd/etcd_layout.h"
#include "storage/etcd/state_import.h"
#include "storage/sqlite_store.h"

namespace vipu::cli {

absl::Status ValidateMigrate(const MigrateRequest& request) {
  if (request.from_db.empty()) return absl::InvalidArgumentError("--from-db: missing FILE");
  if (request.etcd_endpoints.empty()) {
    return absl::InvalidArgumentError("--etcd-endpoints: missing the etcd members");
  }
  absl::StatusOr<std::vector<storage::etcd::EtcdEndpoint>> endpoints =
      storage::etcd::ParseEtcdEndpoints(request.etcd_endpoints);
  if (!endpoints.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--etcd-endpoints: ", endpoints.status().message()));
  }
  return storage::etcd::EtcdLayout::ValidatePrefix(request.etcd_prefix);
}

absl::Status Migrate(const MigrateRequest& request, std::ostream& out) {
  RETURN_IF_ERROR(ValidateMigrate(request));
  std::error_code ec;
  if (!std::filesystem::is_regular_file(request.from_db, ec)) {
    return absl::NotFoundError(absl::StrCat("--from-db ", request.from_db, ": no such file"));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<storage::DatabaseLock> lock,
                   storage::DatabaseLock::Acquire(request.from_db));
  ASSIGN_OR_RETURN(std::unique_ptr<storage::SqliteStore> from,
                   storage::SqliteStore::Open(request.from_db));
  storage::etcd::EtcdClientOptions options;
  ASSIGN_OR_RETURN(options.endpoints, storage::etcd::ParseEtcdEndpoints(request.etcd_endpoints));
  options.ca_file = request.etcd_ca;
  options.cert_file = request.etcd_cert;
  options.key_file = request.etcd_key;
  ASSIGN_OR_RETURN(std::unique_ptr<storage::etcd::EtcdClient> client,
                   storage::etcd::EtcdClient::Connect(options));
  ASSIGN_OR_RETURN(storage::etcd::ImportCounts counts,
                   storage::etcd::ImportState(*from, client.get(), request.etcd_prefix));
  out << "migrated " << request.from_db << " into etcd prefix " << request.etcd_prefix << ": "
      << counts.agents << " agents, " << counts.clusters << " clusters, " << counts.allocations
      << " allocations, " << counts.partitions << " partitions, " << counts.users
      << " users, generation " << counts.generation << " (" << counts.transactions
      << " transactions)\n";
  return absl::OkStatus();
}

}  // namespace vipu::cli
