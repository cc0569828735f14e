// HeldCheck: the machines whose reports lack a partition the state places on them.
#include "server/control/held_check.h"

#include <optional>
#include <set>

namespace vipu::server {

std::vector<HeldCheck::Missing> HeldCheck::Check(const std::vector<fabric::Partition>& partitions,
                                                 const AgentRegistry& registry, absl::Time now) {
  std::vector<Missing> missing;
  std::map<std::pair<std::string, std::string>, Suspect> seen;
  for (const fabric::Partition& p : partitions) {
    if (p.ready_state != fabric::ReadyState::kActive ||
        p.operation_state == fabric::OperationState::kRemoving) {
      continue;
    }
    std::set<std::string> machines;
    for (const fabric::PartitionIpu& ipu : p.ipus) {
      const std::string& agent = ipu.ipu.agent_id;
      if (!machines.insert(agent).second) continue;
      std::optional<HeldReport> report = registry.HeldBy(agent, now);
      if (!report) continue;
      auto held = report->held->find(p.id);
      if (held != report->held->end() && held->second >= p.generation) continue;
      std::pair<std::string, std::string> key(p.id, agent);
      Suspect now_seen{p.generation, report->epoch, report->sequence};
      auto before = suspects_.find(key);
      if (before != suspects_.end() && before->second.generation == p.generation &&
          before->second.epoch == report->epoch) {
        if (report->sequence > before->second.sequence) {
          missing.push_back({p.id, p.generation, agent});
          // The report after the push's may still predate it.
          now_seen.sequence = report->sequence + 1;
        } else {
          now_seen = before->second;
        }
      }
      seen.emplace(std::move(key), now_seen);
    }
  }
  suspects_ = std::move(seen);
  return missing;
}

}  // namespace vipu::server
