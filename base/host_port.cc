// HostPort: an address's "host:port" text, IPv6 hosts bracketed.
#include "base/host_port.h"

#include "absl/strings/str_cat.h"

namespace vipu {

std::string HostPort(const std::string& host, uint32_t port) {
  const bool v6 = host.find(':') != std::string::npos && host.front() != '[';
  return v6 ? absl::StrCat("[", host, "]:", port) : absl::StrCat(host, ":", port);
}

}  // namespace vipu
