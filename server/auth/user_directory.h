// Users of the secure mode: create (the only time the access key is seen),
// list, remove, and the default admin created on the first secure start.
// Each operation validates completely, then commits in one transaction.
#ifndef VIPU_SERVER_AUTH_USER_DIRECTORY_H_
#define VIPU_SERVER_AUTH_USER_DIRECTORY_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/auth/access_key.h"
#include "server/auth/authenticator.h"
#include "storage/store.h"

namespace vipu::server::auth {

class UserDirectory {
 public:
  // `authenticator` (may be null) forgets removed users' cached keys.
  UserDirectory(storage::Store* store, Authenticator* authenticator,
                int hash_iterations = kDefaultHashIterations)
      : store_(store), authenticator_(authenticator), hash_iterations_(hash_iterations) {}

  // Returns the new access key. INVALID_ARGUMENT for a bad id or allocation
  // id ("user id: ...", "allocations: ..."), a repeated allocation;
  // NOT_FOUND for an allocation that does not exist; ALREADY_EXISTS.
  absl::StatusOr<std::string> Create(const std::string& id,
                                     const std::vector<std::string>& allocations, bool is_admin);
  absl::StatusOr<std::vector<storage::UserRecord>> List();
  // NOT_FOUND; FAILED_PRECONDITION for the last admin (nobody could manage
  // users any more).
  absl::Status Remove(const std::string& id);

  // When no user exists, creates `id` as an admin and returns its key;
  // nullopt when users exist already.
  absl::StatusOr<std::optional<std::string>> EnsureDefaultAdmin(const std::string& id);

 private:
  storage::Store* store_;
  Authenticator* authenticator_;
  int hash_iterations_;
};

}  // namespace vipu::server::auth

#endif  // VIPU_SERVER_AUTH_USER_DIRECTORY_H_
