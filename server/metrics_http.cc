#include "server/metrics_http.h"

#include <httplib.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace vipu::server {

absl::StatusOr<std::pair<std::string, int>> ParseListenAddress(const std::string& address,
                                                               const std::string& flag) {
  auto bad = [&](const std::string& rule) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": ", rule, ", got '", address, "'"));
  };
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return bad("expected host:port");
  std::string host = address.substr(0, colon);
  const std::string port_text = address.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string::npos) {
    return bad("an IPv6 host must be in brackets, [::1]:port");
  }
  if (host.empty()) return bad("missing host (use 0.0.0.0 for every interface)");
  int port = 0;
  if (!absl::SimpleAtoi(port_text, &port) || port < 0 || port > 65535) {
    return bad("port must be an integer in 0..65535");
  }
  return std::make_pair(host, port);
}

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    const std::string& address, const Metrics* metrics) {
  auto parsed = ParseListenAddress(address);
  if (!parsed.ok()) return parsed.status();
  const auto& [host, port] = *parsed;
  std::unique_ptr<MetricsHttpServer> server(new MetricsHttpServer());
  server->http_ = std::make_unique<httplib::Server>();
  // httplib's default adds SO_REUSEPORT, which would let a second server
  // share a busy port silently; keep only SO_REUSEADDR (fast restarts).
  server->http_->set_socket_options([](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  server->http_->Get("/metrics", [metrics](const httplib::Request& req, httplib::Response& res) {
    const bool open_metrics =
        req.get_header_value("Accept").find("application/openmetrics-text") != std::string::npos;
    const MetricsFormat format =
        open_metrics ? MetricsFormat::kOpenMetrics : MetricsFormat::kPrometheusText;
    res.set_content(metrics->Render(format), MetricsContentType(format));
  });
  server->http_->Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("vipu-server metrics: GET /metrics\n", "text/plain");
  });
  int bound = port == 0 ? server->http_->bind_to_any_port(host) : port;
  if (port != 0 && !server->http_->bind_to_port(host, port)) bound = -1;
  if (bound <= 0) {
    return absl::UnavailableError(absl::StrCat("--metrics-listen: cannot listen on ", address));
  }
  server->port_ = bound;
  httplib::Server* http = server->http_.get();
  server->thread_ = std::thread([http] { http->listen_after_bind(); });
  return server;
}

MetricsHttpServer::~MetricsHttpServer() {
  if (http_) http_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace vipu::server
