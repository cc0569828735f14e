// Loopback ports as the simulated pod uses them: whether one is free, the
// range above the kernel's ephemeral range where a machine's port can stay
// the same across restarts, and which process holds a port.
#ifndef VIPU_BASE_LOOPBACK_PORTS_H_
#define VIPU_BASE_LOOPBACK_PORTS_H_

#include <cstdint>
#include <string>
#include <utility>

namespace vipu {

// Whether a gRPC server could listen on 127.0.0.1:port now. Probed with
// SO_REUSEADDR, as gRPC binds, so that connections of an earlier run in
// TIME_WAIT do not count as taken; a listening socket does. A probe only:
// another process may take the port right after it.
bool LoopbackPortFree(uint32_t port);

// [first, last] above the kernel's ephemeral range (ip_local_port_range),
// which neither connect() nor a bind to port 0 hands out; empty
// (first > last) when that range reaches 65535.
std::pair<uint32_t, uint32_t> StablePortRange();

// The process listening on TCP `port` (IPv4 or IPv6), as "pid N (name)",
// read from /proc; empty when the system does not say (no such listener, or
// a process this one may not look into).
std::string PortHolder(uint32_t port);

// What to add to "cannot listen on ADDRESS" (host:port, [v6]:port): ": the
// address is in use by pid N (name)" when a process listens on that port,
// else "" (the address is not this host's, or the system does not say).
std::string ListenFailureReason(const std::string& address);

}  // namespace vipu

#endif  // VIPU_BASE_LOOPBACK_PORTS_H_
