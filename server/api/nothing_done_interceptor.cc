// NothingDoneInterceptor: a NothingDone refusal's mark sent as retry-after-ms.
#include "server/api/nothing_done_interceptor.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "wire/metadata_keys.h"
#include "wire/status.h"

namespace vipu::server {
namespace {

class NothingDoneInterceptor : public grpc::experimental::Interceptor {
 public:
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_STATUS)) {
      const grpc::Status status = methods->GetSendStatus();
      if (const int64_t ms = wire::NothingDoneRetryAfterMs(status); ms >= 0) {
        methods->GetSendTrailingMetadata()->emplace(wire::kRetryAfterMetadata, absl::StrCat(ms));
        methods->ModifySendStatus(grpc::Status(status.error_code(), status.error_message()));
      }
    }
    methods->Proceed();
  }
};

}  // namespace

grpc::experimental::Interceptor* NothingDoneInterceptorFactory::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* /*info*/) {
  return new NothingDoneInterceptor();
}

}  // namespace vipu::server
