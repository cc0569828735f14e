// StandbyHttp: a standby member's /metrics and its pointer to the leader's console.
#include "server/standby_http.h"

#include <httplib.h>
#include <sys/socket.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/thread_name.h"
#include "server/metrics/metrics_http.h"
#include "server/role_metrics.h"

namespace vipu::server {

StandbyHttp::StandbyHttp(const MemberRole* role) : role_(role) { AddRoleMetrics(metrics_, role_); }

absl::StatusOr<std::unique_ptr<StandbyHttp>> StandbyHttp::Start(const StandbyHttpOptions& options,
                                                                const MemberRole* role) {
  ASSIGN_OR_RETURN(const auto parsed, ParseListenAddress(options.address, options.flag));
  const auto& [host, port] = parsed;
  std::unique_ptr<StandbyHttp> s(new StandbyHttp(role));
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
    s->http_ = std::move(ssl);
  } else {
    s->http_ = std::make_unique<httplib::Server>();
  }
  // As the console: no SO_REUSEPORT, so a busy port is an error, not shared.
  s->http_->set_socket_options([](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  s->http_->new_task_queue = [] { return new httplib::ThreadPool(2); };
  const Metrics* metrics = &s->metrics_;
  s->http_->Get("/metrics", [metrics](const httplib::Request& req, httplib::Response& res) {
    const bool open_metrics =
        req.get_header_value("Accept").find("application/openmetrics-text") != std::string::npos;
    const MetricsFormat format =
        open_metrics ? MetricsFormat::kOpenMetrics : MetricsFormat::kPrometheusText;
    res.set_content(metrics->Render(format), MetricsContentType(format));
  });
  s->http_->set_error_handler([role](const httplib::Request&, httplib::Response& res) {
    if (res.status != 404) return;
    res.status = 503;
    res.set_header("Retry-After", "1");
    res.set_content(absl::StrCat("vipu-server member ", role->self().user,
                                 " is a standby; the pod console is the leader's (",
                                 role->leader_name(), ", on its own --http-listen address)\n"),
                    "text/plain");
  });
  int bound = port == 0 ? s->http_->bind_to_any_port(host) : port;
  if (port != 0 && !s->http_->bind_to_port(host, port)) bound = -1;
  if (bound <= 0) {
    return absl::UnavailableError(
        absl::StrCat(options.flag, ": cannot listen on ", options.address));
  }
  s->port_ = bound;
  httplib::Server* http = s->http_.get();
  s->thread_ = std::thread([http] { http->listen_after_bind(); });
  NameThread(s->thread_, "vipu-http");
  return s;
}

StandbyHttp::~StandbyHttp() {
  if (http_) http_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace vipu::server
