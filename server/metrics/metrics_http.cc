// vipu-server's HTTP listeners: their address, their TLS, and GET /metrics.
#include "server/metrics/metrics_http.h"

#include <httplib.h>
#include <sys/socket.h>

#include <filesystem>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/loopback_ports.h"

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

absl::StatusOr<std::unique_ptr<httplib::Server>> NewHttpServer(const HttpListenerOptions& options) {
  std::unique_ptr<httplib::Server> server;
  if (options.secure) {
    const std::filesystem::path dir = std::filesystem::path(options.tls_dir) / "server";
    const std::string cert = (dir / "cert.pem").string();
    const std::string key = (dir / "key.pem").string();
    auto ssl = std::make_unique<httplib::SSLServer>(cert.c_str(), key.c_str());
    if (!ssl->is_valid()) {
      return absl::FailedPreconditionError(
          absl::StrCat(options.flag, ": cannot load the server certificate ", cert, " and key ",
                       key, " (create them with vipu-server --tls-init)"));
    }
    server = std::move(ssl);
  } else {
    server = std::make_unique<httplib::Server>();
  }
  server->set_socket_options([](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  return server;
}

absl::StatusOr<int> BindHttpServer(httplib::Server& server, const HttpListenerOptions& options) {
  absl::StatusOr<std::pair<std::string, int>> parsed =
      ParseListenAddress(options.address, options.flag);
  if (!parsed.ok()) return parsed.status();
  const auto& [host, port] = *parsed;
  int bound = port == 0 ? server.bind_to_any_port(host) : port;
  if (port != 0 && !server.bind_to_port(host, port)) bound = -1;
  if (bound <= 0) {
    return absl::UnavailableError(absl::StrCat(options.flag, ": cannot listen on ", options.address,
                                               ListenFailureReason(options.address)));
  }
  return bound;
}

void ServeMetrics(httplib::Server& server, const Metrics* metrics) {
  server.Get("/metrics", [metrics](const httplib::Request& req, httplib::Response& res) {
    const bool open_metrics =
        req.get_header_value("Accept").find("application/openmetrics-text") != std::string::npos;
    const MetricsFormat format =
        open_metrics ? MetricsFormat::kOpenMetrics : MetricsFormat::kPrometheusText;
    res.set_content(metrics->Render(format), MetricsContentType(format));
  });
}

}  // namespace vipu::server
