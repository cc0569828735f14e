// The RPCs that change state, by full gRPC method name: the one list the
// audit log (server/api/audit_interceptor.h) follows. Every method of the user,
// admin and user-admin services is either here or in the list of reads, and
// a unit test holds the two lists to the services' descriptors, so that a
// new RPC cannot be left out of the audit trail unnoticed.
#ifndef VIPU_SERVER_API_AUDITED_METHODS_H_
#define VIPU_SERVER_API_AUDITED_METHODS_H_

#include <string_view>
#include <vector>

namespace vipu::server {

// "/virmgrpc.UserService/CreatePartition", ...: every call that changes
// state or acts on machines (fault injection, cluster tests, backups).
const std::vector<std::string_view>& MutatingMethods();
// The calls of the same services that only read.
const std::vector<std::string_view>& ReadMethods();
// True when `full_method` is in MutatingMethods().
bool IsMutatingMethod(std::string_view full_method);

}  // namespace vipu::server

#endif  // VIPU_SERVER_API_AUDITED_METHODS_H_
