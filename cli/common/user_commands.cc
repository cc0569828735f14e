// vipu-admin's user commands: create (access key, ID.vipu-cli.hcl at mode 0600), list, update,
// remove.
#include "cli/common/user_commands.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "cli/common/json_output.h"
#include "cli/common/table.h"

namespace vipu::cli {
namespace {

std::string Absolute(const std::string& path) {
  std::error_code ec;
  auto abs = std::filesystem::absolute(path, ec);
  return ec ? path : abs.lexically_normal().string();
}

absl::Status WritePrivateFile(const std::string& path, const std::string& text) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return absl::PermissionDeniedError(absl::StrCat("cannot write ", path));
  fchmod(fd, 0600);
  ssize_t n = write(fd, text.data(), text.size());
  close(fd);
  if (n != static_cast<ssize_t>(text.size())) {
    return absl::InternalError(absl::StrCat("cannot write ", path));
  }
  return absl::OkStatus();
}

}  // namespace

std::string RenderUserHcl(const ClientConfig& base, const std::string& user_id,
                          const std::string& access_key) {
  std::string out = absl::StrCat("# vipu client configuration of the user '", user_id,
                                 "' (holds its access key: keep it private)\n");
  absl::StrAppend(&out, "api-host = \"", base.host, "\"\n");
  absl::StrAppend(&out, "api-port = \"", base.port, "\"\n");
  absl::StrAppend(&out, "api-user-id = \"", user_id, "\"\n");
  absl::StrAppend(&out, "api-access-key = \"", access_key, "\"\n");
  if (base.tls()) absl::StrAppend(&out, "api-tls-ca = \"", Absolute(base.tls_ca), "\"\n");
  if (!base.tls_cert.empty()) {
    absl::StrAppend(&out, "api-tls-cert = \"", Absolute(base.tls_cert), "\"\n");
    absl::StrAppend(&out, "api-tls-key = \"", Absolute(base.tls_key), "\"\n");
  }
  return out;
}

std::string RenderUsersTable(const vipuadmin::ListUsersReply& reply) {
  Table table({{"User ID"}, {"Admin"}, {"Allocations"}});
  for (const auto& u : reply.users()) {
    table.AddRow(
        {u.id(), u.admin() ? "yes" : "no",
         u.allocations().empty() ? std::string("all") : absl::StrJoin(u.allocations(), " ")});
  }
  return table.Render();
}

absl::Status CreateUser(Connection& conn, const CommandIo& io, const std::string& id,
                        const std::vector<std::string>& allocations, bool admin,
                        const std::string& output_dir) {
  vipuadmin::CreateUserRequest request;
  request.set_user_id(id);
  for (const std::string& a : allocations) request.add_allocations(a);
  request.set_admin(admin);
  vipuadmin::CreateUserReply reply;
  RETURN_IF_ERROR(conn.Call(CallKind::kMutating, [&](Stubs& stubs, grpc::ClientContext* ctx) {
    return stubs.user_admin().CreateUser(ctx, request, &reply);
  }));
  const std::string file = absl::StrCat(id, ".vipu-cli.hcl");
  io.out << "create user (" << id << "): success. Access key is '" << reply.access_key() << "'.\n";
  const std::string path = output_dir.empty() ? file : absl::StrCat(output_dir, "/", file);
  if (absl::Status w = WritePrivateFile(path, RenderUserHcl(conn.config(), id, reply.access_key()));
      !w.ok()) {
    return absl::Status(w.code(), absl::StrCat("the user was created, but ", w.message(),
                                               "; note the access key above"));
  }
  io.out << "vipu configuration file for the user '" << id << "' written: " << file << "\n";
  io.out << "Use 'vipu --config " << file << "' to switch to the user context.\n";
  return absl::OkStatus();
}

absl::Status ListUsers(Connection& conn, const CommandIo& io) {
  vipuadmin::ListUsersReply reply;
  RETURN_IF_ERROR(conn.Call(CallKind::kReadOnly, [&](Stubs& stubs, grpc::ClientContext* ctx) {
    return stubs.user_admin().ListUsers(ctx, vipuadmin::ListUsersRequest(), &reply);
  }));
  if (io.json) return WriteJson(io.out, reply);
  io.out << RenderUsersTable(reply);
  return absl::OkStatus();
}

absl::Status RemoveUser(Connection& conn, const CommandIo& io, const std::string& id) {
  vipuadmin::RemoveUserRequest request;
  request.set_user_id(id);
  vipuadmin::RemoveUserReply reply;
  RETURN_IF_ERROR(conn.Call(CallKind::kMutating, [&](Stubs& stubs, grpc::ClientContext* ctx) {
    return stubs.user_admin().RemoveUser(ctx, request, &reply);
  }));
  io.out << "remove user (" << id << "): success.\n";
  return absl::OkStatus();
}

absl::Status UpdateUser(Connection& conn, const CommandIo& io, const std::string& id,
                        const UserChanges& changes) {
  vipuadmin::UpdateUserRequest request;
  request.set_user_id(id);
  if (changes.allocations) {
    request.set_set_allocations(true);
    for (const std::string& a : *changes.allocations) request.add_allocations(a);
  }
  if (changes.admin) request.set_admin(*changes.admin);
  request.set_rotate_key(changes.rotate_key);
  vipuadmin::UpdateUserReply reply;
  RETURN_IF_ERROR(conn.Call(CallKind::kMutating, [&](Stubs& stubs, grpc::ClientContext* ctx) {
    return stubs.user_admin().UpdateUser(ctx, request, &reply);
  }));
  if (io.json) return WriteJson(io.out, reply);
  const vipuadmin::User& u = reply.user();
  io.out << "update user (" << id << "): success. Admin: " << (u.admin() ? "yes" : "no")
         << ", allocations: "
         << (u.allocations().empty() ? std::string("all") : absl::StrJoin(u.allocations(), " "))
         << ".\n";
  if (!reply.access_key().empty()) {
    io.out << "New access key is '" << reply.access_key()
           << "' (shown only once; the old key no longer works).\n";
  }
  return absl::OkStatus();
}

}  // namespace vipu::cli
