// The address of vipu-server's HTTP listener (--http-listen, also named
// --metrics-listen). The listener itself, with GET /metrics (OpenMetrics
// when the scraper accepts application/openmetrics-text, as Prometheus
// does, the Prometheus text format 0.0.4 otherwise) and the pod console, is
// server/console/console_http.h. Its own port, so that it can be opened to
// a monitoring network without exposing the gRPC APIs.
#ifndef VIPU_SERVER_METRICS_METRICS_HTTP_H_
#define VIPU_SERVER_METRICS_METRICS_HTTP_H_

#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "server/metrics/metrics.h"

namespace httplib {
class Server;
}  // namespace httplib

namespace vipu::server {

// Where and how an HTTP listener of vipu-server serves.
struct HttpListenerOptions {
  std::string address;                 // host:port or [v6]:port; port 0 picks a free one
  std::string flag = "--http-listen";  // the flag `address` came from, for errors
  // HTTPS with the server certificate and key in tls_dir/server.
  bool secure = false;
  std::string tls_dir;
};

// A server for `options`, not yet bound. It keeps SO_REUSEADDR for fast
// restarts but never SO_REUSEPORT (cpp-httplib's default), so that a busy
// port is an error instead of being shared. FAILED_PRECONDITION naming the
// files when the certificate or key cannot be loaded.
absl::StatusOr<std::unique_ptr<httplib::Server>> NewHttpServer(const HttpListenerOptions& options);

// Binds `server` to options.address and returns the port. INVALID_ARGUMENT
// naming the flag for a malformed address, UNAVAILABLE when it cannot be
// bound.
absl::StatusOr<int> BindHttpServer(httplib::Server& server, const HttpListenerOptions& options);

// GET /metrics on `server`: `metrics` as OpenMetrics when the scraper accepts
// application/openmetrics-text, as the Prometheus text format otherwise.
// Borrows `metrics`, which must outlive the server.
void ServeMetrics(httplib::Server& server, const Metrics* metrics);

// Splits "host:port" or "[v6]:port" (port 0..65535; 0 picks a free port).
// INVALID_ARGUMENT naming `flag` otherwise.
absl::StatusOr<std::pair<std::string, int>> ParseListenAddress(
    const std::string& address, const std::string& flag = "--metrics-listen");

}  // namespace vipu::server

#endif  // VIPU_SERVER_METRICS_METRICS_HTTP_H_
