// The two gauges every member of a highly available control plane exports,
// leader or standby (docs/ha.md).
#ifndef VIPU_SERVER_HA_ROLE_METRICS_H_
#define VIPU_SERVER_HA_ROLE_METRICS_H_

#include "server/ha/member_role.h"
#include "server/metrics/metrics.h"

namespace vipu::server {

// Adds vipu_server_role{role="leader"|"standby"} and
// vipu_leader_info{leader="H:P"|"none"} to `metrics`, read from `role` at
// each scrape. Borrows `role`, which must outlive `metrics`.
void AddRoleMetrics(Metrics& metrics, const MemberRole* role);

}  // namespace vipu::server

#endif  // VIPU_SERVER_HA_ROLE_METRICS_H_
