// The console's HTTP(S) server: routes, sessions, live events and /metrics.
#include "server/console/console_http.h"

#include <httplib.h>
#include <sys/socket.h>

#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/json_writer.h"
#include "base/status_macros.h"
#include "base/thread_name.h"
#include "fabric/enum_names.h"
#include "fabric/ipuof_config.h"
#include "server/console/assets.h"
#include "server/console/query.h"
#include "server/fleet/cluster_links_cache.h"
#include "server/metrics/metrics_http.h"
#include "server/security/audit_log.h"
#include "spdlog/spdlog.h"

namespace vipu::server {
namespace {

constexpr char kCookie[] = "vipu_console";
constexpr char kCsrfHeader[] = "X-CSRF-Token";
constexpr char kJson[] = "application/json";
// Scripts, styles and connections from this server only; nothing inline,
// no frames, no plugins, no form posts elsewhere.
constexpr char kCsp[] =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
constexpr size_t kMaxBodyBytes = 8192;

std::string ErrorJson(const absl::Status& status) {
  JsonWriter j;
  j.BeginObject().Field("error", std::string(status.message())).EndObject();
  return j.Take();
}

void Fail(httplib::Response& res, const absl::Status& status) {
  res.status = HttpStatusOf(status);
  res.set_content(ErrorJson(status), kJson);
}

// The value of cookie `name` in a Cookie header, or "".
std::string CookieValue(const std::string& header, absl::string_view name) {
  if (header.size() > 8192) return "";
  for (absl::string_view part : absl::StrSplit(header, ';')) {
    part = absl::StripAsciiWhitespace(part);
    if (absl::ConsumePrefix(&part, name) && absl::ConsumePrefix(&part, "=")) {
      return std::string(part);
    }
  }
  return "";
}

std::string SessionJson(const Session& s, bool secure) {
  JsonWriter j;
  j.BeginObject()
      .Field("secure", secure)
      .Field("user", s.caller.user_id)
      .Field("authenticated", s.caller.authenticated)
      .Field("admin", !secure || s.caller.is_admin)
      .Field("csrf", s.csrf)
      .EndObject();
  return j.Take();
}

}  // namespace

int HttpStatusOf(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return 200;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      return 400;
    case absl::StatusCode::kUnauthenticated:
      return 401;
    case absl::StatusCode::kPermissionDenied:
      return 403;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kAborted:
      return 409;
    case absl::StatusCode::kResourceExhausted:
      return 429;
    case absl::StatusCode::kUnavailable:
      return 503;
    default:
      return 500;
  }
}

ConsoleServer::ConsoleServer(const ConsoleOptions& options, const ConsoleDeps& deps)
    : options_(options),
      deps_(deps),
      hub_(options.max_streams, options.stream_queue),
      history_(static_cast<size_t>(options.history_window / options.sample_every) + 1,
               options.history_window),
      sessions_(options.max_sessions, options.session_idle) {}

absl::StatusOr<std::unique_ptr<ConsoleServer>> ConsoleServer::Start(const ConsoleOptions& options,
                                                                    const ConsoleDeps& deps) {
  const HttpListenerOptions& listener = options.listener;
  // A malformed address is refused before anything is built.
  RETURN_IF_ERROR(ParseListenAddress(listener.address, listener.flag).status());
  // Logins are checked by the policy: a secure console without one would
  // have nothing to refuse them with.
  if (listener.secure && deps.access == nullptr) {
    return absl::InvalidArgumentError("console: a secure listener needs the access policy");
  }
  std::unique_ptr<ConsoleServer> server(new ConsoleServer(options, deps));
  ASSIGN_OR_RETURN(server->http_, NewHttpServer(listener));
  // Every open event stream holds a thread; leave room for page loads.
  const size_t threads = options.max_streams + 8;
  server->http_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  // A browser that stops reading blocks its stream's writes this long at
  // most; then its connection is closed.
  server->http_->set_write_timeout(2, 0);
  server->http_->set_payload_max_length(kMaxBodyBytes);
  server->Refresh();
  server->Routes();
  ASSIGN_OR_RETURN(server->port_, BindHttpServer(*server->http_, listener));
  httplib::Server* http = server->http_.get();
  server->http_thread_ = std::thread([http] { http->listen_after_bind(); });
  server->watcher_ = std::thread([s = server.get()] { s->Watch(); });
  NameThread(server->http_thread_, "vipu-http");
  NameThread(server->watcher_, "vipu-console");
  return server;
}

