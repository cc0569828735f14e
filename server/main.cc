// vipu-server: the V-IPU controller daemon.
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "fabric/pods.h"
#include "server/admin_service.h"
#include "server/agent_driver.h"
#include "server/agent_registry.h"
#include "server/audit_interceptor.h"
#include "server/cluster_links_cache.h"
#include "server/cluster_links_loader.h"
#include "server/cluster_tester.h"
#include "server/config_file.h"
#include "server/console/console_http.h"
#include "server/endpoints.h"
#include "server/fault_injector.h"
#include "server/grpc_agent_client.h"
#include "server/health_monitor.h"
#include "server/inventory.h"
#include "server/metrics.h"
#include "server/metrics_http.h"
#include "server/partition_controller.h"
#include "server/readiness.h"
#include "server/registry_service.h"
#include "server/rpc_metrics_interceptor.h"
#include "server/security_setup.h"
#include "server/server_options.h"
#include "server/simulator.h"
#include "server/state_metrics.h"
#include "server/systemd_notify.h"
#include "server/user_service.h"
#include "spdlog/spdlog.h"
#include "storage/store.h"

namespace vipu::server {
namespace {

std::string DefaultAgentBinary() {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "vipu-agent";
  return (self.parent_path() / "vipu-agent").string();
}

absl::Status EnsureSimulatedCluster(Inventory& inventory, const Simulator& sim) {
  const fabric::PodSpec& pod = sim.pod();
  auto clusters = inventory.ListClusters();
  if (!clusters.ok()) return clusters.status();
  bool have_cluster = false;
  for (const fabric::Cluster& c : *clusters) {
    if (c.id != pod.name) continue;
    if (c.agent_ids != sim.agent_ids()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "simulate: the database has a cluster '", c.id, "' with other agents; use another --db"));
    }
    have_cluster = true;
  }
  if (!have_cluster) {
    fabric::Cluster c;
    c.id = pod.name;
    c.agent_ids = sim.agent_ids();
    c.num_ilds = pod.num_ilds;
    c.topology = pod.topology;
    c.cluster_topology = pod.cluster_topology;
    if (absl::Status s = inventory.CreateCluster(c); !s.ok()) return s;
  }
  auto allocations = inventory.ListAllocations();
  if (!allocations.ok()) return allocations.status();
  for (const fabric::Allocation& a : *allocations) {
    if (a.cluster_id == pod.name) return absl::OkStatus();
  }
  fabric::Allocation a;
  a.id = "default";
  a.cluster_id = pod.name;
  return inventory.CreateAllocation(a);
}

// Waits until every agent in `ids` has registered, the deadline passes or
// `give_up` (when set) says no more will come. Returns the ids still missing.
std::vector<std::string> AwaitRegistrations(const AgentRegistry& registry,
                                            const std::vector<std::string>& ids,
                                            absl::Duration window,
                                            const std::function<bool()>& give_up = nullptr) {
  const absl::Time deadline = absl::Now() + window;
  for (;;) {
    std::vector<std::string> missing;
    for (const std::string& id : ids) {
      if (!registry.Contains(id)) missing.push_back(id);
    }
    if (missing.empty() || absl::Now() > deadline || (give_up && give_up())) return missing;
    absl::SleepFor(absl::Milliseconds(10));  // registrations arrive over RPC; poll the registry
  }
}

// The loopback ports the simulated agents registered with in earlier runs,
// by agent id, so that they come back where the IPUoF configs point.
std::map<std::string, uint32_t> RememberedAgentPorts(Inventory& inventory) {
  std::map<std::string, uint32_t> ports;
  auto agents = inventory.ListAgents();
  if (!agents.ok()) {
    spdlog::warn("simulate: cannot read the agents' earlier ports, choosing new ones: {}",
                 agents.status().ToString());
    return ports;
  }
  for (const fabric::Agent& a : *agents) {
    if (a.host == "127.0.0.1" && a.port != 0) ports[a.id] = a.port;
  }
  return ports;
}

