// The vipu-server daemon as one object: the database, the agent registry and
// client, the partition controller, the gRPC services and their end-points,
// security, health, the console and, with --simulate, the simulated pod.
#ifndef VIPU_SERVER_DAEMON_VIPU_SERVER_H_
#define VIPU_SERVER_DAEMON_VIPU_SERVER_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "fabric/pods.h"
#include "server/api/admin_service.h"
#include "server/api/endpoints.h"
#include "server/api/registry_service.h"
#include "server/api/user_service.h"
#include "server/console/console_http.h"
#include "server/control/health_monitor.h"
#include "server/control/inventory.h"
#include "server/control/partition_controller.h"
#include "server/control/readiness.h"
#include "server/daemon/handover.h"
#include "server/daemon/security_setup.h"
#include "server/daemon/server_options.h"
#include "server/daemon/systemd_notify.h"
#include "server/fleet/agent_driver.h"
#include "server/fleet/agent_registry.h"
#include "server/fleet/cluster_links_cache.h"
#include "server/fleet/cluster_tester.h"
#include "server/fleet/fault_injector.h"
#include "server/fleet/grpc_agent_client.h"
#include "server/ha/member_role.h"
#include "server/metrics/metrics.h"
#include "server/metrics/metrics_http.h"
#include "server/sim/simulator.h"
#include "storage/database_lock.h"
#include "storage/store.h"

namespace vipu::server {

// The HTTP listener `options` ask for (--http-listen, or --metrics-listen,
// its other name; HTTPS with --secure), or none when neither is given or it
// is "off". The leader's console and a standby's /metrics use the same one.
std::optional<HttpListenerOptions> HttpListenerOf(const ServerOptions& options);

// The three listeners `options` ask for, with gRPC's health checking and
// reflection enabled: the start of the end-points of the leader and of a
// standby alike, which then add their services and credentials.
EndpointSpec ListenersOf(const ServerOptions& options);

// Owns every part it starts, and the database lock for its whole life: it
// is the only writer of the database. Members are declared in the order
// Start builds them; the destructor stops the parts in the order a clean stop needs
// (no new calls, calls in flight end, background work drains while the
// agents still answer, then the agents and the console go), after which
// the members are destroyed. Start and destruction happen on one thread;
// ReloadCertificates and the accessors may be called from any thread.
class VipuServer {
 public:
  // Locks the database (a second server on the same file is refused before
  // it listens or starts an agent), opens or creates it, starts security, the end-points and the
  // console, starts the simulated pod of `pod` when given, waits for the
  // known agents (up to the reconcile window) and their reconciliation,
  // finishes operations a crash interrupted, and serves. `notifier`, when
  // set, is told each step. On failure everything started is stopped again
  // and the status says what failed, in words for "vipu-server: <message>".
  static absl::StatusOr<std::unique_ptr<VipuServer>> Start(
      const ServerOptions& options, const std::optional<fabric::PodSpec>& pod,
      SystemdNotifier* notifier = nullptr);
  // The same for the leader of a highly available control plane: the state
  // is `store` (in etcd, fenced by the leadership), there is no database lock
  // and no simulated pod, the reconcile window starts now, and every reply
  // says the member's role (`role`, borrowed; it must outlive the server).
  // See LeaderStart for the rest.
  struct LeaderStart {
    SystemdNotifier* notifier = nullptr;
    // The record of a leader that stopped on purpose, or null: its agents
    // count as registered from the start, so the server waits for no one
    // it names and serves as soon as the state is loaded.
    const Handover* handover = nullptr;
    // Serves vipu-admin's MoveLeadership.
    LeadershipMover move_leadership;
    // Called once the leader's listeners listen, beside the member's
    // standby listeners on the same addresses (EndpointSpec::Sharing), and
    // before the server waits for agents: the member closes those then.
    std::function<void()> listening;
  };
  static absl::StatusOr<std::unique_ptr<VipuServer>> StartLeader(
      const ServerOptions& options, std::unique_ptr<storage::Store> store, const MemberRole* role,
      LeaderStart start);
  ~VipuServer();

  VipuServer(const VipuServer&) = delete;
  VipuServer& operator=(const VipuServer&) = delete;

  // The user API's host:port as bound.
  const std::string& address() const { return endpoints_->user_address(); }
  size_t registered_agents() const { return registry_.size(); }
  // When the database answers a read (the systemd watchdog's question).
  bool DatabaseAnswers() const;
  // Reads the certificates again (SIGHUP) without touching connections or
  // partitions; FAILED_PRECONDITION without --secure.
  absl::Status ReloadCertificates();

  // The first step of a stop on purpose: the listeners take no new call (a
  // client's connection is refused, so it moves on to another member) and
  // the calls in flight finish, for up to 5 s. The rest stops with the
  // object.
  void StopServing();
  // The second: every read and write of the state, the background work's
  // included, is refused from now on, saying nothing was done; returns once
  // every write admitted before is committed or refused.
  void StopAnswering();
  // What the next leader needs to serve at once: the agents Up now.
  Handover MakeHandover() const;

 private:
  // `security` (Security::Start's, over `store`) must not be null.
  VipuServer(const ServerOptions& options, std::unique_ptr<storage::DatabaseLock> lock,
             std::unique_ptr<storage::Store> store, std::unique_ptr<Security> security);

  // The API services, each with the security policy that admits its calls.
  void StartServices();
  absl::Status StartEndpoints();
  absl::Status StartConsole();
  absl::Status StartSimulatedPod(const fabric::PodSpec& pod);
  void AwaitKnownAgents();
  // Reconciliation, recovery, the first health check, then ready.
  void Serve();

  // Released last, once nothing of this server writes any more (none for
  // the leader of a highly available control plane).
  std::unique_ptr<storage::DatabaseLock> lock_;
  const MemberRole* role_ = nullptr;
  LeadershipMover move_leadership_;  // null but on an HA leader
  const ServerOptions options_;
  const absl::Time reconcile_deadline_;
  std::unique_ptr<storage::Store> store_;
  // Before the agent client, which dials agents with its credentials, and
  // the services, which admit calls by its policy.
  std::unique_ptr<Security> security_;
  ClusterLinksCache cluster_links_;  // layouts and links of the clusters, for all below
  AgentRegistry registry_;
  GrpcAgentClient agent_client_;
  AgentDriver driver_;
  PartitionController controller_;
  Inventory inventory_;
  Readiness readiness_;
  RegistryService registry_service_;
  // Built with security_'s policy; before endpoints_, which serves them.
  std::unique_ptr<UserService> user_service_;
  std::unique_ptr<AdminService> admin_service_;
  std::unique_ptr<AllocationService> allocation_service_;
  FaultInjector fault_injector_;
  ClusterTester cluster_tester_;
  HealthMonitor health_;
  Metrics metrics_;
  std::unique_ptr<Endpoints> endpoints_;
  std::unique_ptr<ConsoleServer> http_;
  std::unique_ptr<Simulator> sim_;
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_DAEMON_VIPU_SERVER_H_
