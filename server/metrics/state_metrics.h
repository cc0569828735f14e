// Gauges computed from the database and the agent registry at every scrape,
// and the database commit counters and latency histogram:
//   vipu_partitions{state}                     partitions by PS_* state
//   vipu_partition_operations{state}           partitions by POS_* state
//   vipu_allocation_ipus{allocation,state}     used / free IPUs per allocation
//   vipu_agents{status}                        agents up / down
//   vipu_agent_up{agent}                       1 while heartbeats arrive
//   vipu_agent_heartbeat_age_seconds{agent}    since the last heartbeat
//   vipu_agent_faults{agent,kind}              IPU errors / links down reported
//   vipu_ready                                 1 once reconciled and serving
//   vipu_db_commits_total, vipu_db_writes_total, vipu_db_pending_writes
//   vipu_db_commit_duration_seconds            BEGIN to durable COMMIT
//   vipu_build_info{version}
#ifndef VIPU_SERVER_METRICS_STATE_METRICS_H_
#define VIPU_SERVER_METRICS_STATE_METRICS_H_

#include "server/control/readiness.h"
#include "server/fleet/agent_registry.h"
#include "server/metrics/metrics.h"
#include "storage/store.h"

namespace vipu::server {

// Everything passed must outlive `metrics`' last Render (and the store its
// last commit). Installs the store's commit observer.
void RegisterStateMetrics(Metrics* metrics, storage::Store* store, const AgentRegistry* registry,
                          const Readiness* readiness);

}  // namespace vipu::server

#endif  // VIPU_SERVER_METRICS_STATE_METRICS_H_
