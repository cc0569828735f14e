// Refuses to serve the user or admin API beyond loopback without --secure,
// unless the operator said --insecure: an unauthenticated V-IPU lets anyone
// who can reach the port remove every partition (docs/security.md).
#ifndef VIPU_SERVER_SECURITY_LISTEN_POLICY_H_
#define VIPU_SERVER_SECURITY_LISTEN_POLICY_H_

#include <string>

#include "absl/status/status.h"

namespace vipu::server {

// 127.0.0.0/8, ::1, localhost, and unix: sockets. "0.0.0.0", "[::]", other
// addresses and host names are not.
bool IsLoopbackAddress(const std::string& address);

// OK when secure, or `address` is loopback, or `insecure`. Otherwise
// FAILED_PRECONDITION naming `flag` and both ways out.
absl::Status CheckListenPolicy(const std::string& flag, const std::string& address, bool secure,
                               bool insecure);

}  // namespace vipu::server

#endif  // VIPU_SERVER_SECURITY_LISTEN_POLICY_H_
