// Ports of the machines `vipu-server --simulate` starts. A machine keeps its
// port across restarts of the server, because the IPUoF configs `vipu create
// partition` wrote point at it; so a new machine gets a port above the
// kernel's ephemeral range (ip_local_port_range), which neither connect()
// nor a bind to port 0 hands out and hence no other process takes while the
// server is down. Each machine has two ports, its server port and the RDMA
// port its IPUoF configs name, and no port of the pod is another's.
#ifndef VIPU_SERVER_SIM_SIMULATED_PORTS_H_
#define VIPU_SERVER_SIM_SIMULATED_PORTS_H_

#include <cstdint>
#include <functional>
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

// The two ports of one simulated machine. 0: any free port, which the
// agent's bind picks.
struct MachinePorts {
  uint32_t server = 0;  // gRPC, the IPUoF server port
  uint32_t rdma = 0;    // the RDMA port of its IPUoF configs
  bool operator==(const MachinePorts& o) const { return server == o.server && rdma == o.rdma; }
};

// The ports of each of `ids`. The server port is the remembered one, else a
// free one in the stable range, probing from a random place so that servers
// started at the same time rarely try the same ports. The RDMA port is the
// server port + 1 where that port is free, in range and no other port of the
// plan (so it is the same again after a restart), else another free one in
// the stable range. Every non-zero port of the plan is distinct; 0 (logged)
// when the stable range has none left. `is_free` probes a port; tests give
// their own.
std::map<std::string, MachinePorts> AssignPorts(
    const std::vector<std::string>& ids, const std::map<std::string, uint32_t>& remembered,
    const std::function<bool(uint32_t)>& is_free = LoopbackPortFree);

// OK once the remembered port of every one of `ids` is free, waiting up to
// `wait` for the agents of a killed server to let go of them. Otherwise
// FAILED_PRECONDITION naming the agent and the port: moving the machine
// would leave the IPUoF configs that point at it dead.
absl::Status AwaitRememberedPorts(const std::vector<std::string>& ids,
                                  const std::map<std::string, uint32_t>& remembered,
                                  absl::Duration wait);

}  // namespace vipu::server

#endif  // VIPU_SERVER_SIM_SIMULATED_PORTS_H_
