// vipu-admin commands on users of the secure mode (vipuadmin.UserAdminService).
// Same contract as admin_commands.h.
#ifndef VIPU_CLI_COMMON_USER_COMMANDS_H_
#define VIPU_CLI_COMMON_USER_COMMANDS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "cli/common/client_config.h"
#include "cli/common/command_io.h"
#include "cli/common/connection.h"
#include "vipu_admin.pb.h"

namespace vipu::cli {

// The per-user client configuration `create user` writes: the connection of
// `base` (host, port, TLS files as absolute paths) with the new user's id
// and key. Pure, for tests.
std::string RenderUserHcl(const ClientConfig& base, const std::string& user_id,
                          const std::string& access_key);
std::string RenderUsersTable(const vipuadmin::ListUsersReply& reply);

// Prints (docs/security.md)
//   create user (ID): success. Access key is 'KEY'.
//   vipu configuration file for the user 'ID' written: ID.vipu-cli.hcl
//   Use 'vipu --config ID.vipu-cli.hcl' to switch to the user context.
// and writes `output_dir`/ID.vipu-cli.hcl (mode 0600: it holds the key).
absl::Status CreateUser(Connection& conn, const CommandIo& io, const std::string& id,
                        const std::vector<std::string>& allocations, bool admin,
                        const std::string& output_dir);
absl::Status ListUsers(Connection& conn, const CommandIo& io);
absl::Status RemoveUser(Connection& conn, const CommandIo& io, const std::string& id);

// What `update user` asks for; unset members stay as they are.
struct UserChanges {
  std::optional<std::vector<std::string>> allocations;  // empty list: every allocation
  std::optional<bool> admin;
  bool rotate_key = false;
};
// Prints "update user (ID): success." and the user's admin flag and
// allocations as they now are; with a rotation also
//   New access key is 'KEY' (shown only once; the old key no longer works).
// With --showjson, the reply as JSON instead. The server's error otherwise.
absl::Status UpdateUser(Connection& conn, const CommandIo& io, const std::string& id,
                        const UserChanges& changes);

}  // namespace vipu::cli

#endif  // VIPU_CLI_COMMON_USER_COMMANDS_H_
