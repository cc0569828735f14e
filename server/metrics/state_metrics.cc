// The gauges computed at each scrape from the database and the agent registry.
#include "server/metrics/state_metrics.h"

#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "base/status_macros.h"
#include "fabric/enum_names.h"
#include "spdlog/spdlog.h"

namespace vipu::server {
namespace {

using Type = Metrics::Type;

// What a collector reads: each asks only for the parts it reports, so that
// a scrape of a pod of 16,384 machines does not read every agent and every
// allocation's members once per gauge.
enum Part : unsigned { kPartitions = 1, kAllocations = 2, kAgents = 4 };

struct Snapshot {
  std::vector<fabric::Partition> partitions;
  // Shared with the store's membership cache: not copied.
  std::vector<std::shared_ptr<const fabric::Allocation>> allocations;
  std::vector<fabric::Agent> agents;  // ordered by id
};

// One consistent read per collector; an error yields no samples (and a log
// line) rather than a failed scrape.
bool Load(storage::Store* store, unsigned parts, Snapshot* out) {
  absl::Status s = store->Read([&](storage::ReadTxn& txn) -> absl::Status {
    if (parts & kPartitions) {
      ASSIGN_OR_RETURN(out->partitions, txn.ListPartitions());
    }
    if (parts & kAllocations) {
      ASSIGN_OR_RETURN(out->allocations, txn.AllocationRefs());
    }
    if (parts & kAgents) {
      ASSIGN_OR_RETURN(out->agents, txn.ListAgents());
    }
    return absl::OkStatus();
  });
  if (!s.ok()) spdlog::warn("metrics: reading the database: {}", s.ToString());
  return s.ok();
}

// Partitions by their state, every state present with 0 when none is in it.
template <typename State>
std::vector<MetricSample> CountByState(storage::Store* store, std::initializer_list<State> states,
                                       State fabric::Partition::*field) {
  std::map<std::string, double> counts;
  for (State s : states) counts[fabric::WireName(s)] = 0;
  Snapshot snap;
  if (!Load(store, kPartitions, &snap)) return {};
  for (const fabric::Partition& p : snap.partitions) counts[fabric::WireName(p.*field)]++;
  std::vector<MetricSample> out;
  for (const auto& [state, n] : counts) out.push_back({{{"state", state}}, n});
  return out;
}

std::vector<MetricSample> AllocationIpus(storage::Store* store) {
  Snapshot snap;
  if (!Load(store, kPartitions | kAllocations, &snap)) return {};
  std::map<std::string, double> used;
  for (const fabric::Partition& p : snap.partitions) used[p.allocation_id] += p.size();
  std::vector<MetricSample> out;
  for (const auto& a : snap.allocations) {
    const double total = static_cast<double>(a->agent_ids.size() * fabric::kIpusPerMachine);
    const double u = used[a->id];
    out.push_back({{{"allocation", a->id}, {"state", "used"}}, u});
    out.push_back({{{"allocation", a->id}, {"state", "free"}}, total - u});
  }
  return out;
}

// Whether each agent of the database (by id) is Up at `now`: one walk of the
// registry's liveness (sorted by id, no reports copied) beside them.
std::vector<bool> UpOf(const std::vector<fabric::Agent>& agents, const AgentRegistry* registry,
                       absl::Time now) {
  std::vector<bool> up(agents.size(), false);
  const std::vector<AgentPulse> pulses = registry->Pulses();
  auto pulse = pulses.begin();
  for (size_t i = 0; i < agents.size(); ++i) {
    while (pulse != pulses.end() && pulse->id < agents[i].id) ++pulse;
    if (pulse != pulses.end() && pulse->id == agents[i].id) {
      up[i] = now - pulse->last_heartbeat < registry->timeout();  // as IsUp
    }
  }
  return up;
}

std::vector<MetricSample> AgentsByStatus(storage::Store* store, const AgentRegistry* registry) {
  Snapshot snap;
  if (!Load(store, kAgents, &snap)) return {};
  const std::vector<bool> up_of = UpOf(snap.agents, registry, absl::Now());
  double up = 0;
  for (bool u : up_of) up += u ? 1 : 0;
  return {{{{"status", "up"}}, up}, {{{"status", "down"}}, snap.agents.size() - up}};
}

std::vector<MetricSample> AgentUp(storage::Store* store, const AgentRegistry* registry) {
  Snapshot snap;
  if (!Load(store, kAgents, &snap)) return {};
  const std::vector<bool> up = UpOf(snap.agents, registry, absl::Now());
  std::vector<MetricSample> out;
  out.reserve(snap.agents.size());
  for (size_t i = 0; i < snap.agents.size(); ++i) {
    out.push_back({{{"agent", snap.agents[i].id}}, up[i] ? 1.0 : 0.0});
  }
  return out;
}

std::vector<MetricSample> HeartbeatAges(const AgentRegistry* registry) {
  const absl::Time now = absl::Now();
  std::vector<MetricSample> out;
  for (const AgentPulse& a : registry->Pulses()) {
    out.push_back({{{"agent", a.id}}, absl::ToDoubleSeconds(now - a.last_heartbeat)});
  }
  return out;
}

// What each agent's last heartbeat reported: IPUs in error, links down.
std::vector<MetricSample> AgentFaults(const AgentRegistry* registry) {
  std::vector<MetricSample> out;
  for (const AgentStatus& a : registry->Statuses()) {
    out.push_back(
        {{{"agent", a.id}, {"kind", "ipu"}}, static_cast<double>(a.health.ipu_errors.size())});
    out.push_back(
        {{{"agent", a.id}, {"kind", "link"}}, static_cast<double>(a.health.links_down.size())});
  }
  return out;
}

// How many partitions each agent's last heartbeat said it holds.
std::vector<MetricSample> AgentPartitionsHeld(const AgentRegistry* registry) {
  std::vector<MetricSample> out;
  for (const AgentStatus& a : registry->Statuses()) {
    if (a.health.held == nullptr) continue;
    out.push_back({{{"agent", a.id}}, static_cast<double>(a.health.held->size())});
  }
  return out;
}

std::vector<MetricSample> One(double value) { return {{{}, value}}; }

void RegisterPartitionMetrics(Metrics* metrics, storage::Store* store) {
  metrics->AddCollector(
      Type::kGauge, "vipu_partitions", "Partitions by ready state (PS_*).", [store] {
        return CountByState(
            store,
            {fabric::ReadyState::kPending, fabric::ReadyState::kActive, fabric::ReadyState::kError},
            &fabric::Partition::ready_state);
      });
  metrics->AddCollector(
      Type::kGauge, "vipu_partition_operations", "Partitions by operation state (POS_*).", [store] {
        return CountByState(store,
                            {fabric::OperationState::kIdle, fabric::OperationState::kCreating,
                             fabric::OperationState::kRemoving, fabric::OperationState::kResetting,
                             fabric::OperationState::kFailed},
                            &fabric::Partition::operation_state);
      });
  metrics->AddCollector(Type::kGauge, "vipu_allocation_ipus",
                        "IPUs of each allocation, used by partitions or free.",
                        [store] { return AllocationIpus(store); });
}

void RegisterAgentMetrics(Metrics* metrics, storage::Store* store, const AgentRegistry* registry,
                          const Readiness* readiness) {
  metrics->AddCollector(Type::kGauge, "vipu_agents",
                        "Known agents by status (up: heartbeats arrive).",
                        [store, registry] { return AgentsByStatus(store, registry); });
  metrics->AddCollector(Type::kGauge, "vipu_agent_up",
                        "1 while the agent's heartbeats arrive, 0 otherwise.",
                        [store, registry] { return AgentUp(store, registry); });
  metrics->AddCollector(Type::kGauge, "vipu_agent_heartbeat_age_seconds",
                        "Seconds since the agent's last heartbeat (registered agents only).",
                        [registry] { return HeartbeatAges(registry); });
  metrics->AddCollector(Type::kGauge, "vipu_agent_faults",
                        "IPUs in error (kind ipu) and links down (kind link) that the agent's "
                        "last heartbeat reported (registered agents only).",
                        [registry] { return AgentFaults(registry); });
  metrics->AddCollector(Type::kGauge, "vipu_agent_partitions_held",
                        "Partitions the agent's last heartbeat said its machine holds; the server "
                        "configures again one it lacks (registered agents only).",
                        [registry] { return AgentPartitionsHeld(registry); });
  metrics->AddCollector(Type::kGauge, "vipu_ready",
                        "1 once the agents are reconciled and mutating requests are served.",
                        [readiness] { return One(readiness->ready() ? 1.0 : 0.0); });
}

void RegisterDatabaseMetrics(Metrics* metrics, storage::Store* store) {
  metrics->AddCollector(Type::kCounter, "vipu_db_commits", "Database transactions committed.",
                        [store] { return One(static_cast<double>(store->commits())); });
  metrics->AddCollector(Type::kCounter, "vipu_db_writes",
                        "Database write callbacks run (grouped into commits).",
                        [store] { return One(static_cast<double>(store->writes())); });
  metrics->AddCollector(Type::kGauge, "vipu_db_pending_writes",
                        "Database writes queued for the writer thread.",
                        [store] { return One(static_cast<double>(store->pending_writes())); });
}

void RegisterCommitHistogram(Metrics* metrics, storage::Store* store) {
  metrics->DeclareHistogram(
      "vipu_db_commit_duration_seconds",
      "Time from BEGIN to a durable COMMIT of one group of database writes.",
      {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1});
  store->SetCommitObserver([metrics](double seconds, size_t) {
    metrics->Observe("vipu_db_commit_duration_seconds", {}, seconds);
  });
}

}  // namespace

void RegisterStateMetrics(Metrics* metrics, storage::Store* store, const AgentRegistry* registry,
                          const Readiness* readiness) {
  RegisterPartitionMetrics(metrics, store);
  RegisterAgentMetrics(metrics, store, registry, readiness);
  RegisterDatabaseMetrics(metrics, store);
  metrics->AddCollector(Type::kGauge, "vipu_build_info", "The server's version.", [] {
    return std::vector<MetricSample>{{{{"version", VIPU_VERSION}}, 1}};
  });
  RegisterCommitHistogram(metrics, store);
}

}  // namespace vipu::server
