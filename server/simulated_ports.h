// Ports of the machines `vipu-server --simulate` starts. A machine keeps its
// port across restarts of the server, because the IPUoF configs `vipu create
// partition` wrote point at it; so a new machine gets a port above the
// kernel's ephemeral range (ip_local_port_range), which neither connect()
// nor a bind to port 0 hands out and hence no other process takes while the
// server is down.
#ifndef VIPU_SERVER_SIMULATED_PORTS_H_
#define VIPU_SERVER_SIMULATED_PORTS_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace vipu::server {

// Whether a gRPC server could listen on 127.0.0.1:port now. Probed with
// SO_REUSEADDR, as gRPC binds, so that connections of an earlier run in
// TIME_WAIT do not count as taken; a listening socket does.
bool LoopbackPortFree(uint32_t port);

// [first, last] above the ephemeral range; empty (first > last) when that
// range reaches 65535.
std::pair<uint32_t, uint32_t> StablePortRange();

// A port for each of `ids`: its remembered one, else a free one in the
// stable range, probing from a random place so that servers started at the
// same time rarely try the same ports; 0 (any free port, which may move at
// the next restart; logged) when the stable range has none left.
std::map<std::string, uint32_t> AssignPorts(const std::vector<std::string>& ids,
                                            const std::map<std::string, uint32_t>& remembered);

// OK once the remembered port of every one of `ids` is free, waiting up to
// `wait` for the agents of a killed server to let go of them. Otherwise
// FAILED_PRECONDITION naming the agent and the port: moving the machine
// would leave the IPUoF configs that point at it dead.
absl::Status AwaitRememberedPorts(const std::vector<std::string>& ids,
                                  const std::map<std::string, uint32_t>& remembered,
                                  absl::Duration wait);

}  // namespace vipu::server

#endif  // VIPU_SERVER_SIMULATED_PORTS_H_