ConsoleServer::~ConsoleServer() {
  {
    vipu::MutexLock lock(&stop_mu_);
    stopping_ = true;
  }
  if (watcher_.joinable()) watcher_.join();
  hub_.Close();
  if (http_) http_->stop();
  if (http_thread_.joinable()) http_thread_.join();
}

uint64_t ConsoleServer::version() const {
  vipu::MutexLock lock(&mu_);
  return version_;
}

std::shared_ptr<const PodSnapshot> ConsoleServer::Latest() const {
  vipu::MutexLock lock(&mu_);
  return latest_;
}

uint64_t ConsoleServer::Refresh() {
  vipu::MutexLock pass(&refresh_mu_);
  const absl::Time now = absl::Now();
  const ControlPlane control_plane = deps_.control_plane ? deps_.control_plane() : ControlPlane();
  auto snapshot = CollectSnapshot(deps_.store, deps_.cluster_links, *deps_.registry,
                                  *deps_.controller, now, control_plane);
  if (!snapshot.ok()) {
    spdlog::warn("console: cannot read the pod's state: {}", snapshot.status().ToString());
    return version();
  }
  // A hash of the content: the JSON of a pod of 16,384 machines is tens of
  // MB, kept between refreshes otherwise.
  const size_t fingerprint =
      std::hash<std::string>{}(StateJson(**snapshot, Caller::System(), 0, false));
  uint64_t changed = 0;
  bool sample = false;
  {
    vipu::MutexLock lock(&mu_);
    latest_ = *snapshot;
    if (fingerprint != fingerprint_ || version_ == 0) {
      fingerprint_ = fingerprint;
      changed = ++version_;
    }
    if (now >= next_sample_) {
      next_sample_ = now + options_.sample_every;
      sample = true;
    }
  }
  if (sample) TakeSample(**snapshot);
  if (changed != 0) hub_.Publish("state", absl::StrCat(changed));
  return version();
}

void ConsoleServer::TakeSample(const PodSnapshot& snapshot) {
  history_.Add(Sample{snapshot.unix_ms, CountsOf(snapshot)});
}

void ConsoleServer::Watch() {
  for (;;) {
    const absl::Time start = absl::Now();
    Refresh();
    // A pod whose snapshot is slow to take (thousands of machines) is
    // looked at less often rather than keeping a core busy.
    const absl::Duration wait = std::max(options_.tick, 4 * (absl::Now() - start));
    vipu::MutexLock lock(&stop_mu_);
    if (stop_mu_.AwaitWithTimeout(absl::Condition(&stopping_), wait)) return;
  }
}

std::optional<Session> ConsoleServer::SessionOf(const httplib::Request& req) const {
  const std::string id = CookieValue(req.get_header_value("Cookie"), kCookie);
  if (id.empty()) return std::nullopt;
  return sessions_.Find(id, absl::Now());
}

std::optional<Caller> ConsoleServer::CallerOf(const httplib::Request& req,
                                              httplib::Response& res) const {
  if (!options_.listener.secure) return Caller::System();
  std::optional<Session> s = SessionOf(req);
  if (!s) {
    Fail(res, absl::UnauthenticatedError("console: log in with a user id and access key"));
    return std::nullopt;
  }
  return s->caller;
}

