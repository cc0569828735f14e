// `vipu-admin test cluster`: V-IPU's installation tests (docs/cli.md), run
// against the cluster's agents. Each test's count follows the cluster's size
// (fabric::LinkCounts): Version = agents, Cabling = IPU-Link cables between
// machines, Sync-Link = sync cables, Link-Training = IPU-Links in the ILDs,
// Traffic = one per ILD, GW-Link = GW-Link pairs (0: skipped).
#ifndef VIPU_SERVER_FLEET_CLUSTER_TESTER_H_
#define VIPU_SERVER_FLEET_CLUSTER_TESTER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/fleet/agent_client.h"
#include "server/fleet/agent_registry.h"
#include "server/fleet/cluster_links_cache.h"
#include "storage/store.h"

namespace vipu::server {

struct TestOutcome {
  std::string test_type;  // Version, Cabling, Sync-Link, Link-Training, Traffic, GW-Link
  double duration_s = 0;
  uint32_t passed = 0;
  uint32_t total = 0;
  std::string summary;
  std::vector<std::string> failures;  // each names the agent, cable or link
};

// Borrows the store, links cache, registry and agent client. Thread-safe: it
// keeps no state between runs, so gRPC threads may run tests at once.
class ClusterTester {
 public:
  // Everything passed in is the caller's and must outlive this.
  ClusterTester(storage::Store* store, ClusterLinksCache* cluster_links, AgentRegistry* registry,
                AgentClient* agents)
      : store_(store), cluster_links_(cluster_links), registry_(registry), agents_(agents) {}

  // INVALID_ARGUMENT for a bad id, NOT_FOUND for an unknown cluster,
  // FAILED_PRECONDITION while partitions are on the cluster unless `force`
  // (the tests retrain links under running jobs). Failed tests are results,
  // not errors.
  absl::StatusOr<std::vector<TestOutcome>> Run(const std::string& cluster_id, bool force);

 private:
  storage::Store* store_;
  ClusterLinksCache* cluster_links_;
  AgentRegistry* registry_;
  AgentClient* agents_;
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_FLEET_CLUSTER_TESTER_H_
