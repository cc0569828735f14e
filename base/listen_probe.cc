// ProbeListenAddress: a bind without SO_REUSEPORT to every address a listener will take.
#include "base/listen_probe.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "base/loopback_ports.h"

namespace vipu {

absl::Status ProbeListenAddress(const std::string& address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return absl::OkStatus();
  std::string host = address.substr(0, colon);
  const std::string port = address.substr(colon + 1);
  if (port == "0") return absl::OkStatus();
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  const bool wildcard = host.empty() || host == "::" || host == "0.0.0.0";
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (getaddrinfo(wildcard ? nullptr : host.c_str(), port.c_str(), &hints, &found) != 0) {
    return absl::OkStatus();
  }
  bool in_use = false;
  for (addrinfo* ai = found; ai != nullptr && !in_use; ai = ai->ai_next) {
    const int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    const int one = 1, zero = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    // gRPC takes a wildcard address as one dual-stack socket.
    if (ai->ai_family == AF_INET6 && wildcard) {
      setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    }
    in_use = bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 && errno == EADDRINUSE;
    close(fd);
  }
  freeaddrinfo(found);
  if (!in_use) return absl::OkStatus();
  std::string reason = ListenFailureReason(address);
  if (reason.empty()) reason = ": the address is in use";
  return absl::UnavailableError(absl::StrCat("cannot listen on ", address, reason));
}

}  // namespace vipu
