// The members of a highly available vipu-server (or of any service a client
// may reach at several addresses), as every client is given them: one
// comma-separated list, each entry `HOST`, `HOST:PORT`, `[V6]` or
// `[V6]:PORT`. A bare IPv6 literal (`::1`) is accepted too, without a port,
// since a colon inside it cannot be told from a port separator. The one
// parser for --api-host, VIPU_CLI_API_HOST, api-host in vipu-cli.hcl,
// --vipu-server-host, IPUOF_VIPU_API_HOST, the Slurm plugin's api-host= and
// vipu-agent's --server.
//
// gRPC-free and abseil-only, so the Slurm plugin (built without sanitizers
// and without gRPC) compiles it into itself. Stateless; safe from any thread.
#ifndef VIPU_WIRE_SERVER_MEMBERS_H_
#define VIPU_WIRE_SERVER_MEMBERS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace vipu::wire {

struct ServerMember {
  std::string host;  // a name, an IPv4 literal, or an IPv6 literal without brackets
  uint32_t port = 0;
  bool port_given = false;  // false: `port` is the default the parser was given

  // host:port as dialled and as printed (`localhost:8090`, `[::1]:8090`).
  std::string Target() const;
  // The entry as the user would write it: the host (bracketed when IPv6),
  // with ":port" only when the entry had one.
  std::string Entry() const;
  bool operator==(const ServerMember& other) const {
    return host == other.host && port == other.port;
  }
};

// Parses `list`. `default_port` applies to entries without a port; without
// it, every entry must carry one. INVALID_ARGUMENT naming the entry (its
// 1-based position and text) and the rule it breaks, e.g.
//   "entry 2 of 'a,,b' is empty"
//   "entry 'h:70000': port must be an integer in 1..65535"
//   "entry '[::1:8090': unbalanced '['"
//   "entry 'a b': must not contain spaces"
//   "entry 'h': needs a port (HOST:PORT)"
//   "entry 'h:1' is listed twice"
// Callers prefix the source ("--api-host: ").
absl::StatusOr<std::vector<ServerMember>> ParseServerMembers(std::string_view list,
                                                             std::optional<uint32_t> default_port);

// One member, `text` with its port (`vipu-admin move leadership --to`):
// ParseServerMembers' refusals, and INVALID_ARGUMENT "name one member,
// HOST:PORT, got 'a:1,b:2'" for a list. Callers prefix the source.
absl::StatusOr<ServerMember> ParseServerMember(std::string_view text);

// The members' targets joined with ',' (`a:8090,b:8090`).
std::string JoinTargets(const std::vector<ServerMember>& members);

}  // namespace vipu::wire

#endif  // VIPU_WIRE_SERVER_MEMBERS_H_
