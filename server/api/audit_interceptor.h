// Writes one audit line (server/security/audit_log.h) for every call of a mutating
// method (server/api/audited_methods.h), allowed or refused, when its status is
// about to be sent: the line is in the file before the caller hears the
// answer. Calls of other methods pass untouched.
#ifndef VIPU_SERVER_API_AUDIT_INTERCEPTOR_H_
#define VIPU_SERVER_API_AUDIT_INTERCEPTOR_H_

#include <grpcpp/support/server_interceptor.h>

#include <string>

#include "google/protobuf/message.h"
#include "server/security/audit_log.h"

namespace vipu::server {

// The id a request names, found by field name: the first non-empty string
// field among partition_id, user_id, agent_id, allocation_id, cluster_id and
// path; failing that, `id` (then the same names) in its singular message
// fields, e.g. CreatePartitionRequest.requirements.id or
// CreateClusterRequest.cluster.id. Empty when there is none.
std::string AuditObject(const google::protobuf::Message& request);

// Creates an interceptor for each call of a mutating method and none for
// the others. Does not own `log`, which must outlive the server.
// Thread-safe: gRPC calls it from any thread, and each interceptor writes
// through the thread-safe AuditLog. A failed write is logged (spdlog) and
// counted by the log; the call's answer is not changed.
class AuditInterceptorFactory : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit AuditInterceptorFactory(AuditLog* log) : log_(log) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;

 private:
  AuditLog* log_;
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_API_AUDIT_INTERCEPTOR_H_
