// Endpoints: starts one grpc::Server per distinct listen address, with health and reflection.
#include "server/endpoints.h"

#include <grpcpp/health_check_service_interface.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/user_service.h"
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
  std::unique_ptr<grpc::Server> server;
  std::string address;
};

Endpoints::~Endpoints() { Shutdown(std::chrono::system_clock::now()); }

absl::StatusOr<std::unique_ptr<Endpoints>> Endpoints::Start(const EndpointSpec& spec) {
  std::unique_ptr<Endpoints> e(new Endpoints());
  const bool tls = spec.api_credentials != nullptr;
  auto api_credentials = tls ? spec.api_credentials : grpc::InsecureServerCredentials();

  // Groups roles by address; the first role decides the credentials.
  auto listener_for = [&](const std::string& listen, bool role_tls,
                          const std::string& role) -> absl::StatusOr<Listener*> {
    for (auto& l : e->listeners_) {
      if (l->listen != listen) continue;
      // "host:0" asks for a fresh port: roles of different security get their own.
      if (l->tls != role_tls && listen.size() > 2 && listen.substr(listen.size() - 2) == ":0") {
        continue;
      }
      if (l->tls != role_tls) {
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
    l->tls = role_tls;
    l->credentials = role_tls ? api_credentials : grpc::InsecureServerCredentials();
    l->roles.push_back(role);
    e->listeners_.push_back(std::move(l));
    return e->listeners_.back().get();
  };

  auto user = listener_for(spec.user_listen, tls, "user");
  if (!user.ok()) return user.status();
  (*user)->services.insert((*user)->services.end(), spec.user_services.begin(),
                           spec.user_services.end());
  auto admin =
      listener_for(spec.admin_listen.empty() ? spec.user_listen : spec.admin_listen, tls, "admin");
  if (!admin.ok()) return admin.status();
  (*admin)->services.insert((*admin)->services.end(), spec.admin_services.begin(),
                            spec.admin_services.end());
  auto agent =
      listener_for(spec.agent_listen.empty() ? spec.user_listen : spec.agent_listen, tls, "agent");
  if (!agent.ok()) return agent.status();
  (*agent)->services.insert((*agent)->services.end(), spec.agent_services.begin(),
                            spec.agent_services.end());

  for (auto& l : e->listeners_) {
    grpc::ServerBuilder builder;
    // gRPC sets SO_REUSEPORT by default: a second server on a port in use
    // would then start, and the kernel would split the clients between the
    // two. A port in use must be an error at start instead.
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    int port = 0;
    builder.AddListeningPort(l->listen, l->credentials, &port);
    for (grpc::Service* s : l->services) builder.RegisterService(s);
    l->version = std::make_unique<VersionService>();
    builder.RegisterService(l->version.get());
    // The synchronous server keeps at most MAX_POLLERS idle threads per
    // completion queue and ends the others. Its default of 2 means that with
    // more clients than that in flight (a status read waiting for its
    // partition, a create waiting for its commit) threads are started and
    // ended all the time: about one per partition cycle at 32 clients. Idle
    // threads are kept instead, as many as calls were once in flight at once.
    builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::NUM_CQS, 1);
    builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS,
                                kMaxIdleThreads);
    if (spec.configure) spec.configure(builder);
    l->server = builder.BuildAndStart();
    if (!l->server || port == 0) {
      return absl::UnavailableError(absl::StrCat("cannot listen on ", l->listen));
    }
    l->server->GetHealthCheckService()->SetServingStatus(false);
    l->address = absl::StrCat(l->listen.substr(0, l->listen.rfind(':')), ":", port);
    for (const std::string& role : l->roles) {
      if (role == "user") e->user_address_ = l->address;
      if (role == "admin") e->admin_address_ = l->address;
      if (role == "agent") e->agent_address_ = l->address;
    }
    spdlog::info("listening on {} ({} API{}, {})", l->address, absl::StrJoin(l->roles, ", "),
                 l->roles.size() > 1 ? "s" : "", l->tls ? "mutual TLS" : "plaintext");
  }
  return e;
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
