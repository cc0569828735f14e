// A gRPC server interceptor counting and timing every RPC by service, method and code.
#include "server/api/rpc_metrics_interceptor.h"

#include <chrono>

#include "absl/strings/string_view.h"
#include "wire/status.h"

namespace vipu::server {
namespace {

constexpr char kRequests[] = "vipu_rpc_requests";
constexpr char kDuration[] = "vipu_rpc_duration_seconds";

class RpcMetricsInterceptor : public grpc::experimental::Interceptor {
 public:
  RpcMetricsInterceptor(Metrics* metrics, const char* full_method)
      : metrics_(metrics), start_(std::chrono::steady_clock::now()) {
    // "/package.Service/Method"
    absl::string_view m = full_method == nullptr ? "" : full_method;
    if (!m.empty() && m.front() == '/') m.remove_prefix(1);
    const size_t slash = m.find('/');
    service_ = std::string(m.substr(0, slash));
    method_ = slash == absl::string_view::npos ? "" : std::string(m.substr(slash + 1));
  }

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_STATUS)) {
      const grpc::Status status = methods->GetSendStatus();
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
      MetricLabels labels = {{"service", service_},
                             {"method", method_},
                             {"code", wire::CodeName(status.error_code())}};
      metrics_->Increment(kRequests, labels);
      metrics_->Observe(kDuration, labels, seconds);
    }
    methods->Proceed();
  }

 private:
  Metrics* metrics_;
  std::chrono::steady_clock::time_point start_;
  std::string service_;
  std::string method_;
};

}  // namespace

RpcMetricsInterceptorFactory::RpcMetricsInterceptorFactory(Metrics* metrics) : metrics_(metrics) {
  metrics_->DeclareCounter(kRequests, "RPCs answered, by service, method and status code.");
  metrics_->DeclareHistogram(
      kDuration, "Time from the start of an RPC to its status, by service, method and code.",
      {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10});
}

grpc::experimental::Interceptor* RpcMetricsInterceptorFactory::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  return new RpcMetricsInterceptor(metrics_, info->method());
}

}  // namespace vipu::server