int Run(const ServerOptions& opt) {
  // Signals are taken by sigwait() below; block them before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);  // reload the certificates
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  SystemdNotifier notifier;
  notifier.Status("opening the database");
  const absl::Time started = absl::Now();

  std::optional<fabric::PodSpec> pod;
  if (!opt.simulate.empty()) {
    auto p = fabric::PodPreset(opt.simulate);
    if (!p.ok()) {
      std::fprintf(stderr, "vipu-server: --simulate: %s\n",
                   std::string(p.status().message()).c_str());
      return 2;
    }
    pod = *p;
  }

  std::filesystem::path db_path(opt.db);
  if (db_path.has_parent_path()) {
    std::error_code ec;
    std::filesystem::create_directories(db_path.parent_path(), ec);
    if (ec) {
      spdlog::critical("cannot create the directory of --db {}: {}", opt.db, ec.message());
      return 1;
    }
  }
  auto store = storage::Store::Open(opt.db);
  if (!store.ok()) {
    // On stderr as well as in the log: this is what an operator sees when
    // the unit fails (a corrupt file, or a schema newer than this binary).
    spdlog::critical("cannot open database {}: {}", opt.db, store.status().ToString());
    std::fprintf(stderr, "vipu-server: cannot open database %s: %s\n", opt.db.c_str(),
                 std::string(store.status().message()).c_str());
    return 1;
  }
  spdlog::info("database {} open (schema {})", opt.db, storage::kSchemaVersion);

  // The layouts and links of the clusters, shared by everything below,
  // which it outlives.
  ClusterLinksCache cluster_links;
  AgentRegistry registry(absl::Milliseconds(opt.heartbeat_ms));
  GrpcAgentClient agent_client(absl::Milliseconds(opt.agent_deadline_ms));
  AgentDriver driver(&registry, &agent_client);
  PartitionController controller(store->get(), &cluster_links, &registry, &driver, opt.workers);
  Inventory inventory(store->get());
  UserService user_service(&controller, &registry);
  AdminService admin_service(&inventory, &registry, &cluster_links);
  AllocationService allocation_service(&inventory);
  RegistryService registry_service(&inventory, &registry, &controller,
                                   opt.auto_add_agents || pod.has_value());

  // Mutating RPCs wait for reconciliation; the hint counts down to the end
  // of the window (agent calls included).
  Readiness readiness;
  const absl::Time reconcile_deadline = absl::Now() + absl::Milliseconds(opt.reconcile_window_ms);
  readiness.Reconciling(reconcile_deadline + absl::Milliseconds(opt.agent_deadline_ms));
  user_service.set_readiness(&readiness);
  auto security = Security::Start(opt, store->get());
  if (!security.ok()) {
    spdlog::critical("{}", std::string(security.status().message()));
    std::fprintf(stderr, "vipu-server: %s\n", std::string(security.status().message()).c_str());
    return 1;
  }
  user_service.set_access_control((*security)->access());
  user_service.set_inventory(&inventory);
  agent_client.set_channel_credentials((*security)->agent_channel_credentials());
  registry_service.set_require_agent_certificates(opt.secure);
  admin_service.set_access_control((*security)->access());
  allocation_service.set_access_control((*security)->access());
  admin_service.set_readiness(&readiness);
  admin_service.EnableBackup(store->get(), opt.db);

  // Simulated-pod health: partitions own their links, faults can be injected, clusters
  // tested, and a health monitor acts on what heartbeats report.
  driver.set_link_ports([db = store->get(), &cluster_links](const fabric::Partition& p) {
    return PartitionLinkPorts(&cluster_links, db, p);
  });
  FaultInjector fault_injector(store->get(), &cluster_links, &registry, &agent_client);
  ClusterTester cluster_tester(store->get(), &cluster_links, &registry, &agent_client);
  admin_service.EnableHealthOps(&fault_injector, &cluster_tester);
  HealthMonitor::Options health_options;
  health_options.tick = std::clamp(absl::Milliseconds(opt.heartbeat_ms) / 5, absl::Milliseconds(10),
                                   absl::Milliseconds(100));
  HealthMonitor health(store->get(), &cluster_links, &registry, &agent_client, &controller,
                       health_options);

  Metrics metrics;
  RegisterStateMetrics(&metrics, store->get(), &registry, &readiness);
  // Other interceptors (e.g. authentication) are appended to this list.
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(std::make_unique<RpcMetricsInterceptorFactory>(&metrics));

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  // User, admin and agent end-points (one server per distinct address).
  EndpointSpec endpoints;
  endpoints.user_listen = opt.user_api_listen;
  endpoints.admin_listen = opt.admin_api_listen;
  endpoints.agent_listen = opt.agent_api_listen;
  endpoints.api_credentials = (*security)->credentials();
  endpoints.user_services = {&user_service, &allocation_service};
  endpoints.admin_services = {&admin_service, (*security)->user_admin_service()};
  endpoints.agent_services = {&registry_service};
  endpoints.configure = [&](grpc::ServerBuilder& builder) {
    // Each builder consumes its own list.
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> creators;
    for (auto& i : interceptors) creators.push_back(std::move(i));
    interceptors.clear();
    if (creators.empty())
      creators.push_back(std::make_unique<RpcMetricsInterceptorFactory>(&metrics));
    // Every end-point: a mutating method is audited wherever it is served.
    if (AuditLog* audit = (*security)->audit_log(); audit != nullptr) {
      creators.push_back(std::make_unique<AuditInterceptorFactory>(audit));
    }
    builder.experimental().SetInterceptorCreators(std::move(creators));
  };
  auto started_endpoints = Endpoints::Start(endpoints);
  if (!started_endpoints.ok()) {
    spdlog::critical("{}", std::string(started_endpoints.status().message()));
    std::fprintf(stderr, "vipu-server: %s\n",
                 std::string(started_endpoints.status().message()).c_str());
    return 1;
  }
  std::unique_ptr<Endpoints> server = *std::move(started_endpoints);
  const std::string address = server->user_address();
  const std::string agent_address = server->agent_address();

  // The console and /metrics: one HTTP listener under either flag name.
  const bool http_flag = !opt.http_listen.empty();
  const std::string http_listen = http_flag ? opt.http_listen : opt.metrics_listen;
  std::unique_ptr<console::ConsoleServer> http;
  if (!http_listen.empty() && http_listen != "off") {
    console::ConsoleOptions console_options;
    console_options.address = http_listen;
    console_options.flag = http_flag ? "--http-listen" : "--metrics-listen";
    console_options.secure = opt.secure;
    console_options.tls_dir = opt.tls_dir;
    console::ConsoleDeps deps;
    deps.metrics = &metrics;
    deps.store = store->get();
    deps.cluster_links = &cluster_links;
    deps.registry = &registry;
    deps.controller = &controller;
    deps.access = (*security)->access();
    deps.audit = (*security)->audit_log();
    auto started = console::ConsoleServer::Start(console_options, deps);
    if (!started.ok()) {
      spdlog::critical("{}", std::string(started.status().message()));
      std::fprintf(stderr, "vipu-server: %s\n", std::string(started.status().message()).c_str());
      server->Shutdown();
      return 1;
    }
    http = std::move(*started);
    const std::string host = http_listen.substr(0, http_listen.rfind(':'));
    spdlog::info("console on {}://{}:{}/ and metrics on /metrics", opt.secure ? "https" : "http",
                 host, http->port());
  }
  notifier.Status("waiting for agents to register and reconciling them");

  std::unique_ptr<Simulator> sim;
  if (pod) {
    Simulator::Options so;
    so.agent_binary = opt.agent_binary.empty() ? DefaultAgentBinary() : opt.agent_binary;
    const std::string agent_host = agent_address.substr(0, agent_address.rfind(':'));
    so.server_address =
        absl::StrCat(agent_host == "0.0.0.0" || agent_host == "[::]" ? "127.0.0.1" : agent_host,
                     agent_address.substr(agent_address.rfind(':')));
    so.log_level = opt.log_level;
    so.ports = RememberedAgentPorts(inventory);
    if (opt.secure) so.tls_dir = opt.tls_dir;
    auto started = Simulator::Start(*pod, so);
    if (!started.ok()) {
      spdlog::critical("{}", std::string(started.status().message()));
      std::fprintf(stderr, "vipu-server: %s\n", std::string(started.status().message()).c_str());
      server->Shutdown();
      return 1;
    }
    sim = std::move(*started);
    std::optional<std::string> exited;
    std::vector<std::string> missing =
        AwaitRegistrations(registry, sim->agent_ids(), absl::Seconds(30),
                           [&] { return (exited = sim->ExitedChild()).has_value(); });
    if (exited) {
      spdlog::critical("simulate {}: {} before its machines registered", pod->name, *exited);
      std::fprintf(stderr, "vipu-server: simulate %s: %s before its machines registered\n",
                   pod->name.c_str(), exited->c_str());
      server->Shutdown();
      return 1;
    }
    if (!missing.empty()) {
      spdlog::critical("simulate {}: {} agents did not register within 30 s (first: {})", pod->name,
                       missing.size(), missing.front());
      server->Shutdown();
      return 1;
    }
    if (absl::Status s = EnsureSimulatedCluster(inventory, *sim); !s.ok()) {
      spdlog::critical("{}", std::string(s.message()));
      server->Shutdown();
      return 1;
    }
    spdlog::info("simulate {}: {} machines registered, cluster '{}' ready", pod->name,
                 sim->agent_ids().size(), pod->name);
  } else {
    // Give the agents we know a chance to come back before recovering.
    auto agents = inventory.ListAgents();
    std::vector<std::string> ids;
    if (agents.ok()) {
      for (const fabric::Agent& a : *agents) ids.push_back(a.id);
    }
    std::vector<std::string> missing =
        AwaitRegistrations(registry, ids, reconcile_deadline - absl::Now());
    if (!missing.empty()) {
      spdlog::warn("{} known agents have not registered (first: {})", missing.size(),
                   missing.front());
    }
  }
  // Registrations queue reconciliations; serve changes only once the agents
  // hold what the database says.
  if (!controller.AwaitReconciled(std::max(reconcile_deadline, absl::Now()) +
                                  absl::Milliseconds(opt.agent_deadline_ms))) {
    spdlog::warn("reconciliation of the agents did not finish within the window; serving anyway");
  }
  const absl::Time reconciled = absl::Now();
  controller.Recover();
  // Partitions whose agents did not come back are marked before the server
  // says ready; the agents' topology pushes it starts go on in the
  // background (16,384 of them after a restart), off the readiness path.
  health.CheckOnce();
  health.Start();
  readiness.SetReady();
  notifier.StartWatchdog([&store] {
    return store->get()->Read([](storage::ReadTxn&) { return absl::OkStatus(); }).ok();
  });

  server->SetServing(true);
  if (!opt.ready_file.empty()) {
    std::string tmp = opt.ready_file + ".tmp";
    { std::ofstream(tmp) << address << "\n"; }
    std::filesystem::rename(tmp, opt.ready_file);
  }
  std::printf("vipu-server %s ready on %s\n", VIPU_VERSION, address.c_str());
  std::fflush(stdout);
  spdlog::info("ready {} ms after start ({} agents registered; reconciled at {} ms)",
               absl::ToInt64Milliseconds(absl::Now() - started), registry.size(),
               absl::ToInt64Milliseconds(reconciled - started));
  notifier.Ready(absl::StrCat("serving on ", address, ", ", registry.size(), " agents registered"));

  int sig = 0;
  for (;;) {
    sigwait(&signals, &sig);
    if (sig != SIGHUP) break;
    // Running partitions and open connections are not touched: only new
    // handshakes see the reloaded certificates.
    if (opt.secure) {
      (void)(*security)->ReloadCertificates();
    } else {
      spdlog::info("SIGHUP: no certificates to reload without --secure");
    }
  }
  spdlog::info("signal {}: stopping", sig);
  notifier.Stopping(absl::StrCat("stopping on signal ", sig));
  server->SetServing(false);
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  health.Stop();
  controller.Stop();
  if (sim) sim->Stop();
  http.reset();
  spdlog::info("stopped");
  return 0;
}

}  // namespace
}  // namespace vipu::server

