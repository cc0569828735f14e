// The "host:port" text of an address, as gRPC targets and listeners take it
// and as messages show it; an IPv6 host is bracketed ("[::1]:7000").
//
// A free function without state; safe from any thread.
#ifndef VIPU_BASE_HOST_PORT_H_
#define VIPU_BASE_HOST_PORT_H_

#include <cstdint>
#include <string>

namespace vipu {

// "host:port", or "[host]:port" for an IPv6 host (one with a colon) not
// already bracketed.
std::string HostPort(const std::string& host, uint32_t port);

}  // namespace vipu

#endif  // VIPU_BASE_HOST_PORT_H_
