// Moving the state of one SQLite file into etcd: how a site goes from one
// vipu-server machine to a highly available control plane without losing a
// partition (vipu-admin migrate).
#ifndef VIPU_STORAGE_ETCD_STATE_IMPORT_H_
#define VIPU_STORAGE_ETCD_STATE_IMPORT_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "storage/etcd/etcd_client.h"
#include "storage/store.h"

namespace vipu::storage::etcd {

struct ImportCounts {
  int64_t agents = 0, clusters = 0, allocations = 0, partitions = 0, users = 0;
  uint64_t generation = 0;  // the last generation handed out, carried over
  int64_t transactions = 0;
};

// Copies everything `from` holds (one Read snapshot) under `prefix` in etcd,
// in transactions of at most `max_ops_per_txn` keys. The prefix must hold
// no state yet and no member may be using it: the first transaction writes
// the format key only if it does not exist, and every later one only while
// that key is the one it wrote, so a member that starts meanwhile makes the
// import fail instead of mixing two states. Errors: INVALID_ARGUMENT for a
// bad prefix; FAILED_PRECONDITION when the prefix is in use (no key
// written); ABORTED when it became used part way (the keys written so far
// stay and the message says how to delete them); etcd's errors otherwise.
absl::StatusOr<ImportCounts> ImportState(Store& from, EtcdClient* client, const std::string& prefix,
                                         size_t max_ops_per_txn = 120);

}  // namespace vipu::storage::etcd

#endif  // VIPU_STORAGE_ETCD_STATE_IMPORT_H_
