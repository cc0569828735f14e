// The gauges computed at each scrape from the database and the agent registry.
#include "server/state_metrics.h"

#include <map>

#include "absl/time/clock.h"
#include "fabric/enum_names.h"
#include "spdlog/spdlog.h"

namespace vipu::server {
namespace {

using Type = Metrics::Type;

struct Snapshot {
  std::vector<fabric::Partition> partitions;
  std::vector<fabric::Allocation> allocations;
  std::vector<fabric::Agent> agents;
};

// One consistent read per collector; an error yields no samples (and a log
// line) rather than a failed scrape.
bool Load(storage::Store* store, Snapshot* out) {
  absl::Status s = store->Read([&](storage::ReadTxn& txn) -> absl::Status {
    auto partitions = txn.ListPartitions();
    if (!partitions.ok()) return partitions.status();
    auto allocations = txn.ListAllocations();
    if (!allocations.ok()) return allocations.status();
    auto agents = txn.ListAgents();
    if (!agents.ok()) return agents.status();
    out->partitions = std::move(*partitions);
    out->allocations = std::move(*allocations);
    out->agents = std::move(*agents);
    return absl::OkStatus();
  });
  if (!s.ok()) spdlog::warn("metrics: reading the database: {}", s.ToString());
  return s.ok();
}

}  // namespace

void RegisterStateMetrics(Metrics* metrics, storage::Store* store, const AgentRegistry* registry,
                          const Readiness* readiness) {
  metrics->AddCollector(Type::kGauge, "vipu_partitions", "Partitions by ready state (PS_*).",
                        [store] {
                          std::map<std::string, double> counts;
                          for (auto s : {fabric::ReadyState::kPending, fabric::ReadyState::kActive,
                                         fabric::ReadyState::kError}) {
                            counts[fabric::WireName(s)] = 0;
                          }
                          Snapshot snap;
                          if (!Load(store, &snap)) return std::vector<MetricSample>{};
                          for (const fabric::Partition& p : snap.partitions)
                            counts[fabric::WireName(p.ready_state)]++;
                          std::vector<MetricSample> out;
                          for (const auto& [state, n] : counts)
                            out.push_back({{{"state", state}}, n});
                          return out;
                        });
  metrics->AddCollector(
      Type::kGauge, "vipu_partition_operations", "Partitions by operation state (POS_*).", [store] {
        std::map<std::string, double> counts;
        for (auto s : {fabric::OperationState::kIdle, fabric::OperationState::kCreating,
                       fabric::OperationState::kRemoving, fabric::OperationState::kResetting,
                       fabric::OperationState::kFailed}) {
          counts[fabric::WireName(s)] = 0;
        }
        Snapshot snap;
        if (!Load(store, &snap)) return std::vector<MetricSample>{};
        for (const fabric::Partition& p : snap.partitions) {
          counts[fabric::WireName(p.operation_state)]++;
        }
        std::vector<MetricSample> out;
        for (const auto& [state, n] : counts) out.push_back({{{"state", state}}, n});
        return out;
      });
  metrics->AddCollector(Type::kGauge, "vipu_allocation_ipus",
                        "IPUs of each allocation, used by partitions or free.", [store] {
                          Snapshot snap;
                          if (!Load(store, &snap)) return std::vector<MetricSample>{};
                          std::map<std::string, double> used;
                          for (const fabric::Partition& p : snap.partitions)
                            used[p.allocation_id] += p.size();
                          std::vector<MetricSample> out;
                          for (const fabric::Allocation& a : snap.allocations) {
                            const double total =
                                static_cast<double>(a.agent_ids.size() * fabric::kIpusPerMachine);
                            const double u = used[a.id];
                            out.push_back({{{"allocation", a.id}, {"state", "used"}}, u});
                            out.push_back({{{"allocation", a.id}, {"state", "free"}}, total - u});
                          }
                          return out;
                        });
  metrics->AddCollector(Type::kGauge, "vipu_agents",
                        "Known agents by status (up: heartbeats arrive).", [store, registry] {
                          Snapshot snap;
                          if (!Load(store, &snap)) return std::vector<MetricSample>{};
                          const absl::Time now = absl::Now();
                          double up = 0;
                          for (const fabric::Agent& a : snap.agents)
                            up += registry->IsUp(a.id, now) ? 1 : 0;
                          return std::vector<MetricSample>{
                              {{{"status", "up"}}, up},
                              {{{"status", "down"}}, snap.agents.size() - up}};
                        });
  metrics->AddCollector(
      Type::kGauge, "vipu_agent_up", "1 while the agent's heartbeats arrive, 0 otherwise.",
      [store, registry] {
        Snapshot snap;
        if (!Load(store, &snap)) return std::vector<MetricSample>{};
        const absl::Time now = absl::Now();
        std::vector<MetricSample> out;
        for (const fabric::Agent& a : snap.agents) {
          out.push_back({{{"agent", a.id}}, registry->IsUp(a.id, now) ? 1.0 : 0.0});
        }
        return out;
      });
  metrics->AddCollector(
      Type::kGauge, "vipu_agent_heartbeat_age_seconds",
      "Seconds since the agent's last heartbeat (registered agents only).", [registry] {
        const absl::Time now = absl::Now();
        std::vector<MetricSample> out;
        for (const LiveAgent& a : registry->All()) {
          out.push_back({{{"agent", a.id}}, absl::ToDoubleSeconds(now - a.last_heartbeat)});
        }
        return out;
      });
  metrics->AddCollector(Type::kGauge, "vipu_ready",
                        "1 once the agents are reconciled and mutating requests are served.",
                        [readiness] {
                          return std::vector<MetricSample>{{{}, readiness->ready() ? 1.0 : 0.0}};
                        });
  metrics->AddCollector(
      Type::kCounter, "vipu_db_commits", "Database transactions committed.", [store] {
        return std::vector<MetricSample>{{{}, static_cast<double>(store->commits())}};
      });
  metrics->AddCollector(
      Type::kCounter, "vipu_db_writes", "Database write callbacks run (grouped into commits).",
      [store] {
        return std::vector<MetricSample>{{{}, static_cast<double>(store->writes())}};
      });
  metrics->AddCollector(
      Type::kGauge, "vipu_db_pending_writes", "Database writes queued for the writer thread.",
      [store] {
        return std::vector<MetricSample>{{{}, static_cast<double>(store->pending_writes())}};
      });
  metrics->AddCollector(Type::kGauge, "vipu_build_info", "The server's version.", [] {
    return std::vector<MetricSample>{{{{"version", VIPU_VERSION}}, 1}};
  });
  metrics->DeclareHistogram(
      "vipu_db_commit_duration_seconds",
      "Time from BEGIN to a durable COMMIT of one group of database writes.",
      {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1});
  store->SetCommitObserver([metrics](double seconds, size_t) {
    metrics->Observe("vipu_db_commit_duration_seconds", {}, seconds);
  });
}

}  // namespace vipu::server