void ConsoleServer::Routes() {
  httplib::Server& h = *http_;
  h.set_post_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    res.set_header("Content-Security-Policy", kCsp);
    res.set_header("X-Content-Type-Options", "nosniff");
    res.set_header("X-Frame-Options", "DENY");
    res.set_header("Referrer-Policy", "no-referrer");
    res.set_header("Cross-Origin-Opener-Policy", "same-origin");
    res.set_header("Cross-Origin-Resource-Policy", "same-origin");
    if (options_.listener.secure) {
      res.set_header("Strict-Transport-Security", "max-age=31536000");
    }
    if (absl::StartsWith(req.path, "/api/")) res.set_header("Cache-Control", "no-store");
  });
  if (deps_.metrics != nullptr) ServeMetrics(h, deps_.metrics);
  for (const char* path : {"/", "/console.js", "/console.css"}) {
    h.Get(path, [](const httplib::Request& req, httplib::Response& res) {
      if (!QueryOf(req.target).empty()) {
        return Fail(res, absl::InvalidArgumentError(
                             absl::StrCat("query: ", req.path, " takes no parameters")));
      }
      const Asset* asset = FindAsset(req.path);
      res.set_content(reinterpret_cast<const char*>(asset->data), asset->size, asset->content_type);
    });
  }
  h.Get("/api/session", [this](const auto& req, auto& res) { HandleSession(req, res); });
  h.Post("/api/login", [this](const auto& req, auto& res) { HandleLogin(req, res); });
  h.Post("/api/logout", [this](const auto& req, auto& res) { HandleLogout(req, res); });
  h.Get("/api/state", [this](const auto& req, auto& res) { HandleState(req, res); });
  h.Get("/api/partition", [this](const auto& req, auto& res) { HandlePartition(req, res); });
  h.Get("/api/history", [this](const auto& req, auto& res) { HandleHistory(req, res); });
  h.Post("/api/action", [this](const auto& req, auto& res) { HandleAction(req, res); });
  h.Get("/api/events", [this](const auto& req, auto& res) { HandleEvents(req, res); });
}

void ConsoleServer::HandleSession(const httplib::Request& req, httplib::Response& res) {
  auto params = ParseParams(QueryOf(req.target), {});
  if (!params.ok()) return Fail(res, params.status());
  if (std::optional<Session> s = SessionOf(req)) {
    return res.set_content(SessionJson(*s, options_.listener.secure), kJson);
  }
  if (options_.listener.secure) {
    return Fail(res, absl::UnauthenticatedError("console: log in with a user id and access key"));
  }
  // Without --secure every caller is the unrestricted anonymous one, as on
  // the APIs; the session only carries the CSRF token of its changes.
  auto s = sessions_.Create(Caller::System(), absl::Now());
  if (!s.ok()) return Fail(res, s.status());
  res.set_header("Set-Cookie",
                 absl::StrCat(kCookie, "=", s->id, "; Path=/; HttpOnly; SameSite=Strict"));
  res.set_content(SessionJson(*s, false), kJson);
}

namespace {

// The form of a POST: urlencoded, from this origin.
absl::StatusOr<Params> FormOf(const httplib::Request& req, const std::set<std::string>& allowed,
                              bool secure) {
  if (!QueryOf(req.target).empty()) {
    return absl::InvalidArgumentError("query: send the parameters in the body");
  }
  const std::string origin = req.get_header_value("Origin");
  const std::string expected =
      absl::StrCat(secure ? "https://" : "http://", req.get_header_value("Host"));
  if (!origin.empty() && origin != expected) {
    return absl::PermissionDeniedError(
        absl::StrCat("origin: requests from '", origin.substr(0, 100), "' are refused"));
  }
  if (!absl::StartsWith(req.get_header_value("Content-Type"),
                        "application/x-www-form-urlencoded")) {
    return absl::InvalidArgumentError("content-type: expected application/x-www-form-urlencoded");
  }
  return ParseParams(req.body, allowed);
}

}  // namespace

void ConsoleServer::HandleLogin(const httplib::Request& req, httplib::Response& res) {
  auto form = FormOf(req, {"user", "key"}, options_.listener.secure);
  if (!form.ok()) return Fail(res, form.status());
  auto login = LoginParams(*form);
  if (!login.ok()) return Fail(res, login.status());
  if (!options_.listener.secure) {
    return Fail(res, absl::FailedPreconditionError(
                         "login: the server runs without --secure; there are no users"));
  }
  CallInfo call;
  call.user_id = login->user_id;
  call.access_key = login->access_key;
  call.peer = absl::StrCat("console:", req.remote_addr);
  static const Action kLogin{"console login", false, false};
  // Start refused a secure console without the policy.
  absl::StatusOr<Caller> caller = deps_.access->Admit(call, kLogin);
  if (!caller.ok()) return Fail(res, caller.status());
  auto s = sessions_.Create(*caller, absl::Now());
  if (!s.ok()) return Fail(res, s.status());
  spdlog::info("console: {} logged in from {}", caller->Name(), req.remote_addr);
  res.set_header("Set-Cookie",
                 absl::StrCat(kCookie, "=", s->id, "; Path=/; HttpOnly; Secure; SameSite=Strict"));
  res.set_content(SessionJson(*s, true), kJson);
}

