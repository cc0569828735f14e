// Tells every caller of a member which role it has and who leads, as reply
// metadata (wire/metadata_keys.h), leaving every reply message as published.
#ifndef VIPU_SERVER_HA_ROLE_INTERCEPTOR_H_
#define VIPU_SERVER_HA_ROLE_INTERCEPTOR_H_

#include <grpcpp/support/server_interceptor.h>

#include "server/ha/member_role.h"

namespace vipu::server {

// Borrows `role`, which must outlive the servers. Thread-safe.
class RoleInterceptorFactory : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit RoleInterceptorFactory(const MemberRole* role) : role_(role) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;

 private:
  const MemberRole* role_;
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_HA_ROLE_INTERCEPTOR_H_
