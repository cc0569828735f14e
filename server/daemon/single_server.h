// vipu-server with its state in one SQLite file: the single server, run
// until it is told to stop.
#ifndef VIPU_SERVER_DAEMON_SINGLE_SERVER_H_
#define VIPU_SERVER_DAEMON_SINGLE_SERVER_H_

#include <optional>

#include "fabric/pods.h"
#include "server/daemon/server_options.h"

namespace vipu::server {

// Starts a VipuServer on `options` (with the simulated `pod` when given) and
// runs it in the run loop until SIGTERM or SIGINT. Returns the process's
// exit code: 0 after a clean stop, 1 when the server could not start (the
// reason is logged and printed on stderr). Call BlockDaemonSignals() first.
int RunSingleServer(const ServerOptions& options, const std::optional<fabric::PodSpec>& pod);

}  // namespace vipu::server

#endif  // VIPU_SERVER_DAEMON_SINGLE_SERVER_H_
