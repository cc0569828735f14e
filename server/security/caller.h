// Who is making a call, as established by the AccessControl gate, and what
// that caller may see. Services pass it to the controller, which applies the
// partition rules inside its transactions.
#ifndef VIPU_SERVER_SECURITY_CALLER_H_
#define VIPU_SERVER_SECURITY_CALLER_H_

#include <string>
#include <vector>

#include "fabric/types.h"

namespace vipu::server {

struct Caller {
  // The authenticated user id; "" when the server runs without --secure.
  std::string user_id;
  bool authenticated = false;
  bool is_admin = false;
  // Allocations granted to the user; empty: every allocation.
  std::vector<std::string> allocations;
  // Transport peer ("ipv4:10.0.0.5:40112"), for logs.
  std::string peer;

  // The server itself (recovery) and every caller of an insecure server:
  // without --secure "all users have access to all allocations" (docs/security.md).
  static const Caller& System();

  // Admins and unauthenticated callers of an insecure server see everything.
  bool Unrestricted() const { return !authenticated || is_admin; }
  bool MayUseAllocation(const std::string& allocation_id) const;
  // Own partitions, and shared ones, in a granted allocation.
  bool MaySee(const fabric::Partition& partition, bool shared) const;
  // "alice", or "anonymous (ipv4:127.0.0.1:5000)" for logs and messages.
  std::string Name() const;
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_SECURITY_CALLER_H_
