// The role and leader gauges of a member, shared by the leader and the standby.
#include "server/ha/role_metrics.h"

#include <vector>

namespace vipu::server {

void AddRoleMetrics(Metrics& metrics, const MemberRole* role) {
  metrics.AddCollector(
      Metrics::Type::kGauge, "vipu_server_role",
      "1 for the role this member has (leader or standby) in a highly available control plane.",
      [role] {
        return std::vector<MetricSample>{{{{"role", role->role_name()}}, 1.0}};
      });
  metrics.AddCollector(Metrics::Type::kGauge, "vipu_leader_info",
                       "1, labelled with the advertised address of the member that leads.", [role] {
                         return std::vector<MetricSample>{{{{"leader", role->leader_name()}}, 1.0}};
                       });
}

}  // namespace vipu::server
