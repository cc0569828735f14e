// The OpenMetrics endpoint (--metrics-listen host:port): GET /metrics
// answers OpenMetrics when the scraper accepts application/openmetrics-text
// (Prometheus does), the Prometheus text format 0.0.4 otherwise. Its own
// port, so that it can be opened to a monitoring network without exposing
// the gRPC APIs.
#ifndef VIPU_SERVER_METRICS_HTTP_H_
#define VIPU_SERVER_METRICS_HTTP_H_

#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "server/metrics.h"

namespace httplib {
class Server;
}

namespace vipu::server {

// Splits "host:port" or "[v6]:port" (port 0..65535; 0 picks a free port).
// INVALID_ARGUMENT naming `flag` otherwise.
absl::StatusOr<std::pair<std::string, int>> ParseListenAddress(
    const std::string& address, const std::string& flag = "--metrics-listen");

class MetricsHttpServer {
 public:
  // Binds `address` and serves `metrics` (which must outlive the server) on
  // a thread of its own. UNAVAILABLE when the port cannot be bound.
  static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Start(const std::string& address,
                                                                  const Metrics* metrics);
  ~MetricsHttpServer();  // stops and joins

  int port() const { return port_; }

 private:
  MetricsHttpServer() = default;
  std::unique_ptr<httplib::Server> http_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_METRICS_HTTP_H_
