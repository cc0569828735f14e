// What the pod console shows of the control plane a server belongs to: a
// member's role and leader, read from its MemberRole. The console cannot see
// the member's types, so the daemon hands it this through ConsoleDeps.
#ifndef VIPU_SERVER_DAEMON_CONSOLE_CONTROL_PLANE_H_
#define VIPU_SERVER_DAEMON_CONSOLE_CONTROL_PLANE_H_

#include "server/console/console_state.h"
#include "server/ha/member_role.h"

namespace vipu::server {

// `role`'s member, role and leader; a single server (ha false) for null.
// Thread-safe as reading `role` is.
ControlPlane ConsoleControlPlane(const MemberRole* role);

}  // namespace vipu::server

#endif  // VIPU_SERVER_DAEMON_CONSOLE_CONTROL_PLANE_H_
