// Turns the mark of a refusal made before anything was done
// (wire::NothingDone) into the trailing metadata `retry-after-ms` that
// clients read (wire/metadata_keys.h, wire/member_channels.h), and strips it
// from the status, whose details are never sent.
#ifndef VIPU_SERVER_API_NOTHING_DONE_INTERCEPTOR_H_
#define VIPU_SERVER_API_NOTHING_DONE_INTERCEPTOR_H_

#include <grpcpp/support/server_interceptor.h>

namespace vipu::server {

// Stateless; thread-safe.
class NothingDoneInterceptorFactory : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_API_NOTHING_DONE_INTERCEPTOR_H_
