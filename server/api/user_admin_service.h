// vipuadmin.UserAdminService: users of the secure mode (admin users only;
// with --secure off it still works, so that users can be prepared before
// the switch).
#ifndef VIPU_SERVER_API_USER_ADMIN_SERVICE_H_
#define VIPU_SERVER_API_USER_ADMIN_SERVICE_H_

#include "server/security/access_control.h"
#include "server/security/user_directory.h"
#include "vipu_admin.grpc.pb.h"

namespace vipu::server {

// Borrows `users` and `access`, which must outlive it. Thread-safe: gRPC runs
// its RPCs at once and it keeps no state of its own.
class UserAdminService final : public vipuadmin::UserAdminService::Service {
 public:
  UserAdminService(UserDirectory* users, AccessControl& access) : users_(users), access_(access) {}

  grpc::Status CreateUser(grpc::ServerContext*, const vipuadmin::CreateUserRequest*,
                          vipuadmin::CreateUserReply*) override;
  grpc::Status ListUsers(grpc::ServerContext*, const vipuadmin::ListUsersRequest*,
                         vipuadmin::ListUsersReply*) override;
  grpc::Status RemoveUser(grpc::ServerContext*, const vipuadmin::RemoveUserRequest*,
                          vipuadmin::RemoveUserReply*) override;
  grpc::Status UpdateUser(grpc::ServerContext*, const vipuadmin::UpdateUserRequest*,
                          vipuadmin::UpdateUserReply*) override;

 private:
  UserDirectory* users_;
  AccessControl& access_;
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_API_USER_ADMIN_SERVICE_H_