int main(int argc, char** argv) {
  // Debian's abseil checks every Mutex acquisition for lock-order cycles (a
  // debug default it was built with). gRPC takes many locks per call and the
  // check is a measurable share of it; TSan runs catch lock-order bugs.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  vipu::server::ServerOptions opt;
  CLI::App app{"vipu-server: the V-IPU controller"};
  vipu::server::AddSecurityFlags(app, &opt);
  app.add_option("--listen", opt.listen, "gRPC listen address host:port")->capture_default_str();
  app.add_option("--db", opt.db, "SQLite database file")->capture_default_str();
  app.add_option("--simulate", opt.simulate,
                 "start a simulated pod: pod4 pod16 pod64 pod128 pod256 and bow- variants");
  app.add_option("--log-level", opt.log_level, "trace|debug|info|warn|error|critical")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}))
      ->capture_default_str();
  app.add_option("--agent-binary", opt.agent_binary, "vipu-agent for --simulate");
  app.add_option("--ready-file", opt.ready_file, "file to write host:port to once ready");
  app.add_flag("--auto-add-agents", opt.auto_add_agents, "accept registrations of unknown agents");
  app.add_option("--heartbeat-ms", opt.heartbeat_ms, "agent heartbeat period")
      ->check(CLI::Range(10, 60000))
      ->capture_default_str();
  app.add_option("--agent-deadline-ms", opt.agent_deadline_ms, "deadline of one agent call")
      ->check(CLI::Range(10, 600000))
      ->capture_default_str();
  app.add_option("--reconcile-window-ms", opt.reconcile_window_ms,
                 "how long to wait at start for known agents")
      ->check(CLI::Range(0, 600000))
      ->capture_default_str();
  app.add_option("--workers", opt.workers, "background worker threads")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  auto listen_check = [](const std::string& flag) {
    return [flag](const std::string& value) -> std::string {
      if (value.empty() || value == "off") return "";
      auto parsed = vipu::server::ParseListenAddress(value, flag);
      return parsed.ok() ? "" : std::string(parsed.status().message());
    };
  };
  app.add_option("--http-listen", opt.http_listen,
                 "host:port of the HTTP listener: the pod console (GET /) and the OpenMetrics "
                 "endpoint (GET /metrics); HTTPS with --secure; empty or off: none")
      ->check(listen_check("--http-listen"));
  app.add_option("--metrics-listen", opt.metrics_listen, "older name of --http-listen")
      ->check(listen_check("--metrics-listen"));
  auto* config = app.add_option("--config", opt.config,
                                "server configuration file: `key = value` with the flags' names "
                                "(default /etc/vipu/vipu-server.hcl when it exists)");
  app.set_version_flag("--version", VIPU_VERSION);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "vipu-server: %s\n", e.what());
    return 2;
  }
  // Flags given on the command line win over the file.
  const bool config_given = config->count() > 0;
  if (absl::Status s = vipu::server::ApplyConfigFile(
          app, config_given ? opt.config : vipu::server::kDefaultConfigPath, config_given);
      !s.ok()) {
    std::fprintf(stderr, "vipu-server: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  spdlog::set_level(spdlog::level::from_str(opt.log_level));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ vipu-server %v");
  if (!opt.http_listen.empty() && !opt.metrics_listen.empty() &&
      opt.http_listen != opt.metrics_listen) {
    std::fprintf(stderr,
                 "vipu-server: --http-listen and --metrics-listen name the same listener; give "
                 "one of them\n");
    return 2;
  }
  vipu::server::ResolveSecurityDefaults(&opt);
  if (int code = vipu::server::RunSecurityCommands(opt); code >= 0) return code;
  return vipu::server::Run(opt);
}
