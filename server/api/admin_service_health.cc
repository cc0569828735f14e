// AdminService's issue-3 RPCs: InjectFault and TestCluster. Thin: admit,
// translate, call FaultInjector / ClusterTester, map errors.
#include "absl/strings/str_cat.h"
#include "server/api/admin_service.h"
#include "wire/status.h"

namespace vipu::server {

grpc::Status AdminService::InjectFault(grpc::ServerContext* context,
                                       const vipuadmin::InjectFaultRequest* request,
                                       vipuadmin::InjectFaultReply* reply) {
  GRPC_RETURN_IF_ERROR(
      AdmitCall(access_, context, {"inject fault", /*admin=*/true, /*mutating=*/true}));
  if (operations_.faults == nullptr) {
    return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "fault injection is not enabled");
  }
  if (!vipuadmin::FaultKind_IsValid(request->kind())) {
    return wire::ToGrpc(
        absl::InvalidArgumentError(absl::StrCat("kind: unknown value ", request->kind())));
  }
  fabric::FaultRequest fault;
  fault.agent_id = request->agent_id();
  fault.kind = static_cast<fabric::FaultKind>(request->kind());  // numbers equal
  if (request->has_ipu()) fault.ipu = request->ipu();
  if (request->has_link()) fault.link = request->link();
  fault.duration_ms = request->duration_ms();
  GRPC_ASSIGN_OR_RETURN(auto description, operations_.faults->Inject(fault));
  reply->set_description(description);
  return grpc::Status::OK;
}

grpc::Status AdminService::TestCluster(grpc::ServerContext* context,
                                       const vipuadmin::TestClusterRequest* request,
                                       vipuadmin::TestClusterReply* reply) {
  GRPC_RETURN_IF_ERROR(
      AdmitCall(access_, context, {"test cluster", /*admin=*/true, /*mutating=*/true}));
  if (operations_.tester == nullptr) {
    return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "cluster tests are not enabled");
  }
  GRPC_ASSIGN_OR_RETURN(auto results,
                        operations_.tester->Run(request->cluster_id(), request->force()));
  reply->set_cluster_id(request->cluster_id());
  for (const TestOutcome& t : results) {
    vipuadmin::TestResult* r = reply->add_results();
    r->set_test_type(t.test_type);
    r->set_duration_s(t.duration_s);
    r->set_passed(t.passed);
    r->set_total(t.total);
    r->set_summary(t.summary);
    for (const std::string& f : t.failures) r->add_failures(f);
  }
  return grpc::Status::OK;
}

}  // namespace vipu::server
