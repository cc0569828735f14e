// VipuServer: starts the daemon's parts in order, serves, and stops them.
#include "server/daemon/vipu_server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/status_macros.h"
#include "server/api/audit_interceptor.h"
#include "server/api/nothing_done_interceptor.h"
#include "server/api/rpc_metrics_interceptor.h"
#include "server/daemon/console_control_plane.h"
#include "server/ha/role_interceptor.h"
#include "server/ha/role_metrics.h"
#include "server/metrics/state_metrics.h"
#include "spdlog/spdlog.h"
#include "storage/sqlite_store.h"

namespace vipu::server {
namespace {

std::string DefaultAgentBinary() {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "vipu-agent";
  return (self.parent_path() / "vipu-agent").string();
}

// Refuses, before any agent starts, a database that holds another pod: the
// machines of `pod` would register as the agents of that pod's cluster.
absl::Status CheckDatabaseHoldsPod(Inventory& inventory, const fabric::PodSpec& pod,
                                   const std::string& db) {
  std::vector<std::string> ids;
  for (uint32_t m = 1; m <= pod.num_machines; ++m) ids.push_back(absl::StrCat("ag", m));
  ASSIGN_OR_RETURN(const std::vector<fabric::Cluster> clusters, inventory.ListClusters());
  for (const fabric::Cluster& c : clusters) {
    const bool shares = std::any_of(c.agent_ids.begin(), c.agent_ids.end(), [&](const auto& a) {
      return std::find(ids.begin(), ids.end(), a) != ids.end();
    });
    if (c.id == pod.name ? c.agent_ids == ids : !shares) continue;
    const bool is_pod = c.id != pod.name && fabric::PodPreset(c.id).ok();
    const size_t n = c.agent_ids.size();
    return absl::FailedPreconditionError(absl::StrCat(
        "simulate ", pod.name, ": database ", db, " holds another pod, ",
        is_pod ? "pod" : "cluster", " '", c.id, "' of ", n, n == 1 ? " machine" : " machines",
        ", not ", pod.name, " of ", ids.size(), ids.size() == 1 ? " machine" : " machines",
        "; give --simulate ", pod.name, " another --db",
        is_pod ? absl::StrCat(", or use this one with --simulate ", c.id) : ""));
  }
  return absl::OkStatus();
}

absl::Status EnsureSimulatedCluster(Inventory& inventory, const Simulator& sim) {
  const fabric::PodSpec& pod = sim.pod();
  ASSIGN_OR_RETURN(const std::vector<fabric::Cluster> clusters, inventory.ListClusters());
  bool have_cluster = false;
  for (const fabric::Cluster& c : clusters) {
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
    RETURN_IF_ERROR(inventory.CreateCluster(c));
  }
  ASSIGN_OR_RETURN(const std::vector<fabric::Allocation> allocations, inventory.ListAllocations());
  for (const fabric::Allocation& a : allocations) {
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

absl::Status CreateDatabaseDirectory(const std::string& db) {
  std::filesystem::path db_path(db);
  if (db_path.has_parent_path()) {
    std::error_code ec;
    std::filesystem::create_directories(db_path.parent_path(), ec);
    if (ec) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot create the directory of --db ", db, ": ", ec.message()));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<storage::Store>> OpenStore(const std::string& db) {
  auto store = storage::SqliteStore::Open(db);
  if (!store.ok()) {
    // What an operator sees when the unit fails: a corrupt file, or a schema
    // newer than this binary.
    return absl::Status(store.status().code(),
                        absl::StrCat("cannot open database ", db, ": ", store.status().message()));
  }
  spdlog::info("database {} open (schema {})", db, storage::kSchemaVersion);
  return store;
}

HealthMonitor::Options HealthOptions(const ServerOptions& options) {
  HealthMonitor::Options health;
  health.tick = std::clamp(absl::Milliseconds(options.heartbeat_ms) / 5, absl::Milliseconds(10),
                           absl::Milliseconds(100));
  return health;
}

}  // namespace

VipuServer::VipuServer(const ServerOptions& options, std::unique_ptr<storage::DatabaseLock> lock,
                       std::unique_ptr<storage::Store> store, std::unique_ptr<Security> security)
    : lock_(std::move(lock)),
      options_(options),
      reconcile_deadline_(absl::Now() + absl::Milliseconds(options.reconcile_window_ms)),
      store_(std::move(store)),
      security_(std::move(security)),
      registry_(absl::Milliseconds(options.heartbeat_ms)),
      agent_client_(absl::Milliseconds(options.agent_deadline_ms),
                    security_->agent_channel_credentials()),
      driver_(&agent_client_),
      controller_(store_.get(), &cluster_links_, &registry_, &driver_, options.workers),
      inventory_(store_.get()),
      registry_service_(&inventory_, &registry_, &controller_,
                        options.auto_add_agents || !options.simulate.empty(),
                        /*require_certificates=*/options.secure),
      fault_injector_(store_.get(), &cluster_links_, &registry_, &agent_client_),
      cluster_tester_(store_.get(), &cluster_links_, &registry_, &agent_client_),
      health_(store_.get(), &cluster_links_, &registry_, &agent_client_, &controller_,
              HealthOptions(options)) {
  // Mutating RPCs wait for reconciliation; the hint counts down to the end
  // of the window (agent calls included).
  readiness_.Reconciling(reconcile_deadline_ + absl::Milliseconds(options.agent_deadline_ms));
  RegisterStateMetrics(&metrics_, store_.get(), &registry_, &readiness_);
  // Lets a scraper (and a test that expects no change) see that the health
  // monitor has looked at the pod since some moment.
  metrics_.AddCollector(
      Metrics::Type::kCounter, "vipu_health_passes", "Passes of the health monitor completed.",
      [this] {
        return std::vector<MetricSample>{{{}, static_cast<double>(health_.passes())}};
      });
}

absl::StatusOr<std::unique_ptr<VipuServer>> VipuServer::Start(
    const ServerOptions& options, const std::optional<fabric::PodSpec>& pod,
    SystemdNotifier* notifier) {
  auto status = [notifier](const std::string& text) {
    if (notifier != nullptr) notifier->Status(text);
  };
  status("opening the database");
  RETURN_IF_ERROR(CreateDatabaseDirectory(options.db));
  // Before anything reads, migrates or serves the file: one writer per database.
  ASSIGN_OR_RETURN(std::unique_ptr<storage::DatabaseLock> lock,
                   storage::DatabaseLock::Acquire(options.db));
  ASSIGN_OR_RETURN(std::unique_ptr<storage::Store> store, OpenStore(options.db));
  if (pod) {
    Inventory inventory(store.get());
    RETURN_IF_ERROR(CheckDatabaseHoldsPod(inventory, *pod, options.db));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<Security> security, Security::Start(options, store.get()));
  std::unique_ptr<VipuServer> server(
      new VipuServer(options, std::move(lock), std::move(store), std::move(security)));
  server->StartServices();
  RETURN_IF_ERROR(server->StartEndpoints());
  RETURN_IF_ERROR(server->StartConsole());
  status("waiting for agents to register and reconciling them");
  if (pod) {
    RETURN_IF_ERROR(server->StartSimulatedPod(*pod));
  } else {
    server->AwaitKnownAgents();
  }
  server->Serve();
  return server;
}

absl::StatusOr<std::unique_ptr<VipuServer>> VipuServer::StartLeader(
    const ServerOptions& options, std::unique_ptr<storage::Store> store, const MemberRole* role,
    LeaderStart start) {
  SystemdNotifier* notifier = start.notifier;
  const Handover* handover = start.handover;
  if (notifier != nullptr) notifier->Status("leading: waiting for agents and reconciling them");
  ASSIGN_OR_RETURN(std::unique_ptr<Security> security, Security::Start(options, store.get()));
  std::unique_ptr<VipuServer> server(
      new VipuServer(options, nullptr, std::move(store), std::move(security)));
  server->role_ = role;
  server->move_leadership_ = std::move(start.move_leadership);
  AddRoleMetrics(server->metrics_, role);
  if (handover != nullptr) {
    // Before the listeners: a heartbeat that arrives first finds its agent.
    server->registry_.HandOver(handover->agents, absl::Now());
    spdlog::info("took over {} agents from the previous leader's handover ({} ms old)",
                 handover->agents.size(), absl::ToInt64Milliseconds(absl::Now() - handover->made));
  }
  server->StartServices();
  RETURN_IF_ERROR(server->StartEndpoints());
  if (start.listening) start.listening();
  RETURN_IF_ERROR(server->StartConsole());
  server->AwaitKnownAgents();
  server->Serve();
  return server;
}

void VipuServer::StopAnswering() {
  if (endpoints_) endpoints_->SetServing(false);
  store_->StopAnswering();
}

void VipuServer::StopServing() {
  if (!endpoints_) return;
  endpoints_->SetServing(false);
  endpoints_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
}

Handover VipuServer::MakeHandover() const {
  const absl::Time now = absl::Now();
  return Handover{now, registry_.UpAgents(now), ""};
}

VipuServer::~VipuServer() {
  if (endpoints_) {
    endpoints_->SetServing(false);
    endpoints_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  }
  health_.Stop();
  // Queued background work still reaches the agents before they go.
  controller_.Stop();
  if (sim_) sim_->Stop();
  http_.reset();
}

void VipuServer::StartServices() {
  // The services exist only with the policy that admits their calls.
  user_service_ = std::make_unique<UserService>(&controller_, &registry_, &inventory_, readiness_,
                                                security_->access());
  // Online backups of the database, fault injection and cluster tests.
  AdminService::Operations operations{store_.get(), options_.db, &fault_injector_, &cluster_tester_,
                                      move_leadership_};
  admin_service_ =
      std::make_unique<AdminService>(&inventory_, &registry_, &cluster_links_, readiness_,
                                     security_->access(), std::move(operations));
  allocation_service_ = std::make_unique<AllocationService>(&inventory_, security_->access());
}

EndpointSpec ListenersOf(const ServerOptions& options) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  EndpointSpec spec;
  spec.user_listen = options.user_api_listen;
  spec.admin_listen = options.admin_api_listen;
  spec.agent_listen = options.agent_api_listen;
  return spec;
}

absl::Status VipuServer::StartEndpoints() {
  // User, admin and agent end-points (one server per distinct address).
  EndpointSpec spec = ListenersOf(options_);
  spec.api_credentials = security_->credentials();
  spec.user_services = {user_service_.get(), allocation_service_.get()};
  spec.admin_services = {admin_service_.get(), security_->user_admin_service()};
  spec.agent_services = {&registry_service_};
  // A member's leader listens beside its standby listeners.
  if (role_ != nullptr) spec.sharing = EndpointSpec::Sharing::kJoin;
  spec.configure = [this](grpc::ServerBuilder& builder) {
    // Each builder owns its own interceptor factories.
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> creators;
    creators.push_back(std::make_unique<RpcMetricsInterceptorFactory>(&metrics_));
    // Refusals made before anything was done say so to clients.
    creators.push_back(std::make_unique<NothingDoneInterceptorFactory>());
    // Every end-point: a mutating method is audited wherever it is served.
    if (AuditLog* audit = security_->audit_log(); audit != nullptr) {
      creators.push_back(std::make_unique<AuditInterceptorFactory>(audit));
    }
    if (role_ != nullptr) creators.push_back(std::make_unique<RoleInterceptorFactory>(role_));
    builder.experimental().SetInterceptorCreators(std::move(creators));
  };
  ASSIGN_OR_RETURN(endpoints_, Endpoints::Start(spec));
  return absl::OkStatus();
}

std::optional<HttpListenerOptions> HttpListenerOf(const ServerOptions& options) {
  // One HTTP listener under either flag name.
  const bool http_flag = !options.http_listen.empty();
  HttpListenerOptions listener;
  listener.address = http_flag ? options.http_listen : options.metrics_listen;
  if (listener.address.empty() || listener.address == "off") return std::nullopt;
  listener.flag = http_flag ? "--http-listen" : "--metrics-listen";
  listener.secure = options.secure;
  listener.tls_dir = options.tls_dir;
  return listener;
}

absl::Status VipuServer::StartConsole() {
  // The console and /metrics.
  const std::optional<HttpListenerOptions> listener = HttpListenerOf(options_);
  if (!listener) return absl::OkStatus();
  const std::string& listen = listener->address;
  ConsoleOptions console_options;
  console_options.listener = *listener;
  ConsoleDeps deps;
  deps.metrics = &metrics_;
  deps.store = store_.get();
  deps.cluster_links = &cluster_links_;
  deps.registry = &registry_;
  deps.controller = &controller_;
  deps.access = &security_->access();
  deps.audit = security_->audit_log();
  if (role_ != nullptr) deps.control_plane = [role = role_] { return ConsoleControlPlane(role); };
  ASSIGN_OR_RETURN(http_, ConsoleServer::Start(console_options, deps));
  spdlog::info("console on {}://{}:{}/ and metrics on /metrics", options_.secure ? "https" : "http",
               listen.substr(0, listen.rfind(':')), http_->port());
  return absl::OkStatus();
}

absl::Status VipuServer::StartSimulatedPod(const fabric::PodSpec& pod) {
  const std::string& agent_address = endpoints_->agent_address();
  Simulator::Options so;
  so.agent_binary = options_.agent_binary.empty() ? DefaultAgentBinary() : options_.agent_binary;
  so.machines_per_process = static_cast<uint32_t>(options_.simulate_machines_per_process);
  const std::string agent_host = agent_address.substr(0, agent_address.rfind(':'));
  so.server_address =
      absl::StrCat(agent_host == "0.0.0.0" || agent_host == "[::]" ? "127.0.0.1" : agent_host,
                   agent_address.substr(agent_address.rfind(':')));
  so.log_level = options_.log_level;
  so.ports = RememberedAgentPorts(inventory_);
  if (options_.secure) so.tls_dir = options_.tls_dir;
  ASSIGN_OR_RETURN(sim_, Simulator::Start(pod, so));
  std::optional<std::string> exited;
  std::vector<std::string> missing =
      AwaitRegistrations(registry_, sim_->agent_ids(), absl::Seconds(30),
                         [&] { return (exited = sim_->ExitedChild()).has_value(); });
  if (exited) {
    return absl::UnavailableError(
        absl::StrCat("simulate ", pod.name, ": ", *exited, " before its machines registered"));
  }
  if (!missing.empty()) {
    return absl::DeadlineExceededError(
        absl::StrCat("simulate ", pod.name, ": ", missing.size(),
                     " agents did not register within 30 s (first: ", missing.front(), ")"));
  }
  RETURN_IF_ERROR(EnsureSimulatedCluster(inventory_, *sim_));
  spdlog::info("simulate {}: {} machines registered, cluster '{}' ready", pod.name,
               sim_->agent_ids().size(), pod.name);
  return absl::OkStatus();
}

void VipuServer::AwaitKnownAgents() {
  // Give the agents we know a chance to come back before recovering.
  auto agents = inventory_.ListAgents();
  std::vector<std::string> ids;
  if (agents.ok()) {
    for (const fabric::Agent& a : *agents) ids.push_back(a.id);
  }
  std::vector<std::string> missing =
      AwaitRegistrations(registry_, ids, reconcile_deadline_ - absl::Now());
  if (!missing.empty()) {
    spdlog::warn("{} known agents have not registered (first: {})", missing.size(),
                 missing.front());
  }
}

void VipuServer::Serve() {
  // Registrations queue reconciliations; serve changes only once the agents
  // hold what the database says.
  if (!controller_.AwaitReconciled(std::max(reconcile_deadline_, absl::Now()) +
                                   absl::Milliseconds(options_.agent_deadline_ms))) {
    spdlog::warn("reconciliation of the agents did not finish within the window; serving anyway");
  }
  controller_.Recover();
  // Partitions whose agents did not come back are marked before the server
  // says ready; the agents' topology pushes it starts go on in the
  // background (16,384 of them after a restart), off the readiness path.
  health_.CheckOnce();
  health_.Start();
  readiness_.SetReady();
  endpoints_->SetServing(true);
}

bool VipuServer::DatabaseAnswers() const {
  return store_->Read([](storage::ReadTxn&) { return absl::OkStatus(); }).ok();
}

absl::Status VipuServer::ReloadCertificates() {
  if (!options_.secure) {
    return absl::FailedPreconditionError("no certificates to reload without --secure");
  }
  return security_->ReloadCertificates();
}

}  // namespace vipu::server
