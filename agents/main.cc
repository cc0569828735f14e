// vipu-agent: serves one or more simulated IPU-Machines, each with its own
// agent id and gRPC port, and keeps vipu-server told about them.
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agents/agent_options.h"
#include "agents/agent_service.h"
#include "agents/registration.h"
#include "agents/simulated_machine.h"
#include "base/mutex.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "spdlog/sinks/stdout_sinks.h"
#include "spdlog/spdlog.h"
#include "tls/credentials.h"
#include "tls/live_certificates.h"
#include "tls/tls_files.h"

namespace {

std::string HostPort(const std::string& host, uint32_t port) {
  const bool v6 = host.find(':') != std::string::npos && host.front() != '[';
  return v6 ? absl::StrCat("[", host, "]:", port) : absl::StrCat(host, ":", port);
}

}  // namespace

int main(int argc, char** argv) {
  // Debian's abseil checks every Mutex acquisition for lock-order cycles (a
  // debug default it was built with). gRPC takes many locks per call and the
  // check is a measurable share of it; TSan runs catch lock-order bugs.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  using vipu::agents::AgentService;
  using vipu::agents::SimulatedMachine;

  vipu::agents::ParsedCommandLine parsed =
      vipu::agents::ParseAgentCommandLine(argc, argv, std::cout, std::cerr);
  if (!parsed.options) return parsed.exit_code;
  const vipu::agents::AgentOptions& options = *parsed.options;

  if (options.exit_with_parent) {
    // Agents started by `vipu-server --simulate` must not outlive a crashed server.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() == 1) return 0;  // the parent died before prctl took effect
  }

  // Blocked before any thread starts, so every thread inherits the mask and
  // only sigwait below sees the signals: no work happens in a handler.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGHUP);  // reload the certificates
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  // stdout carries only the "listening" lines a parent process reads.
  auto logger = spdlog::stderr_logger_mt("vipu-agent");
  spdlog::set_default_logger(logger);
  spdlog::set_level(options.log_level);
  spdlog::flush_on(spdlog::level::info);

  // Checked before any port opens: a bad file is a start-up error naming it.
  std::unique_ptr<vipu::tls::LiveCertificates> certificates;
  std::shared_ptr<grpc::ServerCredentials> server_credentials = grpc::InsecureServerCredentials();
  std::shared_ptr<grpc::ChannelCredentials> channel_credentials;
  if (options.tls()) {
    auto live =
        vipu::tls::LiveCertificates::Start({options.tls_ca, options.tls_cert, options.tls_key});
    if (!live.ok()) {
      spdlog::error("TLS: {}", std::string(live.status().message()));
      std::cerr << "vipu-agent: TLS: " << live.status().message() << "\n";
      return 2;
    }
    // The server checks the agent id against the certificate at every
    // connection; a certificate for other ids would only fail later, call
    // by call. The first and the last id stand for a long generated list.
    std::vector<std::string> ids = options.agent_ids;
    if (ids.size() > 64) ids = {options.agent_ids.front(), options.agent_ids.back()};
    auto pem = vipu::tls::LoadTlsFiles({options.tls_ca, options.tls_cert, options.tls_key});
    absl::Status named =
        pem.ok() ? vipu::tls::CheckCertificateNames(pem->cert, ids, {}) : pem.status();
    if (!named.ok()) {
      std::cerr << "vipu-agent: TLS: " << options.tls_cert << ": " << named.message()
                << " (issue it with vipu-server --tls-init DIR --tls-agents ID+ID...@HOST)\n";
      return 2;
    }
    certificates = *std::move(live);
    if (certificates->CertificateExpired()) {
      spdlog::warn("{} has expired: the server and other agents will refuse it", options.tls_cert);
    }
    server_credentials = vipu::tls::MutualTlsServerCredentials(*certificates);
    channel_credentials = vipu::tls::MutualTlsChannelCredentials(*certificates);
    spdlog::info("mutual TLS with {} (CA {})", options.tls_cert, options.tls_ca);
  }

  std::vector<std::unique_ptr<SimulatedMachine>> machines;
  std::vector<std::unique_ptr<AgentService>> services;
  std::vector<std::unique_ptr<grpc::Server>> servers;
  servers.reserve(options.agent_ids.size());
  // An injected crash stops the machine's server from another thread (not
  // from inside its own handler, which Shutdown would wait for).
  vipu::Mutex crash_mu;  // for crash_threads
  std::vector<std::thread> crash_threads;
  auto shutdown_servers = [&] {
    {
      vipu::MutexLock lock(&crash_mu);
      for (std::thread& t : crash_threads) t.join();
      crash_threads.clear();
    }
    for (auto& server : servers) server->Shutdown(std::chrono::system_clock::now());
    for (auto& server : servers) server->Wait();
  };
  const bool single_machine = options.agent_ids.size() == 1;
  auto crash = [&, single_machine](size_t index) {
    if (single_machine) {
      // The whole process is the machine: die like one, after the reply left.
      std::thread([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        std::_Exit(70);
      }).detach();
      return;
    }
    vipu::MutexLock lock(&crash_mu);
    crash_threads.emplace_back([&servers, index] {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      if (index < servers.size()) servers[index]->Shutdown(std::chrono::system_clock::now());
    });
  };

  // --shared-port: every machine behind one server and port, dispatched by agent id.
  if (options.shared_port) {
    std::vector<SimulatedMachine*> shared;
    for (const std::string& id : options.agent_ids) {
      machines.push_back(std::make_unique<SimulatedMachine>(id, options.machine_type));
      shared.push_back(machines.back().get());
    }
    // An injected crash marks the machine crashed: it refuses calls and
    // stops heartbeating, while the other machines on the port serve on.
    services.push_back(AgentService::SharedPort(shared));
    if (channel_credentials) services.back()->set_tls(channel_credentials);
    const std::string address = HostPort(options.host, options.ports[0]);
    grpc::ServerBuilder builder;
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    int selected_port = 0;
    builder.AddListeningPort(address, server_credentials, &selected_port);
    builder.RegisterService(services.back().get());
    std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
    if (server == nullptr || selected_port == 0) {
      spdlog::error("{} machines: cannot listen on {}", machines.size(), address);
      std::cerr << "vipu-agent: cannot listen on " << address << "\n";
      return 1;
    }
    servers.push_back(std::move(server));
    for (auto& machine : machines) machine->set_ipuof_port(static_cast<uint32_t>(selected_port));
    spdlog::info("{} machines ({} .. {}, {}) listening on {}:{}", machines.size(),
                 machines.front()->agent_id(), machines.back()->agent_id(),
                 vipu::agents::MachineTypeName(options.machine_type), options.host, selected_port);
    std::cout << "machines " << machines.size() << " listening on " << options.host << ":"
              << selected_port << std::endl;
  }

  for (size_t i = 0; !options.shared_port && i < options.agent_ids.size(); ++i) {
    const std::string& id = options.agent_ids[i];
    machines.push_back(std::make_unique<SimulatedMachine>(id, options.machine_type));
    services.push_back(
        std::make_unique<AgentService>(machines.back().get(), [crash, i] { crash(i); }));
    if (channel_credentials) services.back()->set_tls(channel_credentials);
    const std::string address = HostPort(options.host, options.ports[i]);
    grpc::ServerBuilder builder;
    // gRPC sets SO_REUSEPORT by default: a second agent could then share a
    // port that is already in use instead of failing.
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    int selected_port = 0;
    builder.AddListeningPort(address, server_credentials, &selected_port);
    builder.RegisterService(services.back().get());
    std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
    if (server == nullptr || selected_port == 0) {
      spdlog::error("agent {}: cannot listen on {}", id, address);
      std::cerr << "vipu-agent: agent " << id << ": cannot listen on " << address << "\n";
      shutdown_servers();
      return 1;
    }
    servers.push_back(std::move(server));
    machines.back()->set_ipuof_port(static_cast<uint32_t>(selected_port));
  }
  // Announced only once every machine listens, so a reader of stdout never
  // sees a process that then fails half way.
  for (size_t i = 0; !options.shared_port && i < machines.size(); ++i) {
    const auto& machine = machines[i];
    spdlog::info("agent {} ({}) listening on {}:{}", machine->agent_id(),
                 vipu::agents::MachineTypeName(machine->machine_type()), options.host,
                 machine->ipuof_port());
    std::cout << "agent " << machine->agent_id() << " listening on " << options.host << ":"
              << machine->ipuof_port() << std::endl;
  }

  vipu::agents::RegistrationOptions registration_options;
  registration_options.server_address = options.server;
  registration_options.advertised_host = options.host;
  registration_options.batched = options.shared_port;
  registration_options.credentials = channel_credentials;
  std::vector<SimulatedMachine*> machine_ptrs;
  for (auto& machine : machines) machine_ptrs.push_back(machine.get());
  vipu::agents::RegistrationClient registration(registration_options, machine_ptrs);
  registration.Start();

  int signal_number = 0;
  for (;;) {
    sigwait(&stop_signals, &signal_number);
    if (signal_number != SIGHUP) break;
    // The listeners and the partitions held stay; new handshakes use the
    // reloaded files.
    if (!certificates) {
      spdlog::info("SIGHUP: no certificates to reload without --tls-ca");
    } else if (absl::Status s = certificates->Reload(); !s.ok()) {
      spdlog::error("SIGHUP: certificates not reloaded, keeping the old ones: {}",
                    std::string(s.message()));
    } else {
      spdlog::info("SIGHUP: reloaded {}; new connections use it", options.tls_cert);
      if (certificates->CertificateExpired()) {
        spdlog::warn("{} has expired: the server and other agents will refuse it",
                     options.tls_cert);
      }
    }
  }
  spdlog::info("signal {} received: shutting down {} machine(s)", signal_number, machines.size());
  registration.Stop();
  shutdown_servers();
  spdlog::info("stopped");
  return 0;
}
