// Ports of the simulated machines: remembered ones kept, the rest left to their agents.
#include "server/sim/simulated_ports.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace vipu::server {

std::map<std::string, MachinePorts> AssignPorts(const std::vector<std::string>& ids,
                                                const std::map<std::string, uint32_t>& remembered,
                                                const std::function<bool(uint32_t)>& is_free) {
  std::map<std::string, MachinePorts> ports;
  std::set<uint32_t> taken;
  // Remembered server ports first: they are fixed, and every RDMA port
  // must keep clear of them.
  for (const std::string& id : ids) {
    ports[id] = {};
    auto it = remembered.find(id);
    if (it != remembered.end() && it->second != 0) {
      ports[id].server = it->second;
      taken.insert(it->second);
    }
  }
  // Then their RDMA ports where they were: server + 1. A machine whose
  // neighbour is gone gets one from its agent.
  for (const std::string& id : ids) {
    MachinePorts& p = ports[id];
    const uint32_t next = p.server + 1;
    if (p.server != 0 && next <= 65535 && taken.count(next) == 0 && is_free(next)) {
      p.rdma = next;
      taken.insert(next);
    }
  }
  return ports;
}

absl::Status AwaitRememberedPorts(const std::vector<std::string>& ids,
                                  const std::map<std::string, uint32_t>& remembered,
                                  absl::Duration wait) {
  const absl::Time deadline = absl::Now() + wait;
  for (const std::string& id : ids) {
    auto it = remembered.find(id);
    if (it == remembered.end() || it->second == 0) continue;
    while (!LoopbackPortFree(it->second)) {
      if (absl::Now() > deadline) {
        const std::string holder = PortHolder(it->second);
        return absl::FailedPreconditionError(absl::StrCat(
            "simulate: agent ", id, " served on 127.0.0.1:", it->second,
            " before and must again (the IPUoF configs of its partitions point there), but "
            "another process holds that port",
            holder.empty() ? "" : absl::StrCat(" (", holder, ")"),
            "; stop that process, or use another --db"));
      }
      absl::SleepFor(absl::Milliseconds(20));  // no event tells when another process lets go
    }
  }
  return absl::OkStatus();
}

}  // namespace vipu::server
