// The address of vipu-server's HTTP listener (--http-listen, also named
// --metrics-listen). The listener itself, with GET /metrics (OpenMetrics
// when the scraper accepts application/openmetrics-text, as Prometheus
// does, the Prometheus text format 0.0.4 otherwise) and the pod console, is
// server/console/console_http.h. Its own port, so that it can be opened to
// a monitoring network without exposing the gRPC APIs.
#ifndef VIPU_SERVER_METRICS_METRICS_HTTP_H_
#define VIPU_SERVER_METRICS_METRICS_HTTP_H_

#include <string>
#include <utility>

#include "absl/status/statusor.h"

namespace vipu::server {

// Splits "host:port" or "[v6]:port" (port 0..65535; 0 picks a free port).
// INVALID_ARGUMENT naming `flag` otherwise.
absl::StatusOr<std::pair<std::string, int>> ParseListenAddress(
    const std::string& address, const std::string& flag = "--metrics-listen");

}  // namespace vipu::server

#endif  // VIPU_SERVER_METRICS_METRICS_HTTP_H_
