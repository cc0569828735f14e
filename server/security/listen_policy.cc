// CheckListenPolicy: refuses user or admin APIs beyond loopback without --secure or --insecure.
#include "server/security/listen_policy.h"

#include <arpa/inet.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace vipu::server {

bool IsLoopbackAddress(const std::string& address) {
  if (absl::StartsWith(address, "unix:") || absl::StartsWith(address, "unix-abstract:")) {
    return true;
  }
  std::string host = address;
  if (!host.empty() && host.front() == '[') {
    size_t close = host.find(']');
    if (close == std::string::npos) return false;
    host = host.substr(1, close - 1);
  } else if (size_t colon = host.rfind(':'); colon != std::string::npos) {
    // A bare IPv6 literal without port has several colons; treat it whole.
    if (host.find(':') == colon) host = host.substr(0, colon);
  }
  if (host == "localhost") return true;
  in_addr v4;
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6;
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6);
  return false;
}

absl::Status CheckListenPolicy(const std::string& flag, const std::string& address, bool secure,
                               bool insecure) {
  if (secure || insecure || IsLoopbackAddress(address)) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      flag, " ", address,
      ": refusing to serve the API beyond loopback without --secure (anyone who reaches the "
      "port could change every partition); start with --secure (mutual TLS and users, see "
      "docs/security.md) or pass --insecure to accept that"));
}

}  // namespace vipu::server