void ConsoleServer::HandleLogout(const httplib::Request& req, httplib::Response& res) {
  auto form = FormOf(req, {}, options_.listener.secure);
  if (!form.ok()) return Fail(res, form.status());
  std::optional<Session> s = SessionOf(req);
  if (!s) return Fail(res, absl::UnauthenticatedError("logout: no session"));
  if (!TokensEqual(req.get_header_value(kCsrfHeader), s->csrf)) {
    return Fail(res, absl::PermissionDeniedError("csrf: missing or wrong X-CSRF-Token"));
  }
  sessions_.Remove(s->id);
  res.set_header("Set-Cookie",
                 absl::StrCat(kCookie, "=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict",
                              options_.listener.secure ? "; Secure" : ""));
  res.set_content("{}", kJson);
}

void ConsoleServer::HandleState(const httplib::Request& req, httplib::Response& res) {
  auto params = ParseParams(QueryOf(req.target), {});
  if (!params.ok()) return Fail(res, params.status());
  std::optional<Caller> caller = CallerOf(req, res);
  if (!caller) return;
  std::shared_ptr<const PodSnapshot> snapshot;
  uint64_t version = 0;
  {
    vipu::MutexLock lock(&mu_);
    snapshot = latest_;
    version = version_;
  }
  if (snapshot == nullptr) {
    return Fail(res, absl::UnavailableError("state: not read yet; retry"));
  }
  res.set_content(StateJson(*snapshot, *caller, version), kJson);
}

void ConsoleServer::HandlePartition(const httplib::Request& req, httplib::Response& res) {
  auto params = ParseParams(QueryOf(req.target), {"id"});
  if (!params.ok()) return Fail(res, params.status());
  auto id = PartitionIdParam(*params, "id");
  if (!id.ok()) return Fail(res, id.status());
  std::optional<Caller> caller = CallerOf(req, res);
  if (!caller) return;
  auto partition = deps_.controller->Get(*id, *caller);
  if (!partition.ok()) return Fail(res, partition.status());
  std::shared_ptr<const fabric::Cluster> cluster;
  fabric::MachineType machine_type = fabric::MachineType::kM2000;
  if (std::shared_ptr<const PodSnapshot> s = Latest()) {
    for (const ClusterView& c : s->clusters) {
      if (c.cluster->id == partition->cluster_id) cluster = c.cluster;
    }
    if (!partition->ipus.empty()) {
      auto a = s->agents.find(partition->ipus.front().ipu.agent_id);
      if (a != s->agents.end()) machine_type = a->second.machine_type;
    }
  }
  if (cluster == nullptr) {
    return Fail(res, absl::UnavailableError("partition: its cluster is not read yet; retry"));
  }
  auto layout = deps_.cluster_links->LayoutOf(cluster);
  if (!layout.ok()) return Fail(res, layout.status());
  JsonWriter j;
  j.BeginObject().Field("id", partition->id);
  j.Key("target_options").BeginObject();
  for (const auto& [key, value] : fabric::TargetOptions(*partition, **layout)) {
    j.Field(key, value);
  }
  j.EndObject();
  j.Key("gcds").BeginArray();
  auto gcds = deps_.controller->IpuofConfigs(*id, std::nullopt, *caller);
  if (gcds.ok()) {
    for (size_t g = 0; g < gcds->size(); ++g) {
      const fabric::GcdConfig& gcd = (*gcds)[g];
      j.BeginObject().Field("gcd", g);
      j.Key("attributes").BeginObject();
      for (const auto& [key, value] : gcd.attributes) j.Field(key, value);
      j.EndObject();
      j.Key("devices").BeginArray();
      for (const fabric::IpuofDevice& d : gcd.devices) {
        j.BeginObject()
            .Field("id", d.device_id)
            .Field("ip", d.ip)
            .Field("server_port", d.server_port)
            .Field("rdma_port", d.rdma_port)
            .Field("ipulink_segment_id", d.ipulink_segment_id)
            .Field("routing_id", d.routing_id)
            .Field("ipu_id", d.ipu_id)
            .Field("chip_id", d.chip_id)
            .EndObject();
      }
      j.EndArray().EndObject();
    }
  }
  j.EndArray();
  if (!gcds.ok()) j.Field("gcds_error", std::string(gcds.status().message()));
  j.Key("prediction");
  const std::string prediction = BertLargePredictionJson(*partition, *cluster, machine_type);
  std::string out = j.Take();
  absl::StrAppend(&out, prediction, "}");
  res.set_content(out, kJson);
}

