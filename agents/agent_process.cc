// AgentProcess: starts, serves and stops the machines of one vipu-agent.
#include "agents/agent_process.h"

#include <chrono>
#include <cstdlib>
#include <random>
#include <set>

#include "absl/strings/str_cat.h"
#include "base/host_port.h"
#include "base/loopback_ports.h"
#include "base/status_macros.h"
#include "fabric/enum_names.h"
#include "grpcpp/server_builder.h"
#include "spdlog/spdlog.h"
#include "tls/credentials.h"
#include "tls/tls_files.h"

namespace vipu::agents {
namespace {

// A server on `address` for `service`, and the port it got; null when the
// address cannot be listened on.
std::unique_ptr<grpc::Server> Serve(const std::string& address,
                                    const std::shared_ptr<grpc::ServerCredentials>& credentials,
                                    grpc::Service* service, int* port) {
  grpc::ServerBuilder builder;
  // gRPC sets SO_REUSEPORT by default: a second agent could then share a
  // port that is already in use instead of failing.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddListeningPort(address, credentials, port);
  builder.RegisterService(service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (*port == 0) return nullptr;
  return server;
}

}  // namespace

absl::StatusOr<std::unique_ptr<AgentProcess>> AgentProcess::Start(const AgentOptions& options,
                                                                  std::ostream& announce) {
  std::unique_ptr<AgentProcess> p(new AgentProcess(options));
  RETURN_IF_ERROR(p->StartTls());
  if (options.stable_ports) {
    // Every port this process was given is another machine's.
    std::set<uint32_t> reserved = options.reserved_ports;
    for (uint32_t port : options.ports) reserved.insert(port);
    for (uint32_t port : options.rdma_ports) reserved.insert(port);
    reserved.erase(0);
    // From a random place, so that processes starting together rarely
    // contend for the same ports; when they do, the bind decides.
    p->picker_ = std::make_unique<StablePortPicker>(StablePortRange(), std::random_device()(),
                                                    std::move(reserved));
  }
  // On failure the destructor stops what did start.
  RETURN_IF_ERROR(options.shared_port ? p->ServeSharedPort(announce)
                                      : p->ServeEachMachine(announce));

  RegistrationOptions registration;
  registration.server_addresses = options.servers;
  registration.advertised_host = options.host;
  registration.batched = options.shared_port;
  registration.credentials = p->channel_credentials_;
  std::vector<SimulatedMachine*> machines;
  for (auto& machine : p->machines_) machines.push_back(machine.get());
  p->registration_ = std::make_unique<RegistrationClient>(registration, machines);
  p->registration_->Start();
  return p;
}

AgentProcess::~AgentProcess() {
  if (registration_) registration_->Stop();
  // The RDMA ports go first: a server restarting its pod waits for the
  // machines' server ports and finds the RDMA ports free by then.
  rdma_ports_.reset();
  ShutdownServers();
}

absl::Status AgentProcess::HoldRdmaPorts(std::vector<uint32_t> wanted) {
  // Options built in code may leave them out: any free ports then.
  wanted.resize(machines_.size(), 0);
  ASSIGN_OR_RETURN(rdma_ports_, RdmaPorts::Listen(options_.host, wanted, picker_.get()));
  for (size_t i = 0; i < machines_.size(); ++i) {
    machines_[i]->set_rdma_port(rdma_ports_->ports()[i]);
  }
  return absl::OkStatus();
}

std::unique_ptr<grpc::Server> AgentProcess::ServeOn(uint32_t asked, grpc::Service* service,
                                                    int* port, uint32_t* rdma) {
  if (asked != 0 || picker_ == nullptr) {
    return Serve(HostPort(options_.host, asked), server_credentials_, service, port);
  }
  std::unique_ptr<grpc::Server> server;
  // The probes only skip ports that are plainly taken; the bind decides.
  const uint32_t taken = picker_->Take(
      [&](uint32_t candidate) {
        if (!LoopbackPortFree(candidate) || !LoopbackPortFree(candidate + 1)) return false;
        server = Serve(HostPort(options_.host, candidate), server_credentials_, service, port);
        return server != nullptr;
      },
      /*pair=*/true);
  if (taken == 0) {
    spdlog::warn(
        "no free port above the ephemeral range; taking any free port, which may "
        "change when the pod restarts");
    return Serve(HostPort(options_.host, 0), server_credentials_, service, port);
  }
  picker_->Reserve(taken + 1);
  if (*rdma == 0) *rdma = taken + 1;
  return server;
}

absl::Status AgentProcess::StartTls() {
  server_credentials_ = grpc::InsecureServerCredentials();
  if (!options_.tls()) return absl::OkStatus();
  // Checked before any port opens: a bad file is a start-up error naming it.
  auto live = tls::LiveCertificates::Start({options_.tls_ca, options_.tls_cert, options_.tls_key});
  if (!live.ok()) {
    spdlog::error("TLS: {}", std::string(live.status().message()));
    return absl::InvalidArgumentError(absl::StrCat("TLS: ", live.status().message()));
  }
  // The server checks the agent id against the certificate at every
  // connection; a certificate for other ids would only fail later, call by
  // call. The first and the last id stand for a long generated list.
  std::vector<std::string> ids = options_.agent_ids;
  if (ids.size() > 64) ids = {options_.agent_ids.front(), options_.agent_ids.back()};
  auto pem = tls::LoadTlsFiles({options_.tls_ca, options_.tls_cert, options_.tls_key});
  absl::Status named = pem.ok() ? tls::CheckCertificateNames(pem->cert, ids, {}) : pem.status();
  if (!named.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("TLS: ", options_.tls_cert, ": ", named.message(),
                     " (issue it with vipu-server --tls-init DIR --tls-agents ID+ID...@HOST)"));
  }
  certificates_ = *std::move(live);
  if (certificates_->CertificateExpired()) {
    spdlog::warn("{} has expired: the server and other agents will refuse it", options_.tls_cert);
  }
  server_credentials_ = tls::MutualTlsServerCredentials(*certificates_);
  channel_credentials_ = tls::MutualTlsChannelCredentials(*certificates_);
  spdlog::info("mutual TLS with {} (CA {})", options_.tls_cert, options_.tls_ca);
  return absl::OkStatus();
}

absl::Status AgentProcess::ServeSharedPort(std::ostream& announce) {
  // Every machine behind one server and port, dispatched by agent id. An
  // injected crash marks the machine crashed: it refuses calls and stops
  // heartbeating, while the other machines on the port serve on.
  std::vector<SimulatedMachine*> shared;
  for (const std::string& id : options_.agent_ids) {
    machines_.push_back(std::make_unique<SimulatedMachine>(id, options_.machine_type));
    shared.push_back(machines_.back().get());
  }
  services_.push_back(AgentService::SharedPort(shared, Peers()));
  const std::string address = HostPort(options_.host, options_.ports[0]);
  int port = 0;
  std::vector<uint32_t> rdma = options_.rdma_ports;
  rdma.resize(machines_.size(), 0);
  std::unique_ptr<grpc::Server> server =
      ServeOn(options_.ports[0], services_.back().get(), &port, &rdma[0]);
  if (server == nullptr) {
    spdlog::error("{} machines: cannot listen on {}", machines_.size(), address);
    return absl::UnavailableError(absl::StrCat("cannot listen on ", address));
  }
  {
    vipu::MutexLock lock(&crash_mu_);
    servers_.push_back(std::move(server));
  }
  for (auto& machine : machines_) machine->set_ipuof_port(static_cast<uint32_t>(port));
  if (absl::Status s = HoldRdmaPorts(std::move(rdma)); !s.ok()) {
    spdlog::error("{} machines: {}", machines_.size(), std::string(s.message()));
    return s;
  }
  spdlog::info("{} machines ({} .. {}, {}) listening on {}:{}, RDMA ports {} .. {}",
               machines_.size(), machines_.front()->agent_id(), machines_.back()->agent_id(),
               fabric::CliName(options_.machine_type), options_.host, port,
               machines_.front()->rdma_port(), machines_.back()->rdma_port());
  announce << "machines " << machines_.size() << " listening on " << options_.host << ":" << port
           << std::endl;
  return absl::OkStatus();
}

PeerPolicy AgentProcess::Peers() const {
  return channel_credentials_ ? PeerPolicy::ServerCallsFromTheServerOnly(channel_credentials_)
                              : PeerPolicy::PlaintextAdmittingEveryone();
}

absl::Status AgentProcess::ServeEachMachine(std::ostream& announce) {
  servers_.reserve(options_.agent_ids.size());
  std::vector<uint32_t> rdma = options_.rdma_ports;
  rdma.resize(options_.agent_ids.size(), 0);
  for (size_t i = 0; i < options_.agent_ids.size(); ++i) {
    const std::string& id = options_.agent_ids[i];
    machines_.push_back(std::make_unique<SimulatedMachine>(id, options_.machine_type));
    services_.push_back(
        std::make_unique<AgentService>(machines_.back().get(), Peers(), [this, i] { Crash(i); }));
    const std::string address = HostPort(options_.host, options_.ports[i]);
    int port = 0;
    std::unique_ptr<grpc::Server> server =
        ServeOn(options_.ports[i], services_.back().get(), &port, &rdma[i]);
    if (server == nullptr) {
      spdlog::error("agent {}: cannot listen on {}", id, address);
      return absl::UnavailableError(absl::StrCat("agent ", id, ": cannot listen on ", address));
    }
    {
      // A machine already serving may be told to crash: its crash thread
      // reads servers_ under the same lock.
      vipu::MutexLock lock(&crash_mu_);
      servers_.push_back(std::move(server));
    }
    machines_.back()->set_ipuof_port(static_cast<uint32_t>(port));
  }
  if (absl::Status s = HoldRdmaPorts(std::move(rdma)); !s.ok()) {
    spdlog::error("{}", std::string(s.message()));
    return s;
  }
  // Announced only once every machine listens, so a reader of the lines
  // never sees a process that then fails half way.
  for (const auto& machine : machines_) {
    spdlog::info("agent {} ({}) listening on {}:{}, RDMA port {}", machine->agent_id(),
                 fabric::CliName(machine->machine_type()), options_.host, machine->ipuof_port(),
                 machine->rdma_port());
    announce << "agent " << machine->agent_id() << " listening on " << options_.host << ":"
             << machine->ipuof_port() << std::endl;
  }
  return absl::OkStatus();
}

absl::Status AgentProcess::ReloadCertificates() {
  if (!certificates_) return absl::FailedPreconditionError("no certificates without --tls-ca");
  return certificates_->Reload();
}

bool AgentProcess::CertificateExpired() const {
  return certificates_ != nullptr && certificates_->CertificateExpired();
}

void AgentProcess::Crash(size_t index) {
  if (options_.agent_ids.size() == 1) {
    std::thread([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      std::_Exit(70);
    }).detach();
    return;
  }
  vipu::MutexLock lock(&crash_mu_);
  crash_threads_.emplace_back([this, index] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    grpc::Server* server = nullptr;
    {
      vipu::MutexLock lock(&crash_mu_);
      if (index < servers_.size()) server = servers_[index].get();
    }
    // Outside the lock: Shutdown waits for the server's calls, and one of
    // them may be injecting another crash.
    if (server != nullptr) server->Shutdown(std::chrono::system_clock::now());
  });
}

void AgentProcess::JoinCrashThreads() {
  std::vector<std::thread> threads;
  {
    vipu::MutexLock lock(&crash_mu_);
    threads.swap(crash_threads_);
  }
  // Not under the lock: a crash thread takes it to find its server.
  for (std::thread& t : threads) t.join();
}

void AgentProcess::ShutdownServers() {
  JoinCrashThreads();
  // Calls in flight end now rather than holding the process. servers_ no
  // longer changes: only Start writes it.
  for (auto& server : servers_) server->Shutdown(std::chrono::system_clock::now());
  for (auto& server : servers_) server->Wait();
  JoinCrashThreads();  // any that the last calls started
}

}  // namespace vipu::agents
