// New ports for the machines of a simulated pod. A machine that no IPUoF
// config names yet takes a port above the kernel's ephemeral range, so that
// it gets the same port again after a restart; the port is chosen by the
// bind that takes it, never by a probe that another process could overtake.
// Servers and agents started at the same moment therefore cannot be handed
// the same port: the one whose bind fails moves on to the next candidate.
#ifndef VIPU_AGENTS_STABLE_PORT_PICKER_H_
#define VIPU_AGENTS_STABLE_PORT_PICKER_H_

#include <cstdint>
#include <functional>
#include <set>
#include <utility>

namespace vipu::agents {

// Walks a port range from a starting place, wrapping once, skipping ports
// that are reserved for others or already handed out by this picker. Not
// thread-safe: one agent process uses one picker on its start-up thread.
class StablePortPicker {
 public:
  // `range`: [first, last] (empty when first > last); `start`: where the
  // first walk begins, an offset into the range (taken modulo its size);
  // `reserved`: ports that belong to other machines (remembered ports of
  // the pod, fixed ports of this process) and are never tried.
  StablePortPicker(std::pair<uint32_t, uint32_t> range, uint32_t start,
                   std::set<uint32_t> reserved);

  // The first port of the walk, not yet reserved or handed out, for which
  // `take(port)` returns true (it binds the port, and keeps it on success);
  // with `pair`, only ports whose successor is in range and not reserved
  // either. The port is then reserved. 0 when a whole turn of the range
  // found none. Later walks continue after the last port tried.
  uint32_t Take(const std::function<bool(uint32_t)>& take, bool pair = false);

  // Marks `port` as belonging to this process from now on (a port it bound
  // by other means, such as the RDMA port that follows a server port).
  void Reserve(uint32_t port) { reserved_.insert(port); }
  bool Reserved(uint32_t port) const { return reserved_.count(port) != 0; }

 private:
  uint32_t first_;
  uint32_t span_;  // 0: empty range
  uint32_t next_;  // offset of the next port to try
  std::set<uint32_t> reserved_;
};

}  // namespace vipu::agents

#endif  // VIPU_AGENTS_STABLE_PORT_PICKER_H_
