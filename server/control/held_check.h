// What the machines say they hold against what the state says they hold:
// the health monitor's comparison of each heartbeat's list of partitions and
// generations with the PS_ACTIVE partitions placed on that machine.
//
// A machine is asked to take a partition again only when two numbered
// reports of one registration lack it (or name an older generation), the
// second newer than the first. One report alone may have been made before
// the machine was configured and arrived after the partition went ACTIVE;
// a push that crosses such a report is harmless (the same generation is
// accepted again), but the second report keeps it rare. A machine that is
// not Up, not registered, or whose reports carry no list is not compared:
// its liveness and its own registration settle it.
//
// Not thread-safe: the health monitor's thread alone calls Check.
#ifndef VIPU_SERVER_CONTROL_HELD_CHECK_H_
#define VIPU_SERVER_CONTROL_HELD_CHECK_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "fabric/types.h"
#include "server/fleet/agent_registry.h"

namespace vipu::server {

class HeldCheck {
 public:
  // A machine that lacks a partition at its generation.
  struct Missing {
    std::string partition_id;
    uint64_t generation = 0;
    std::string agent_id;
  };

  // One comparison over `partitions` (all of the state's; only those
  // PS_ACTIVE and not being removed are looked at) and what `registry`
  // holds at `now`. Returns the machines to push again, in the order of
  // `partitions` and then of their IPUs. A machine returned is returned
  // again only after two more reports that still lack the partition.
  std::vector<Missing> Check(const std::vector<fabric::Partition>& partitions,
                             const AgentRegistry& registry, absl::Time now);

 private:
  // The first report seen lacking a partition, or the one a push answered.
  struct Suspect {
    uint64_t generation = 0;
    uint64_t epoch = 0;
    uint64_t sequence = 0;  // reports numbered above it count
  };
  // (partition, machine) -> suspect; what a pass does not see again goes.
  std::map<std::pair<std::string, std::string>, Suspect> suspects_;
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_CONTROL_HELD_CHECK_H_
