// What a leader that stops on purpose hands to the member that leads next:
// the machines it knew were Up and where they listen, so that the successor
// serves at once instead of waiting for every agent to find it and register
// (the reconcile window of a cold start). The record is a few lines of text
// in etcd, written in the same fenced transaction that gives up the
// leadership (server/ha/member.cc).
#ifndef VIPU_SERVER_DAEMON_HANDOVER_H_
#define VIPU_SERVER_DAEMON_HANDOVER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/fleet/agent_registry.h"

namespace vipu::server {

struct Handover {
  absl::Time made;  // when the stopping leader wrote it
  // Id, host, port, IPUoF and RDMA ports and machine type of each; their
  // details come back when they register with the new leader.
  std::vector<LiveAgent> agents;
  // The user address of the member the leadership was moved to on purpose
  // (vipu-admin move leadership); empty after a stop, when whoever campaigned
  // first takes it.
  std::string successor;
};

// "open-vipu-handover 1 <unix ms>[ <successor>]", then "id host port ipuof_port rdma_port
// machine_type" per agent, one a line.
std::string EncodeHandover(const Handover& handover);
// The inverse. INVALID_ARGUMENT naming the line for anything else (another
// format or version, a malformed line, an invalid id or port).
absl::StatusOr<Handover> DecodeHandover(std::string_view text);

}  // namespace vipu::server

#endif  // VIPU_SERVER_DAEMON_HANDOVER_H_
