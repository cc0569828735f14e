// Users of the secure mode: create and key rotation (the only times an
// access key is seen), list, update, remove, and the default admin created
// on the first secure start. Each operation validates completely, then
// commits in one transaction. Thread-safe (the store serialises writes).
// Borrows the store and the authenticator, which must outlive it.
#ifndef VIPU_SERVER_SECURITY_USER_DIRECTORY_H_
#define VIPU_SERVER_SECURITY_USER_DIRECTORY_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/security/access_key.h"
#include "server/security/authenticator.h"
#include "storage/store.h"

namespace vipu::server {

// What UserDirectory::Update changes; unset members stay as they are.
struct UserUpdate {
  // Replaces the allocations granted; an empty list grants every allocation.
  std::optional<std::vector<std::string>> allocations;
  std::optional<bool> is_admin;
  // A new access key; the old one stops working at once.
  bool rotate_key = false;

  bool Empty() const { return !allocations && !is_admin && !rotate_key; }
};

// What UserDirectory::Update leaves behind.
struct UpdatedUser {
  storage::UserRecord user;  // as committed (key_hash included)
  std::string access_key;    // the new key when rotate_key; else empty
};

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
  // Applies `update` to user `id` in one transaction and forgets its cached
  // keys, so that the next call of that user sees the change. Asking for a
  // value the user already has is not an error. INVALID_ARGUMENT for a bad
  // id, an empty update ("nothing to change") or bad allocations (as
  // Create); NOT_FOUND for an unknown user or allocation;
  // FAILED_PRECONDITION when the admin flag would be taken from the last
  // admin (whoever asks, the user itself included).
  absl::StatusOr<UpdatedUser> Update(const std::string& id, const UserUpdate& update);

  // When no user exists, creates `id` as an admin and returns its key;
  // nullopt when users exist already.
  absl::StatusOr<std::optional<std::string>> EnsureDefaultAdmin(const std::string& id);

 private:
  storage::Store* store_;
  Authenticator* authenticator_;
  int hash_iterations_;
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_SECURITY_USER_DIRECTORY_H_
