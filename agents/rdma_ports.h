// The RDMA ports of the machines one vipu-agent serves. A machine's IPUoF
// configs name a server port and an RDMA port; the simulated data plane runs
// over the server port (gRPC), but the RDMA port must still be the
// machine's: this process listens on it for its whole life, so no other
// process (another machine, another pod) can take it.
#ifndef VIPU_AGENTS_RDMA_PORTS_H_
#define VIPU_AGENTS_RDMA_PORTS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agents/stable_port_picker.h"

namespace vipu::agents {

// Owns one listening TCP socket per machine; closing them is destroying the
// object. Nothing is ever accepted on them. The sockets are close-on-exec.
// Immutable once bound, so its accessors are thread-safe.
class RdmaPorts {
 public:
  // Listens on host:port for each of `ports` (0: a free port the kernel
  // picks, or with `picker` one the picker finds), in order. With `picker`,
  // a port that cannot be listened on is replaced by one the picker finds
  // (an RDMA port is only ever chosen, never remembered on its own). The
  // picker is used during the call only. UNAVAILABLE naming the host, the
  // port and the reason when one cannot be listened on; the ones already
  // bound are closed again.
  static absl::StatusOr<std::unique_ptr<RdmaPorts>> Listen(const std::string& host,
                                                           const std::vector<uint32_t>& ports,
                                                           StablePortPicker* picker = nullptr);
  ~RdmaPorts();

  RdmaPorts(const RdmaPorts&) = delete;
  RdmaPorts& operator=(const RdmaPorts&) = delete;

  // The ports as bound, in the order asked for.
  const std::vector<uint32_t>& ports() const { return ports_; }

 private:
  RdmaPorts() = default;

  std::vector<int> fds_;
  std::vector<uint32_t> ports_;
};

}  // namespace vipu::agents

#endif  // VIPU_AGENTS_RDMA_PORTS_H_
