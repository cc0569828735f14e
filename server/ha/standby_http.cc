// StandbyHttp: a standby member's /metrics and its pointer to the leader's console.
#include "server/ha/standby_http.h"

#include <httplib.h>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/thread_name.h"
#include "server/ha/role_metrics.h"
#include "server/metrics/metrics_http.h"

namespace vipu::server {

StandbyHttp::StandbyHttp(const MemberRole* role) : role_(role) { AddRoleMetrics(metrics_, role_); }

absl::StatusOr<std::unique_ptr<StandbyHttp>> StandbyHttp::Start(const HttpListenerOptions& listener,
                                                                const MemberRole* role) {
  std::unique_ptr<StandbyHttp> s(new StandbyHttp(role));
  ASSIGN_OR_RETURN(s->http_, NewHttpServer(listener));
  s->http_->new_task_queue = [] { return new httplib::ThreadPool(2); };
  ServeMetrics(*s->http_, &s->metrics_);
  s->http_->set_error_handler([role](const httplib::Request&, httplib::Response& res) {
    if (res.status != 404) return;
    res.status = 503;
    res.set_header("Retry-After", "1");
    res.set_content(absl::StrCat("vipu-server member ", role->self().user,
                                 " is a standby; the pod console is the leader's (",
                                 role->leader_name(), ", on its own --http-listen address)\n"),
                    "text/plain");
  });
  ASSIGN_OR_RETURN(s->port_, BindHttpServer(*s->http_, listener));
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
