// PartitionProblems: the faults that count against a partition, one message each.
#include "server/control/partition_problems.h"

#include <map>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "fabric/link_topology.h"

namespace vipu::server {

std::vector<std::string> PartitionProblems(const fabric::Partition& partition,
                                           const ClusterLinks& links, const AgentRegistry& registry,
                                           absl::Time now) {
  std::vector<std::string> problems;
  std::map<std::string, AgentHealth> health;
  std::set<std::string> machines;
  for (const fabric::PartitionIpu& ipu : partition.ipus) machines.insert(ipu.ipu.agent_id);
  for (const std::string& agent : machines) {
    // Liveness and health only: the agent's reports are not copied.
    std::optional<AgentStatus> live = registry.StatusOf(agent);
    if (!live) {
      problems.push_back(NotConnectedText(agent));
      continue;
    }
    if (now - live->last_heartbeat >= registry.timeout()) {  // as IsUp
      // The same words while the agent stays Down: a fault recorded once is
      // the same fault on the next pass, which is what lets a relocatable
      // partition move instead of being marked again on every pass.
      problems.push_back(absl::StrFormat("agent %s: down (no heartbeat for over %.1f s)", agent,
                                         absl::ToDoubleSeconds(registry.timeout())));
      continue;
    }
    if (!live->health.healthy()) health[agent] = std::move(live->health);
  }
  if (health.empty()) return problems;  // no fault reported: no link or IPU to look at
  for (const fabric::PartitionIpu& ipu : partition.ipus) {
    auto h = health.find(ipu.ipu.agent_id);
    if (h == health.end()) continue;
    auto e = h->second.ipu_errors.find(ipu.ipu.ipu);
    if (e != h->second.ipu_errors.end()) {
      problems.push_back(absl::StrCat("agent ", ipu.ipu.agent_id, ": IPU ", ipu.ipu.ipu, " error (",
                                      e->second, ")"));
    }
  }
  for (const fabric::Link* link : fabric::PartitionLinks(links.topology, partition)) {
    for (const fabric::LinkEnd* end : {&link->a, &link->b}) {
      auto h = health.find(end->agent_id);
      if (h == health.end() || !h->second.links_down.count(end->port)) continue;
      problems.push_back(absl::StrCat("agent ", end->agent_id, ": ",
                                      fabric::LinkKindName(link->kind), " ", link->name, " down"));
      break;  // one message per link, from the first end that reports it
    }
  }
  return problems;
}

}  // namespace vipu::server
