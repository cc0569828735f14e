// Ports of the simulated machines: remembered, picked above the ephemeral range, probed.
#include "server/sim/simulated_ports.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "spdlog/spdlog.h"

namespace vipu::server {

bool LoopbackPortFree(uint32_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool free =
      bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 && listen(fd, 1) == 0;
  close(fd);
  return free;
}

std::pair<uint32_t, uint32_t> StablePortRange() {
  uint32_t low = 32768, high = 60999;
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  range >> low >> high;
  return {high + 1, 65535};
}

std::map<std::string, MachinePorts> AssignPorts(const std::vector<std::string>& ids,
                                                const std::map<std::string, uint32_t>& remembered,
                                                const std::function<bool(uint32_t)>& is_free) {
  std::map<std::string, MachinePorts> ports;
  std::set<uint32_t> taken;
  auto usable = [&](uint32_t port) {
    return port != 0 && port <= 65535 && taken.count(port) == 0 && is_free(port);
  };
  // Remembered server ports first: they are fixed, and every other port
  // must keep clear of them.
  for (const std::string& id : ids) {
    auto it = remembered.find(id);
    if (it != remembered.end() && it->second != 0) {
      ports[id].server = it->second;
      taken.insert(it->second);
    }
  }
  // Then their RDMA ports where they were: server + 1.
  for (const std::string& id : ids) {
    MachinePorts& p = ports[id];
    if (p.server != 0 && usable(p.server + 1)) {
      p.rdma = p.server + 1;
      taken.insert(p.rdma);
    }
  }
  // Plain names, not a structured binding: the lambda below captures them.
  const auto range = StablePortRange();
  const uint32_t first = range.first;
  const uint32_t last = range.second;
  const uint32_t span = first <= last ? last - first + 1 : 0;
  uint32_t next = span == 0 ? 0 : std::random_device()() % span;
  // The next free port of the stable range from where the last search
  // stopped; with `pair`, one whose successor is free too. 0 when a whole
  // turn finds none.
  auto probe = [&](bool pair) -> uint32_t {
    for (uint32_t probed = 0; probed < span; ++probed) {
      const uint32_t candidate = first + next;
      next = (next + 1) % span;
      if (!usable(candidate)) continue;
      if (pair && (candidate == last || !usable(candidate + 1))) continue;
      return candidate;
    }
    return 0;
  };
  // New machines: two neighbouring ports each, so the RDMA port is found
  // again at the next start.
  for (const std::string& id : ids) {
    MachinePorts& p = ports[id];
    if (p.server != 0) continue;
    if (const uint32_t port = probe(/*pair=*/true); port != 0) {
      p = {port, port + 1};
      taken.insert({p.server, p.rdma});
      continue;
    }
    p.server = probe(/*pair=*/false);
    if (p.server == 0) {
      spdlog::warn(
          "simulate: no free port above the ephemeral range for agent {}; it gets any "
          "free port and may move when the server restarts",
          id);
    }
    taken.insert(p.server);
  }
  // Any RDMA port still missing: one of its own.
  for (const std::string& id : ids) {
    MachinePorts& p = ports[id];
    if (p.rdma != 0) continue;
    p.rdma = probe(/*pair=*/false);
    if (p.rdma == 0) {
      spdlog::warn(
          "simulate: no free port above the ephemeral range for the RDMA port of agent {}; "
          "it gets any free port",
          id);
    }
    taken.insert(p.rdma);
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
        return absl::FailedPreconditionError(absl::StrCat(
            "simulate: agent ", id, " served on 127.0.0.1:", it->second,
            " before and must again (the IPUoF configs of its partitions point there), but "
            "another process holds that port; stop that process, or use another --db"));
      }
      absl::SleepFor(absl::Milliseconds(20));  // no event tells when another process lets go
    }
  }
  return absl::OkStatus();
}

}  // namespace vipu::server