void ConsoleServer::HandleHistory(const httplib::Request& req, httplib::Response& res) {
  auto params = ParseParams(QueryOf(req.target), {"minutes"});
  if (!params.ok()) return Fail(res, params.status());
  auto minutes = IntParam(*params, "minutes", 1, 60, 60);
  if (!minutes.ok()) return Fail(res, minutes.status());
  std::optional<Caller> caller = CallerOf(req, res);
  if (!caller) return;
  res.set_content(HistoryJson(history_.Since(absl::Now(), absl::Minutes(*minutes)), *caller),
                  kJson);
}

void ConsoleServer::HandleAction(const httplib::Request& req, httplib::Response& res) {
  auto form = FormOf(req, {"action", "id"}, options_.listener.secure);
  if (!form.ok()) return Fail(res, form.status());
  auto action = ActionParam(*form, "action");
  if (!action.ok()) return Fail(res, action.status());
  auto id = PartitionIdParam(*form, "id");
  if (!id.ok()) return Fail(res, id.status());
  const char* verb = *action == PartitionAction::kRemove ? "remove" : "reset";
  std::optional<Session> s = SessionOf(req);
  const absl::Status done = [&]() -> absl::Status {
    if (!s) return absl::UnauthenticatedError("action: no session; reload the console");
    if (!TokensEqual(req.get_header_value(kCsrfHeader), s->csrf)) {
      return absl::PermissionDeniedError("csrf: missing or wrong X-CSRF-Token");
    }
    if (options_.listener.secure && !s->caller.is_admin) {
      return absl::PermissionDeniedError(absl::StrCat("permission denied: ", verb,
                                                      " partition from the console needs an "
                                                      "admin user; '",
                                                      s->caller.user_id, "' is not one"));
    }
    return *action == PartitionAction::kRemove
               ? deps_.controller->Remove(*id, /*force=*/false, s->caller)
               : deps_.controller->Reset(*id, s->caller);
  }();
  // The console changes partitions as the APIs do, so it leaves the same
  // trail, allowed or refused.
  if (deps_.audit != nullptr) {
    AuditRecord record;
    record.time = absl::Now();
    record.user = s ? s->caller.user_id : "";
    record.peer = absl::StrCat("http:", req.remote_addr, ":", req.remote_port);
    record.action =
        *action == PartitionAction::kRemove ? "console/RemovePartition" : "console/ResetPartition";
    record.object = *id;
    record.result = absl::StatusCodeToString(done.code());
    record.message = std::string(done.message());
    if (absl::Status a = deps_.audit->Append(record); !a.ok()) {
      spdlog::error("console: audit: {}", std::string(a.message()));
    }
  }
  if (!done.ok()) return Fail(res, done);
  spdlog::info("console: {} {} partition {}", s->caller.Name(),
               *action == PartitionAction::kRemove ? "removed" : "reset", *id);
  Refresh();
  JsonWriter j;
  j.BeginObject().Field("id", *id).Field("action", verb).Field("version", version()).EndObject();
  res.set_content(j.Take(), kJson);
}

void ConsoleServer::HandleEvents(const httplib::Request& req, httplib::Response& res) {
  auto params = ParseParams(QueryOf(req.target), {});
  if (!params.ok()) return Fail(res, params.status());
  std::optional<Caller> caller = CallerOf(req, res);
  if (!caller) return;
  auto subscribed = hub_.Subscribe();
  if (!subscribed.ok()) return Fail(res, subscribed.status());
  std::shared_ptr<Subscription> sub = *std::move(subscribed);
  const uint64_t now_version = version();
  auto started = std::make_shared<bool>(false);
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream",
      [sub, started, now_version](size_t, httplib::DataSink& sink) {
        if (!*started) {
          *started = true;
          const std::string hello =
              absl::StrCat("retry: 1000\n", FormatEvent("state", absl::StrCat(now_version)));
          return sink.write(hello.data(), hello.size());
        }
        bool ended = false;
        std::optional<std::string> next = sub->Next(absl::Seconds(5), &ended);
        if (ended) return false;
        // A comment line now and then finds browsers that went away.
        const std::string text = next ? *next : std::string(":\n\n");
        return sink.write(text.data(), text.size());
      },
      [sub](bool) {});
}

}  // namespace vipu::server
