// vipu-server's HTTP listener (--http-listen, alias --metrics-listen): the
// pod console at / with its JSON API under /api/, live updates as
// server-sent events on /api/events, and the OpenMetrics text at /metrics.
//
// A watcher thread takes a snapshot of the pod every tick (at least every
// 200 ms; slower when taking one is slow), and when the content changed it
// numbers a new version and tells every connected browser, which then
// fetches /api/state. Browsers never poll faster than they need to, and one
// that reads too slowly is dropped (EventHub), never waited for.
//
// Security: every response carries a strict Content-Security-Policy; the
// assets use no inline script or style. With --secure the listener is HTTPS
// with the server's certificate (DIR/server/{cert,key}.pem of --tls-dir),
// the console asks for a user id and access key, checked by the same
// AccessControl gate as the gRPC APIs, and shows only what that user may
// see. Sessions are HttpOnly, Secure, SameSite=Strict cookies; changing
// requests must echo the session's CSRF token in X-CSRF-Token. Only admins
// (and, without --secure, everyone, as on the APIs) may remove or reset.
#ifndef VIPU_SERVER_CONSOLE_CONSOLE_HTTP_H_
#define VIPU_SERVER_CONSOLE_CONSOLE_HTTP_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "server/console/console_state.h"
#include "server/console/event_hub.h"
#include "server/console/history.h"
#include "server/console/sessions.h"
#include "server/control/partition_controller.h"
#include "server/fleet/agent_registry.h"
#include "server/fleet/cluster_links_cache.h"
#include "server/metrics/metrics.h"
#include "server/metrics/metrics_http.h"
#include "server/security/access_control.h"
#include "storage/store.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace vipu::server {
class AuditLog;
}  // namespace vipu::server

namespace vipu::server {

struct ConsoleOptions {
  // Where it listens; `secure` also asks for logins.
  HttpListenerOptions listener;
  absl::Duration tick = absl::Milliseconds(200);   // change detection
  absl::Duration sample_every = absl::Seconds(1);  // history
  absl::Duration history_window = absl::Hours(1);
  size_t max_streams = 32;     // open /api/events streams
  size_t stream_queue = 64;    // events queued per stream before it is dropped
  size_t max_sessions = 1024;  // logins kept
  absl::Duration session_idle = absl::Hours(8);
};

// What the console reads and acts on; all must outlive the server.
// `metrics` may be null (no /metrics); `access` may be null only without
// --secure, where there is no login to check.
struct ConsoleDeps {
  const Metrics* metrics = nullptr;
  storage::Store* store = nullptr;
  ClusterLinksCache* cluster_links = nullptr;  // the layouts and links of the clusters
  const AgentRegistry* registry = nullptr;
  PartitionController* controller = nullptr;
  AccessControl* access = nullptr;
  // Where remove and reset from the console are recorded; null: nowhere.
  AuditLog* audit = nullptr;
  // The member's role and leader in a highly available control plane, asked
  // on every change-detection pass (so a change of leader reaches open
  // consoles as a new state version); must be thread-safe. Empty: a single
  // server.
  std::function<ControlPlane()> control_plane;
};

// Owns its listener, watcher thread, event hub, history and sessions; borrows
// what `deps` points to.
// Thread-safe: handlers run on the listener's threads, Refresh and version
// may be called from any thread.
class ConsoleServer {
 public:
  // Binds, takes the first snapshot and starts serving on threads of its
  // own. INVALID_ARGUMENT for a bad address (naming options.flag),
  // FAILED_PRECONDITION when the certificate cannot be loaded, UNAVAILABLE
  // when the port cannot be bound.
  static absl::StatusOr<std::unique_ptr<ConsoleServer>> Start(const ConsoleOptions& options,
                                                              const ConsoleDeps& deps);
  ~ConsoleServer();  // ends the streams, stops and joins

  int port() const { return port_; }
  // The state version browsers were last told of.
  uint64_t version() const;
  // One change-detection pass on the caller's thread (tests; the watcher
  // does this every tick). Returns the version after it.
  uint64_t Refresh();
  const EventHub& HubForTesting() const { return hub_; }

 private:
  ConsoleServer(const ConsoleOptions& options, const ConsoleDeps& deps);
  void Routes();
  void Watch();
  void TakeSample(const PodSnapshot& snapshot);
  std::shared_ptr<const PodSnapshot> Latest() const;

  // The session of the request's cookie, if live.
  std::optional<Session> SessionOf(const httplib::Request& req) const;
  // The caller of a data request, or an error written to `res` (401 with
  // --secure and no session).
  std::optional<Caller> CallerOf(const httplib::Request& req, httplib::Response& res) const;

  void HandleSession(const httplib::Request& req, httplib::Response& res);
  void HandleLogin(const httplib::Request& req, httplib::Response& res);
  void HandleLogout(const httplib::Request& req, httplib::Response& res);
  void HandleState(const httplib::Request& req, httplib::Response& res);
  void HandlePartition(const httplib::Request& req, httplib::Response& res);
  void HandleHistory(const httplib::Request& req, httplib::Response& res);
  void HandleAction(const httplib::Request& req, httplib::Response& res);
  void HandleEvents(const httplib::Request& req, httplib::Response& res);

  const ConsoleOptions options_;
  const ConsoleDeps deps_;
  EventHub hub_;
  History history_;
  mutable Sessions sessions_;

  mutable vipu::Mutex mu_;
  std::shared_ptr<const PodSnapshot> latest_ ABSL_GUARDED_BY(mu_);
  size_t fingerprint_ ABSL_GUARDED_BY(mu_) = 0;  // hash of the last state's JSON
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time next_sample_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  vipu::Mutex refresh_mu_;  // one change-detection pass at a time

  vipu::Mutex stop_mu_;
  bool stopping_ ABSL_GUARDED_BY(stop_mu_) = false;

  std::unique_ptr<httplib::Server> http_;
  std::thread http_thread_;
  std::thread watcher_;
  int port_ = 0;
};

// absl status -> HTTP status code of the console's API.
int HttpStatusOf(const absl::Status& status);

}  // namespace vipu::server

#endif  // VIPU_SERVER_CONSOLE_CONSOLE_HTTP_H_
