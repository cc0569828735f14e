// Agents, clusters and waits the tests of the fleet and control rooms share:
// a live agent, a switched cluster of so many machines, and how long a test
// waits for the topology pusher.
#ifndef VIPU_TESTS_UNIT_SUPPORT_FLEET_TEST_UTIL_H_
#define VIPU_TESTS_UNIT_SUPPORT_FLEET_TEST_UTIL_H_

#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "fabric/types.h"
#include "server/fleet/agent_registry.h"

namespace vipu::test {

// How long a test waits for the topology pusher's work before it fails.
inline constexpr absl::Duration kPushWait = absl::Seconds(10);

// Agent `id` registered at 127.0.0.1:`port`.
inline server::LiveAgent MakeLiveAgent(const std::string& id, uint32_t port = 7000) {
  server::LiveAgent a;
  a.id = id;
  a.host = "127.0.0.1";
  a.port = port;
  return a;
}

// Cluster `id` of machines `prefix`0..n-1 in `num_ilds` torus ILDs, switched.
inline fabric::Cluster MakeCluster(const std::string& id, const std::string& prefix, int n,
                                   uint32_t num_ilds = 1) {
  fabric::Cluster c;
  c.id = id;
  for (int i = 0; i < n; ++i) c.agent_ids.push_back(absl::StrCat(prefix, i));
  c.num_ilds = num_ilds;
  c.topology = fabric::IldTopology::kTorus;
  c.cluster_topology = fabric::ClusterTopology::kSwitched;
  return c;
}

}  // namespace vipu::test

#endif  // VIPU_TESTS_UNIT_SUPPORT_FLEET_TEST_UTIL_H_
