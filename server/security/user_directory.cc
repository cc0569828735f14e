// UserDirectory: create, list, update and remove secure-mode users, and ensure the default admin.
#include "server/security/user_directory.h"

#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "base/status_macros.h"
#include "fabric/validation.h"
#include "spdlog/spdlog.h"

namespace vipu::server {
namespace {

absl::Status ValidateAllocationIds(const std::vector<std::string>& allocations) {
  std::set<std::string> seen;
  for (const std::string& a : allocations) {
    RETURN_IF_ERROR(fabric::ValidateId("allocations", a));
    if (!seen.insert(a).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("allocations: allocation '", a, "' is listed twice"));
    }
  }
  return absl::OkStatus();
}

// Inside the transaction that grants them, so that a concurrent removal of
// an allocation cannot slip in between.
absl::Status CheckAllocationsExist(storage::ReadTxn& txn,
                                   const std::vector<std::string>& allocations) {
  for (const std::string& a : allocations) {
    auto allocation = txn.GetAllocation(a);
    if (absl::IsNotFound(allocation.status())) {
      return absl::NotFoundError(absl::StrCat("allocations: allocation '", a, "' not found"));
    }
    RETURN_IF_ERROR(allocation);
  }
  return absl::OkStatus();
}

std::string DescribeAllocations(const std::vector<std::string>& allocations) {
  return allocations.empty() ? std::string("all") : absl::StrJoin(allocations, ",");
}

}  // namespace

absl::StatusOr<std::string> UserDirectory::Create(const std::string& id,
                                                  const std::vector<std::string>& allocations,
                                                  bool is_admin) {
  RETURN_IF_ERROR(fabric::ValidateId("user id", id));
  RETURN_IF_ERROR(ValidateAllocationIds(allocations));
  std::string key = NewAccessKey();
  ASSIGN_OR_RETURN(std::string hash, HashAccessKey(key, hash_iterations_));
  storage::UserRecord user;
  user.id = id;
  user.key_hash = std::move(hash);
  user.is_admin = is_admin;
  user.allocations = allocations;
  user.created_unix_ms = absl::ToUnixMillis(absl::Now());
  absl::Status s = store_->Write([&](storage::WriteTxn& txn) -> absl::Status {
    RETURN_IF_ERROR(CheckAllocationsExist(txn, allocations));
    absl::Status inserted = txn.InsertUser(user);
    if (absl::IsAlreadyExists(inserted)) {
      return absl::AlreadyExistsError(absl::StrCat("user id: user '", id, "' already exists"));
    }
    return inserted;
  });
  RETURN_IF_ERROR(s);
  spdlog::info("user {} created ({}, allocations: {})", id, is_admin ? "admin" : "user",
               DescribeAllocations(allocations));
  return key;
}

absl::StatusOr<std::vector<storage::UserRecord>> UserDirectory::List() {
  std::vector<storage::UserRecord> out;
  absl::Status s = store_->Read([&](storage::ReadTxn& txn) -> absl::Status {
    ASSIGN_OR_RETURN(out, txn.ListUsers());
    return absl::OkStatus();
  });
  RETURN_IF_ERROR(s);
  return out;
}

absl::Status UserDirectory::Remove(const std::string& id) {
  RETURN_IF_ERROR(fabric::ValidateId("user id", id));
  absl::Status s = store_->Write([&](storage::WriteTxn& txn) -> absl::Status {
    auto user = txn.GetUser(id);
    if (absl::IsNotFound(user.status())) {
      return absl::NotFoundError(absl::StrCat("user id: user '", id, "' not found"));
    }
    if (!user.ok()) return user.status();
    if (user->is_admin) {
      ASSIGN_OR_RETURN(const std::vector<storage::UserRecord> all, txn.ListUsers());
      int admins = 0;
      for (const storage::UserRecord& u : all) admins += u.is_admin ? 1 : 0;
      if (admins <= 1) {
        return absl::FailedPreconditionError(absl::StrCat(
            "user id: '", id, "' is the last admin; create another admin before removing it"));
      }
    }
    return txn.DeleteUser(id);
  });
  RETURN_IF_ERROR(s);
  if (authenticator_ != nullptr) authenticator_->Forget(id);
  spdlog::info("user {} removed", id);
  return absl::OkStatus();
}

absl::StatusOr<UpdatedUser> UserDirectory::Update(const std::string& id, const UserUpdate& update) {
  RETURN_IF_ERROR(fabric::ValidateId("user id", id));
  if (update.Empty()) {
    return absl::InvalidArgumentError(
        "update user: nothing to change; give allocations, the admin flag or a key rotation");
  }
  if (update.allocations) {
    RETURN_IF_ERROR(ValidateAllocationIds(*update.allocations));
  }
  UpdatedUser out;
  std::string new_hash;
  if (update.rotate_key) {
    out.access_key = NewAccessKey();
    ASSIGN_OR_RETURN(new_hash, HashAccessKey(out.access_key, hash_iterations_));
  }
  absl::Status s = store_->Write([&](storage::WriteTxn& txn) -> absl::Status {
    auto user = txn.GetUser(id);
    if (absl::IsNotFound(user.status())) {
      return absl::NotFoundError(absl::StrCat("user id: user '", id, "' not found"));
    }
    if (!user.ok()) return user.status();
    storage::UserRecord changed = *user;
    if (update.allocations) {
      RETURN_IF_ERROR(CheckAllocationsExist(txn, *update.allocations));
      changed.allocations = *update.allocations;
    }
    if (update.is_admin) {
      if (user->is_admin && !*update.is_admin) {
        ASSIGN_OR_RETURN(const std::vector<storage::UserRecord> all, txn.ListUsers());
        int admins = 0;
        for (const storage::UserRecord& u : all) admins += u.is_admin ? 1 : 0;
        if (admins <= 1) {
          return absl::FailedPreconditionError(
              absl::StrCat("admin: '", id,
                           "' is the last admin; make another user an admin before taking "
                           "the flag from this one"));
        }
      }
      changed.is_admin = *update.is_admin;
    }
    if (update.rotate_key) changed.key_hash = new_hash;
    RETURN_IF_ERROR(txn.UpdateUser(changed));
    out.user = std::move(changed);
    return absl::OkStatus();
  });
  RETURN_IF_ERROR(s);
  // After the commit: a call arriving now reads the new row.
  if (authenticator_ != nullptr) authenticator_->Forget(id);
  spdlog::info("user {} updated ({}, allocations: {}{})", id, out.user.is_admin ? "admin" : "user",
               DescribeAllocations(out.user.allocations),
               update.rotate_key ? ", new access key" : "");
  return out;
}

absl::StatusOr<std::optional<std::string>> UserDirectory::EnsureDefaultAdmin(
    const std::string& id) {
  RETURN_IF_ERROR(fabric::ValidateId("default user id", id));
  int64_t count = 0;
  absl::Status s = store_->Read([&](storage::ReadTxn& txn) -> absl::Status {
    ASSIGN_OR_RETURN(count, txn.CountUsers());
    return absl::OkStatus();
  });
  RETURN_IF_ERROR(s);
  if (count > 0) return std::optional<std::string>();
  ASSIGN_OR_RETURN(std::string key, Create(id, {}, /*is_admin=*/true));
  return std::optional<std::string>(std::move(key));
}

}  // namespace vipu::server
