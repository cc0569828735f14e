// vipuadmin.UserAdminService: create, list, update and remove users, for admins only.
#include "server/api/user_admin_service.h"

#include "google/protobuf/util/time_util.h"
#include "spdlog/spdlog.h"
#include "wire/status.h"

namespace vipu::server {
namespace {

const Action kCreateUser{"create user", /*admin=*/true, /*mutating=*/true};
const Action kListUsers{"list users", /*admin=*/true, /*mutating=*/false};
const Action kRemoveUser{"remove user", /*admin=*/true, /*mutating=*/true};
const Action kUpdateUser{"update user", /*admin=*/true, /*mutating=*/true};

void ToWire(const storage::UserRecord& u, vipuadmin::User* out) {
  out->set_id(u.id);
  out->set_admin(u.is_admin);
  for (const std::string& a : u.allocations) out->add_allocations(a);
  *out->mutable_created() =
      google::protobuf::util::TimeUtil::MillisecondsToTimestamp(u.created_unix_ms);
}

}  // namespace

grpc::Status UserAdminService::CreateUser(grpc::ServerContext* context,
                                          const vipuadmin::CreateUserRequest* request,
                                          vipuadmin::CreateUserReply* reply) {
  GRPC_ASSIGN_OR_RETURN(Caller caller, AdmitCall(access_, context, kCreateUser));
  std::vector<std::string> allocations(request->allocations().begin(),
                                       request->allocations().end());
  GRPC_ASSIGN_OR_RETURN(auto key,
                        users_->Create(request->user_id(), allocations, request->admin()));
  spdlog::info("user {} created by {}", request->user_id(), caller.Name());
  reply->set_access_key(key);
  return grpc::Status::OK;
}

grpc::Status UserAdminService::ListUsers(grpc::ServerContext* context,
                                         const vipuadmin::ListUsersRequest*,
                                         vipuadmin::ListUsersReply* reply) {
  GRPC_RETURN_IF_ERROR(AdmitCall(access_, context, kListUsers));
  GRPC_ASSIGN_OR_RETURN(auto users, users_->List());
  for (const storage::UserRecord& u : users) ToWire(u, reply->add_users());
  return grpc::Status::OK;
}

grpc::Status UserAdminService::RemoveUser(grpc::ServerContext* context,
                                          const vipuadmin::RemoveUserRequest* request,
                                          vipuadmin::RemoveUserReply*) {
  GRPC_ASSIGN_OR_RETURN(Caller caller, AdmitCall(access_, context, kRemoveUser));
  absl::Status s = users_->Remove(request->user_id());
  if (s.ok()) spdlog::info("user {} removed by {}", request->user_id(), caller.Name());
  return wire::ToGrpc(s);
}

grpc::Status UserAdminService::UpdateUser(grpc::ServerContext* context,
                                          const vipuadmin::UpdateUserRequest* request,
                                          vipuadmin::UpdateUserReply* reply) {
  GRPC_ASSIGN_OR_RETURN(Caller caller, AdmitCall(access_, context, kUpdateUser));
  UserUpdate update;
  if (request->set_allocations()) {
    update.allocations.emplace(request->allocations().begin(), request->allocations().end());
  } else if (!request->allocations().empty()) {
    return wire::ToGrpc(absl::InvalidArgumentError(
        "allocations: given without set_allocations; set it to replace the allocations"));
  }
  if (request->has_admin()) update.is_admin = request->admin();
  update.rotate_key = request->rotate_key();
  GRPC_ASSIGN_OR_RETURN(auto updated, users_->Update(request->user_id(), update));
  spdlog::info("user {} updated by {}{}", request->user_id(), caller.Name(),
               update.rotate_key ? " (new access key)" : "");
  ToWire(updated.user, reply->mutable_user());
  reply->set_access_key(updated.access_key);
  return grpc::Status::OK;
}

}  // namespace vipu::server
