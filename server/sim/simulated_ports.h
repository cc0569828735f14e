// Ports of the machines `vipu-server --simulate` starts. A machine keeps its
// port across restarts of the server, because the IPUoF configs `vipu create
// partition` wrote point at it. A new machine's port is chosen by its agent,
// which binds a free pair of ports above the kernel's ephemeral range
// (agents/stable_port_picker.h: --stable-ports): neither connect() nor a
// bind to port 0 hands those out, so no other process takes them while the
// server is down, and because the bind itself chooses, servers started at
// the same moment cannot both be handed one. Each machine has two ports, its
// server port and the RDMA port its IPUoF configs name, and no port of the
// pod is another's.
#ifndef VIPU_SERVER_SIM_SIMULATED_PORTS_H_
#define VIPU_SERVER_SIM_SIMULATED_PORTS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "base/loopback_ports.h"

namespace vipu::server {

// The two ports of one simulated machine. 0: the machine's agent takes one
// above the ephemeral range by binding it (vipu-agent --stable-ports).
struct MachinePorts {
  uint32_t server = 0;  // gRPC, the IPUoF server port
  uint32_t rdma = 0;    // the RDMA port of its IPUoF configs
  bool operator==(const MachinePorts& o) const { return server == o.server && rdma == o.rdma; }
};

// The ports each of `ids` is started with. A remembered server port is
// kept, with the RDMA port next to it where that port is free (`is_free`)
// and no other port of the plan, so that it is the same again after a
// restart. Everything else is 0: the machine's agent takes it above the
// ephemeral range by binding it, and reports it when it registers. Every
// non-zero port of the plan is distinct. `is_free` probes a port; tests
// give their own.
std::map<std::string, MachinePorts> AssignPorts(
    const std::vector<std::string>& ids, const std::map<std::string, uint32_t>& remembered,
    const std::function<bool(uint32_t)>& is_free = LoopbackPortFree);

// OK once the remembered port of every one of `ids` is free, waiting up to
// `wait` for the agents of a killed server to let go of them. Otherwise
// FAILED_PRECONDITION naming the agent, the port and, where the system
// says, the process holding it: moving the machine would leave the IPUoF
// configs that point at it dead.
absl::Status AwaitRememberedPorts(const std::vector<std::string>& ids,
                                  const std::map<std::string, uint32_t>& remembered,
                                  absl::Duration wait);

}  // namespace vipu::server

#endif  // VIPU_SERVER_SIM_SIMULATED_PORTS_H_
