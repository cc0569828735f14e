// vipu-server as one member of a highly available control plane on etcd
// (--etcd-endpoints; docs/ha.md).
#ifndef VIPU_SERVER_HA_MEMBER_H_
#define VIPU_SERVER_HA_MEMBER_H_

#include "server/daemon/server_options.h"

namespace vipu::server {

// Runs the member until SIGTERM or SIGINT and returns the process's exit
// code. The member serves the whole API at once as a standby (forwarding to
// the leader), campaigns for leadership, and on winning loads the state from
// etcd and serves it as VipuServer. A leader that loses its leadership
// (its lease lapsed, a fenced write was refused, etcd's answer was lost)
// stops acting at once and starts again as a standby by executing itself
// anew with `argv`, so that nothing of the deposed leader's memory survives.
// It runs in the daemon's run loop (server/daemon/run_loop.h): call
// BlockDaemonSignals() before it.
int RunMember(const ServerOptions& options, char** argv);

}  // namespace vipu::server

#endif  // VIPU_SERVER_HA_MEMBER_H_
