// The gRPC listeners of vipu-server. The user API (virmgrpc + the allocation
// list), the admin API and the agent registry can each have their own address,
// so that networks (VLANs) can keep them apart (docs/security.md, End-points).
// Roles that share an address share one grpc::Server; each server gets health
// checking, reflection and the version service.
#ifndef VIPU_SERVER_API_ENDPOINTS_H_
#define VIPU_SERVER_API_ENDPOINTS_H_

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace vipu::server {

struct EndpointSpec {
  std::string user_listen;   // host:port (port 0: pick one)
  std::string admin_listen;  // empty: same as user_listen
  std::string agent_listen;  // empty: same as user_listen
  // Credentials of every listener (mutual TLS with --secure); null:
  // plaintext.
  std::shared_ptr<grpc::ServerCredentials> api_credentials;
  std::vector<grpc::Service*> user_services;
  std::vector<grpc::Service*> admin_services;
  std::vector<grpc::Service*> agent_services;
  // Called on every builder before it starts (interceptors, channel args).
  std::function<void(grpc::ServerBuilder&)> configure;
  // When set, every listener also gets the generic service this returns
  // (one per server), which receives each method no service above has: how
  // a standby member forwards the API to the leader (server/ha/forwarder.h).
  std::function<std::shared_ptr<grpc::CallbackGenericService>()> generic_service;
  // Whether another listener of this process may bind the same addresses
  // (SO_REUSEPORT): a member's leader listeners start beside its standby
  // ones (kJoin), which close only then, so no connection is refused
  // between the two. The standby's (kFirst) first make sure no socket holds
  // their addresses (base/listen_probe.h), since the kernel would share
  // them with another process too. kNone: a port in use fails the start.
  enum class Sharing { kNone, kFirst, kJoin };
  Sharing sharing = Sharing::kNone;
};

// Owns the grpc::Servers (and a VersionService each); borrows the services
// in the spec, which must outlive it. The addresses may be read from any
// thread; SetServing and Shutdown are the owner's, on one thread.
class Endpoints {
 public:
  // UNAVAILABLE naming the address that could not be bound.
  static absl::StatusOr<std::unique_ptr<Endpoints>> Start(const EndpointSpec& spec);
  ~Endpoints();

  // host:port as bound (the port resolved when 0 was asked).
  const std::string& user_address() const { return user_address_; }
  const std::string& admin_address() const { return admin_address_; }
  const std::string& agent_address() const { return agent_address_; }

  void SetServing(bool serving);
  // Stops every listener; calls in flight get until `deadline`.
  void Shutdown(std::chrono::system_clock::time_point deadline = std::chrono::system_clock::now());

 private:
  struct Listener;
  Endpoints() = default;
  // The listener of `listen`, shared by the roles on that address (the
  // first role decides the credentials), or a new one.
  absl::StatusOr<Listener*> ListenerFor(const std::string& listen, bool tls,
                                        const std::shared_ptr<grpc::ServerCredentials>& credentials,
                                        const std::string& role);
  // Builds and starts `l`'s gRPC server and records its address per role.
  absl::Status StartListener(Listener* l, const EndpointSpec& spec);
  std::vector<std::unique_ptr<Listener>> listeners_;
  std::string user_address_, admin_address_, agent_address_;
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_API_ENDPOINTS_H_
