// Why a partition cannot work right now: the faults of its machines, IPUs
// and owned links, as the agents report them.
#ifndef VIPU_SERVER_CONTROL_PARTITION_PROBLEMS_H_
#define VIPU_SERVER_CONTROL_PARTITION_PROBLEMS_H_

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "fabric/types.h"
#include "server/fleet/agent_registry.h"
#include "server/fleet/cluster_links.h"

namespace vipu::server {

// Why a partition cannot work right now, one message per fault naming the
// machine and the IPU or link: "agent ag3: down (no heartbeat for over 3.0 s)"
// (the timeout, so the words stay the same while it is Down),
// "agent ag3: IPU 2 error (injected fault)", "agent ag3: IPU-Link
// ag3.ipu1-ag4.ipu3 down". Empty when healthy. Only the partition's own
// IPUs and owned links count.
std::vector<std::string> PartitionProblems(const fabric::Partition& partition,
                                           const ClusterLinks& links, const AgentRegistry& registry,
                                           absl::Time now);

}  // namespace vipu::server

#endif  // VIPU_SERVER_CONTROL_PARTITION_PROBLEMS_H_
