// A server interceptor adding the member's role and the leader to the
// initial metadata of every reply.
#include "server/ha/role_interceptor.h"

#include <string>

#include "wire/metadata_keys.h"

namespace vipu::server {
namespace {

class RoleInterceptor : public grpc::experimental::Interceptor {
 public:
  explicit RoleInterceptor(const MemberRole* role) : role_(role) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
      // The strings must live until the metadata is sent: this object does.
      role_name_ = role_->role_name();
      leader_name_ = role_->leader_name();
      std::multimap<std::string, std::string>* md = methods->GetSendInitialMetadata();
      md->emplace(wire::kRoleMetadata, role_name_);
      md->emplace(wire::kLeaderMetadata, leader_name_);
    }
    methods->Proceed();
  }

 private:
  const MemberRole* role_;
  std::string role_name_, leader_name_;
};

}  // namespace

grpc::experimental::Interceptor* RoleInterceptorFactory::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* /*info*/) {
  return new RoleInterceptor(role_);
}

}  // namespace vipu::server
