// ConsoleControlPlane: a member's role as the pod console shows it.
#include "server/daemon/console_control_plane.h"

#include <optional>

namespace vipu::server {

ControlPlane ConsoleControlPlane(const MemberRole* role) {
  ControlPlane c;
  if (role == nullptr) return c;
  c.ha = true;
  c.role = role->role_name();
  std::optional<MemberAddresses> leader = role->current_leader();
  if (leader) c.leader = leader->user;
  c.member = role->self().user;
  return c;
}

}  // namespace vipu::server
