// Counts every RPC the server answers and times it, by service, method and
// status code: vipu_rpc_requests_total and vipu_rpc_duration_seconds.
#ifndef VIPU_SERVER_API_RPC_METRICS_INTERCEPTOR_H_
#define VIPU_SERVER_API_RPC_METRICS_INTERCEPTOR_H_

#include <grpcpp/support/server_interceptor.h>

#include "server/metrics/metrics.h"

namespace vipu::server {

// Declares the two families in `metrics`, which it borrows and which must
// outlive the server. Thread-safe: gRPC calls it from any thread, and the
// interceptors it creates count through the thread-safe Metrics.
class RpcMetricsInterceptorFactory : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit RpcMetricsInterceptorFactory(Metrics* metrics);
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;

 private:
  Metrics* metrics_;
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_API_RPC_METRICS_INTERCEPTOR_H_
