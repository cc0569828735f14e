// Counts every RPC the server answers and times it, by service, method and
// status code: vipu_rpc_requests_total and vipu_rpc_duration_seconds.
#ifndef VIPU_SERVER_RPC_METRICS_INTERCEPTOR_H_
#define VIPU_SERVER_RPC_METRICS_INTERCEPTOR_H_

#include <grpcpp/support/server_interceptor.h>

#include <string>

#include "server/metrics.h"

namespace vipu::server {

// "OK", "INVALID_ARGUMENT", ... as in the gRPC status code documentation,
// for a grpc::StatusCode or the number of one; "UNKNOWN" for any other number.
// An int, because a code read off the wire may be outside the enum's range.
std::string GrpcCodeName(int code);

// Declares the two families in `metrics`, which must outlive the server.
class RpcMetricsInterceptorFactory : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit RpcMetricsInterceptorFactory(Metrics* metrics);
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;

 private:
  Metrics* metrics_;
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_RPC_METRICS_INTERCEPTOR_H_
