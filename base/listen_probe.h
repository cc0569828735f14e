// Whether an address a listener is about to bind with SO_REUSEPORT is held
// by any socket already. A listener that lets its own process bind its
// address twice (a member's leader listeners starting beside its standby
// ones) would otherwise share it silently with another process of the same
// user, and the kernel would split the clients between the two.
//
// A free function without state; safe from any thread.
#ifndef VIPU_BASE_LISTEN_PROBE_H_
#define VIPU_BASE_LISTEN_PROBE_H_

#include <string>

#include "absl/status/status.h"

namespace vipu {

// Binds every address `address` (HOST:PORT, [V6]:PORT; an empty or wildcard
// host is every interface, IPv6 and IPv4 alike, as gRPC binds it) resolves
// to, without SO_REUSEPORT and with SO_REUSEADDR, then lets go. UNAVAILABLE
// "cannot listen on ADDRESS: the address is in use[ by pid N (name)]" when
// a socket holds one of them; OK when none does, for port 0, and when the
// address does not resolve (the listener's own bind then says why). A probe
// only: another process may bind right after it.
absl::Status ProbeListenAddress(const std::string& address);

}  // namespace vipu

#endif  // VIPU_BASE_LISTEN_PROBE_H_
