// Endpoints: starts one grpc::Server per distinct listen address, with health and reflection.
#include "server/api/endpoints.h"

#include <grpcpp/health_check_service_interface.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/listen_probe.h"
#include "base/loopback_ports.h"
#include "base/status_macros.h"
#include "server/api/user_service.h"
#include "spdlog/spdlog.h"

namespace vipu::server {
namespace {

// Idle server threads kept per listener (see Start).
constexpr int kMaxIdleThreads = 256;

}  // namespace

struct Endpoints::Listener {
  std::string listen;
  std::shared_ptr<grpc::ServerCredentials> credentials;
  bool tls = false;
  std::vector<grpc::Service*> services;
  std::vector<std::string> roles;
  std::unique_ptr<VersionService> version;  // one per server: a service serves one server
  std::shared_ptr<grpc::CallbackGenericService> generic;
  std::unique_ptr<grpc::Server> server;
  std::string address;
};

Endpoints::~Endpoints() { Shutdown(std::chrono::system_clock::now()); }

absl::StatusOr<Endpoints::Listener*> Endpoints::ListenerFor(
    const std::string& listen, bool tls,
    const std::shared_ptr<grpc::ServerCredentials>& credentials, const std::string& role) {
  for (auto& l : listeners_) {
    if (l->listen != listen) continue;
    // "host:0" asks for a fresh port: roles of different security get their own.
    if (l->tls != tls && listen.size() > 2 && listen.substr(listen.size() - 2) == ":0") {
      continue;
    }
    if (l->tls != tls) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", role, "-api-listen ", listen, ": the ", role,
                       " API is served without TLS and cannot share an address with the "
                       "TLS-protected ",
                       l->roles.front(), " API; give it its own address"));
    }
    l->roles.push_back(role);
    return l.get();
  }
  auto l = std::make_unique<Listener>();
  l->listen = listen;
  l->tls = tls;
  l->credentials = tls ? credentials : grpc::InsecureServerCredentials();
  l->roles.push_back(role);
  listeners_.push_back(std::move(l));
  return listeners_.back().get();
}

absl::StatusOr<std::unique_ptr<Endpoints>> Endpoints::Start(const EndpointSpec& spec) {
  std::unique_ptr<Endpoints> e(new Endpoints());
  const bool tls = spec.api_credentials != nullptr;
  auto credentials = tls ? spec.api_credentials : grpc::InsecureServerCredentials();
  auto add = [](Listener* l, const std::vector<grpc::Service*>& services) {
    l->services.insert(l->services.end(), services.begin(), services.end());
  };
  ASSIGN_OR_RETURN(Listener * user, e->ListenerFor(spec.user_listen, tls, credentials, "user"));
  add(user, spec.user_services);
  ASSIGN_OR_RETURN(Listener * admin,
                   e->ListenerFor(spec.admin_listen.empty() ? spec.user_listen : spec.admin_listen,
                                  tls, credentials, "admin"));
  add(admin, spec.admin_services);
  ASSIGN_OR_RETURN(Listener * agent,
                   e->ListenerFor(spec.agent_listen.empty() ? spec.user_listen : spec.agent_listen,
                                  tls, credentials, "agent"));
  add(agent, spec.agent_services);
  for (auto& l : e->listeners_) RETURN_IF_ERROR(e->StartListener(l.get(), spec));
  return e;
}

absl::Status Endpoints::StartListener(Listener* l, const EndpointSpec& spec) {
  grpc::ServerBuilder builder;
  // gRPC sets SO_REUSEPORT by default: a second server on a port in use
  // would then start, and the kernel would split the clients between the
  // two. A port in use must be an error at start instead, found by the
  // bind itself or, for listeners that share with their own process, by a
  // probe.
  if (spec.sharing == EndpointSpec::Sharing::kFirst) RETURN_IF_ERROR(ProbeListenAddress(l->listen));
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT,
                             spec.sharing == EndpointSpec::Sharing::kNone ? 0 : 1);
  // A standby pings its leader every second, with or without calls, to find
  // a cut link quickly (server/ha/forwarder.cc); gRPC's defaults would take
  // that for abuse and close the connection.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 500);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  int port = 0;
  builder.AddListeningPort(l->listen, l->credentials, &port);
  for (grpc::Service* s : l->services) builder.RegisterService(s);
  l->version = std::make_unique<VersionService>();
  builder.RegisterService(l->version.get());
  if (spec.generic_service) {
    l->generic = spec.generic_service();
    builder.RegisterCallbackGenericService(l->generic.get());
  }
  // The synchronous server keeps at most MAX_POLLERS idle threads per
  // completion queue and ends the others. Its default of 2 means that with
  // more clients than that in flight (a status read waiting for its
  // partition, a create waiting for its commit) threads are started and
  // ended all the time: about one per partition cycle at 32 clients. Idle
  // threads are kept instead, as many as calls were once in flight at once.
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::NUM_CQS, 1);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS, kMaxIdleThreads);
  if (spec.configure) spec.configure(builder);
  l->server = builder.BuildAndStart();
  if (!l->server || port == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", l->listen, ListenFailureReason(l->listen)));
  }
  l->server->GetHealthCheckService()->SetServingStatus(false);
  l->address = absl::StrCat(l->listen.substr(0, l->listen.rfind(':')), ":", port);
  for (const std::string& role : l->roles) {
    if (role == "user") user_address_ = l->address;
    if (role == "admin") admin_address_ = l->address;
    if (role == "agent") agent_address_ = l->address;
  }
  spdlog::info("listening on {} ({} API{}, {})", l->address, absl::StrJoin(l->roles, ", "),
               l->roles.size() > 1 ? "s" : "", l->tls ? "mutual TLS" : "plaintext");
  return absl::OkStatus();
}

void Endpoints::SetServing(bool serving) {
  for (auto& l : listeners_) {
    if (l->server) l->server->GetHealthCheckService()->SetServingStatus(serving);
  }
}

void Endpoints::Shutdown(std::chrono::system_clock::time_point deadline) {
  for (auto& l : listeners_) {
    if (l->server) l->server->Shutdown(deadline);
  }
  for (auto& l : listeners_) {
    if (l->server) l->server->Wait();
    l->server.reset();
  }
}

}  // namespace vipu::server
